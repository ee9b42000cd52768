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
  command_->add_flag("--json", json_, "Machine-readable output (schema schedlab.diff/1, see README)");
  comparison_.add_to(*command_);
  command_
      ->add_option("--fail-on", fail_on_,
                   "worse: exit 3 on a headline verdict `worse` or a significant rise in failures")
      ->check(CLI::IsMember({"worse"}));
  command_
      ->add_option("--profile-lines", profile_lines_,
                   "diffprofile: show the N largest increases and N largest decreases (0: all)")
      ->default_val(0);
  command_->add_flag("--profile-all", profile_all_, "diffprofile: also show deltas within Poisson noise");
}

int DiffCommand::run() const {
  DiffOptions options = comparison_.diff_options();
  options.profile.lines = profile_lines_;
  options.profile.all = profile_all_;
  auto diff = build_diff(comparison_.load_sides(), options);
  if (json_) {
    std::cout << diff_to_json(diff).dump(2) << "\n";
  } else {
    bool colour = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
    std::cout << format_diff_text(diff, colour);
  }
  return fail_on_ == "worse" && diff.regression ? kExitRegression : 0;
}

}  // namespace schedlab
