#pragma once
// `schedlab diff`: a baseline against one or more other sides, with the statistics of DESIGN.md
// ("Statistics"): a primary rank test chosen in advance, Hodges–Lehmann shifts with intervals,
// Benjamini–Hochberg over the headline metrics, verdicts only on headline metrics.
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metric.hpp"
#include "diff/diagnostics_diff.hpp"
#include "diff/kernel_commits.hpp"
#include "diff/profile_diff.hpp"
#include "diff/samples.hpp"
#include "diff/sides.hpp"

namespace schedlab {

struct DiffOptions {
  double alpha = 0.05;
  double min_effect_pct = 2.0;  // equivalence margin (TOST) and the threshold a verdict is read against
  bool force = false;           // compare across hardware, workload versions or measuring methods
  double trend_alpha = 0.01;    // a run-order trend below this p is flagged
  ProfileFormat profile;        // --profile-lines, --profile-all
  bool all_counters = false;    // --all: every counter row, not only those outside their noise
};

struct SideStats {
  std::size_t trials = 0;
  std::size_t repetitions = 0;
  double median = 0, mean = 0, cv = 0, min = 0, max = 0;
  double sd = 0;  // of the repetitions' values (0 for fewer than two)
};

// The spread a comparison's power is simulated from (stats/power.hpp), in the test's model units.
struct PowerInputs {
  bool paired = false;
  std::size_t n_x = 0, n_y = 0;  // non-zero pairs (paired), or the two sample sizes
  double sd_x = 0, sd_y = 0;     // of the differences (paired), or of each side
  double margin = 0;             // --min-effect in model units (log ratio), 0 for a shift in units
};

// One other side against the baseline, for one metric. Test, interval, equivalence interval and MDE
// come from one model (diff/README.md): trial medians, on log values when every one is positive
// (effects are then % ratios), else on the values themselves (effects in the metric's unit).
struct Comparison {
  std::string side;
  SideStats stats;
  std::string test;        // "mann-whitney/trials", "mann-whitney/repetitions", "wilcoxon-paired/trials"
  std::size_t n_base = 0;  // samples the test used on each side (trials or repetitions, or pairs)
  std::size_t n_other = 0;
  double p_value = 1;
  bool in_family = false;  // in its side's Benjamini-Hochberg family: a trial-level headline test
  double p_adjusted = 1;   // Benjamini-Hochberg over the family; NaN outside it
  double min_p = 1;        // the smallest p these sizes can reach
  std::string t_test;      // secondary: "paired-t" on the differences, "welch-t" on the two samples
  double t_test_p = 1;
  std::string effect_unit;            // "%" (a ratio: log model) or the metric's unit (difference model)
  double shift = 0;                   // Hodges-Lehmann shift in effect_unit
  double ci_lower = 0, ci_upper = 0;  // at 1 - alpha (achieved level in ci_confidence)
  double ci_confidence = 0;
  double tost_lower = 0, tost_upper = 0;  // at 1 - 2 alpha, read against min_effect
  double mde = NAN;  // family members: the shift a verdict catches with 80% power (NaN otherwise)
  PowerInputs power;
  // headline: better, worse, better/worse (not beyond ±X%), equivalent (±X%), inconclusive, too few runs
  std::string verdict;
  std::string verdict_reason;      // why `too few runs`, a qualified or withheld verdict
  std::vector<std::string> notes;  // trials left out of the pairs, and why
  // Counters: the noise of their own repetitions, 2 sqrt(sd_a^2 / n_a + sd_b^2 / n_b) (NaN with fewer than
  // two a side), and whether the change of the means lies outside it, as diffprofile's 2 sqrt(var) rule
  // for symbols: a counter that did not move is left out of the text unless --all.
  double noise = NAN;
  bool outside_noise = false;
};

struct Trend {
  std::string side;
  double tau = 0;
  double p_value = 1;
  bool flagged = false;
};

struct MetricDiff {
  std::string name;
  // Counters: how each side's readings were taken (base first, then each side with the counter), named.
  std::vector<std::pair<std::string, CounterQuality>> quality;
  std::string kind;  // "metric" or "counter"
  std::string unit;
  bool has_direction = true;  // counters have none
  Direction direction = Direction::kLowerIsBetter;
  bool headline = false;
  bool tail = false;  // p99, p99.9, max: compared across repetitions' values, never across individual samples
  SideStats base;
  std::vector<Comparison> comparisons;  // one per other side that has the metric
  std::vector<Trend> trends;            // base first, then each other side
};

struct FailureRate {
  std::string side;
  std::size_t failed = 0;  // repetitions whose status is not ok (failed, timeout, ...)
  std::size_t total = 0;
  double p_value = 1;   // Fisher's exact test against the baseline (1 for the baseline itself)
  std::string verdict;  // "worse" / "better" when the rate differs at alpha, else empty
};

struct InstanceDiff {
  std::string id;
  std::string workload;
  std::string params_hash;
  nlohmann::json params;
  std::string workload_version;
  std::vector<MetricDiff> metrics;
  std::vector<FailureRate> failures;       // base first
  std::vector<std::string> missing_from;   // sides without this instance
  std::vector<ProfileDiff> profiles;       // one per other side, when either side was profiled
  std::vector<DiagnosticTable> traces;     // one per other side, when either side was traced
  std::vector<DiagnosticTable> schedstat;  // one per other side with schedstat in diagnostic repetitions
};

struct EnvironmentDifference {
  std::string field;     // e.g. "kernel.clocksource.current"
  std::string category;  // "configuration" (what is under test) or "environment"
  std::vector<std::pair<std::string, std::string>> values;  // side name -> value(s) as text
};

struct SideInfo {
  std::string name;
  std::string spec;
  std::vector<std::string> sources;
  std::size_t trials = 0;
  bool smoke = false;
  std::size_t repetitions_per_trial = 0;  // the most any of its trials ran
  bool interleaved_with_base = false;     // every instance it shares with the base ran interleaved
  std::size_t family = 0;                 // headline comparisons in its Benjamini-Hochberg family
};

struct DiffResult {
  DiffOptions options;
  std::vector<SideInfo> sides;  // base first
  std::vector<std::string> warnings;
  std::vector<EnvironmentDifference> environment;
  std::vector<KernelCommits> kernel_commits;  // each other side against the base, when both are git kernels
  std::vector<InstanceDiff> instances;
  nlohmann::json experiment;  // the run --versus experiment both sides come from (experiment_record.hpp)
  bool regression = false;    // a headline verdict `worse`, or a significant rise in failures, anywhere
};

// Throws InputError for inputs that cannot be compared (nothing in common; different hardware or
// workload versions without options.force).
DiffResult build_diff(const std::vector<Side>& sides, const DiffOptions& options);

// The text for people: the verdict table first (within `width` columns; 100 for a terminal, 80 with
// --format text, for mail), then the kernbench table and the top diffprofile lines, then the details.
struct TextLayout {
  std::size_t width = 100;
  bool colour = false;
};
std::string format_diff_text(const DiffResult& diff, const TextLayout& layout);
inline std::string format_diff_text(const DiffResult& diff, bool colour) {
  return format_diff_text(diff, TextLayout{100, colour});
}
// The same content as GitHub-flavoured markdown (tables, headings, the diffprofile as a code block).
std::string format_diff_markdown(const DiffResult& diff);
nlohmann::json diff_to_json(const DiffResult& diff);

}  // namespace schedlab
