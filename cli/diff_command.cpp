#include "cli/diff_command.hpp"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "core/error.hpp"
#include "diff/diff.hpp"

namespace schedlab {

DiffCommand::DiffCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "diff", "Compare a baseline with one or more other sides: statistics, verdicts on headline metrics");
  command_
      ->add_option("SIDES", comparison_.sides,
                   "BASE OTHER...: each a bundle, a directory of bundles, or a label / configuration-hash "
                   "prefix looked up in --store")
      ->required()
      ->expected(2, -1);
  command_
      ->add_option("--format", format_,
                   "text: plain, 80 columns, for a mailing list; markdown; json (schema schedlab.diff/1). "
                   "Default: text for a terminal, 100 columns, in colour on a tty")
      ->check(CLI::IsMember({"text", "markdown", "json"}));
  command_->add_flag("--json", json_, "The same as --format json");
  command_->add_flag("--all", all_counters_,
                     "Every counter row, not only those that moved beyond the noise of their repetitions");
  comparison_.add_to(*command_);
  command_
      ->add_option("--fail-on", fail_on_,
                   "worse: exit 3 on a headline verdict `worse` or a significant rise in failures")
      ->check(CLI::IsMember({"worse"}));
  command_
      ->add_option("--profile-lines", profile_lines_,
                   "diffprofile: show the N largest increases and N largest decreases (0: all; default 5)")
      ->default_val(0);
  command_->add_flag("--profile-all", profile_all_, "diffprofile: also show deltas within Poisson noise");
}

int DiffCommand::run() const {
  DiffOptions options = comparison_.diff_options();
  options.profile.lines = profile_lines_;
  options.profile.all = profile_all_;
  options.all_counters = all_counters_;
  if (json_ && !format_.empty() && format_ != "json")
    throw InputError("--json and --format " + format_ + " contradict each other");
  auto diff = build_diff(comparison_.load_sides(), options);
  const auto format = json_ ? std::string("json") : format_;
  if (format == "json") {
    std::cout << diff_to_json(diff).dump(2) << "\n";
  } else if (format == "markdown") {
    std::cout << format_diff_markdown(diff);
  } else if (format == "text") {
    std::cout << format_diff_text(diff, TextLayout{80, false});
  } else {
    bool colour = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
    std::cout << format_diff_text(diff, TextLayout{100, colour});
  }
  return fail_on_ == "worse" && diff.regression ? kExitRegression : 0;
}

}  // namespace schedlab
