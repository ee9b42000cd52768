// The page's data block: identities, the diff (as `schedlab diff --json` writes it), series, environment.
#include "core/error.hpp"
#include "diff/environment.hpp"
#include "report/report.hpp"
#include "report/report_parts.hpp"

namespace schedlab {

nlohmann::json report_data(const std::vector<Side>& sides, const DiffOptions& options) {
  if (sides.empty()) throw InputError("report needs at least one bundle, directory or label");
  nlohmann::json diff;  // null with one side: nothing to compare with, so no verdicts
  if (sides.size() >= 2) diff = diff_to_json(build_diff(sides, options));
  nlohmann::json warnings = nlohmann::json::array();
  if (sides.size() == 1) {
    for (const auto& b : sides.front().bundles) {
      if (b.bundle.smoke) {
        // As `schedlab diff` says it: fewer repetitions make trial medians noisier; verdicts rest on trials.
        warnings.push_back(
            b.path.string() +
            " is a quick (smoke) run: fewer repetitions per trial than the default 9, so its trial "
            "medians are noisier");
        break;
      }
    }
    // With two sides or more these come with the diff's warnings.
    for (auto& w : trial_kernel_warnings(sides.front())) warnings.push_back(std::move(w));
  }
  return {{"schema", kReportSchema},
          {"sides", report::side_identities(sides)},
          {"warnings", warnings},
          {"diff", diff},
          {"environment", report::environment_rows(sides)},
          {"instances", report::instance_series(sides)}};
}

}  // namespace schedlab
