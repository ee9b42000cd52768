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
          "SIDES", sides_,
          "A [B...]: each a bundle, a directory of bundles, or a label / configuration-hash prefix looked "
          "up in --store; with two or more, the others are compared with A as `schedlab diff` does")
      ->required()
      ->expected(1, -1);
  command_->add_option("-o,--out", out_, "The HTML file to write (replaced only by a complete report)")
      ->required();
  command_->add_option("--alpha", alpha_, "Significance level after Benjamini-Hochberg")->default_val(0.05);
  command_->add_option("--min-effect", min_effect_pct_, "Equivalence margin, percent (TOST)")
      ->default_val(2.0);
  command_->add_flag("--force", force_, "Compare across hardware fingerprints or workload versions");
  command_->add_option("--store", store_, "Directory of bundles that labels and hashes are looked up in")
      ->default_val("results");
}

int ReportCommand::run() const {
  const std::filesystem::path out(out_);
  const auto dir = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw InputError(out_ + ": directory " + dir.string() + " does not exist");
  if (std::filesystem::is_directory(out, ec)) throw InputError(out_ + ": is a directory");
  std::vector<Side> sides;
  for (const auto& spec : sides_) sides.push_back(load_side(spec, store_));
  make_names_distinct(sides);
  DiffOptions options;
  options.alpha = alpha_;
  options.min_effect_pct = min_effect_pct_;
  options.force = force_;
  write_report(out, report_html(report_data(sides, options)));
  std::cout << "report: " << out_ << "\n";
  return 0;
}

}  // namespace schedlab
