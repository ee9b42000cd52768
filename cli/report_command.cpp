#include "cli/report_command.hpp"

#include <filesystem>
#include <iostream>

#include "core/error.hpp"
#include "report/report.hpp"

namespace schedlab {

ReportCommand::ReportCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "report",
      "Write one self-contained HTML page: identities, diff tables and verdicts, charts, environment");
  command_
      ->add_option(
          "SIDES", comparison_.sides,
          "A [B...]: each a bundle, a directory of bundles, or a label / configuration-hash prefix looked "
          "up in --store; with two or more, the others are compared with A as `schedlab diff` does")
      ->required()
      ->expected(1, -1);
  command_->add_option("-o,--out", out_, "The HTML file to write (replaced only by a complete report)")
      ->required();
  comparison_.add_to(*command_);
}

int ReportCommand::run() const {
  const std::filesystem::path out(out_);
  const auto dir = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw InputError(out_ + ": directory " + dir.string() + " does not exist");
  if (std::filesystem::is_directory(out, ec)) throw InputError(out_ + ": is a directory");
  write_report(out, report_html(report_data(comparison_.load_sides(), comparison_.diff_options())));
  std::cout << "report: " << out_ << "\n";
  return 0;
}

}  // namespace schedlab
