#pragma once
// `schedlab diff`: a baseline against one or more other sides, with the statistics of DESIGN.md
// ("Statistics"): a primary rank test chosen in advance, Hodges–Lehmann shifts with intervals,
// Benjamini–Hochberg over the headline metrics, verdicts only on headline metrics.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metric.hpp"
#include "diff/diagnostics_diff.hpp"
#include "diff/profile_diff.hpp"
#include "diff/sides.hpp"

namespace schedlab {

struct DiffOptions {
  double alpha = 0.05;
  double min_effect_pct = 2.0;  // equivalence margin (TOST) and the threshold a verdict is read against
  bool force = false;           // compare across hardware fingerprints or workload versions
  double trend_alpha = 0.01;    // a run-order trend below this p is flagged
  ProfileFormat profile;        // --profile-lines, --profile-all
};

struct SideStats {
  std::size_t trials = 0;
  std::size_t repetitions = 0;
  double median = 0, mean = 0, cv = 0, min = 0, max = 0;
};

// One other side against the baseline, for one metric.
struct Comparison {
  std::string side;
  SideStats stats;
  std::string test;        // "mann-whitney/trials", "mann-whitney/repetitions", "wilcoxon-paired/trials"
  std::size_t n_base = 0;  // samples the test used on each side (trials or repetitions, or pairs)
  std::size_t n_other = 0;
  double p_value = 1;
  double p_adjusted = 1;   // Benjamini–Hochberg over the headline metrics of this side; = p otherwise
  double min_p = 1;        // the smallest p these sizes can reach
  double welch_log_p = 1;  // secondary: Welch's t on log values (raw values when one is <= 0)
  double shift_pct = 0;    // Hodges–Lehmann shift as % of the baseline median
  double ci_lower_pct = 0, ci_upper_pct = 0;  // at 1 - alpha (achieved level in ci_confidence)
  double ci_confidence = 0;
  double tost_lower_pct = 0, tost_upper_pct = 0;  // at 1 - 2 alpha, read against min_effect
  double mde_pct = 0;   // minimum detectable effect at 80% power with these sizes and spreads
  std::string verdict;  // headline metrics only: better, worse, equivalent (±X%), inconclusive, too few runs
  std::string verdict_reason;  // why `too few runs`: the sample sizes, or a side with a single trial
};

struct Trend {
  std::string side;
  double tau = 0;
  double p_value = 1;
  bool flagged = false;
};

struct MetricDiff {
  std::string name;
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
  double p_value = 1;  // Fisher's exact test against the baseline (1 for the baseline itself)
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
  bool interleaved_with_base = false;
};

struct DiffResult {
  DiffOptions options;
  std::vector<SideInfo> sides;  // base first
  std::vector<std::string> warnings;
  std::vector<EnvironmentDifference> environment;
  std::vector<InstanceDiff> instances;
  bool regression = false;  // a headline verdict `worse` anywhere
};

// Throws InputError for inputs that cannot be compared (nothing in common; different hardware or
// workload versions without options.force).
DiffResult build_diff(const std::vector<Side>& sides, const DiffOptions& options);

std::string format_diff_text(const DiffResult& diff, bool colour);
nlohmann::json diff_to_json(const DiffResult& diff);

}  // namespace schedlab
