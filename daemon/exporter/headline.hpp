#pragma once
// What the exporter publishes from a bundle, as plain values: each headline metric's median over the
// ok repetitions in base units under a Prometheus name, and each latency histogram re-bucketed onto
// bounds a dashboard can aggregate. No prometheus-cpp here: exporter.cpp renders these, tests read them.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace schedlab {

// How a bundle unit maps to a Prometheus base unit: value x scale, and the name's unit suffix
// ("seconds", "bytes_per_second", "per_second", "ratio"; "" for a plain count).
struct BaseUnit {
  double scale = 1;
  std::string suffix;
  std::vector<std::string> spelt;  // how the unit is spelt inside metric names: "us", {"mb", "s"}
};

// nullopt for a unit not in the table: such a metric is published unconverted under its own name.
std::optional<BaseUnit> base_unit(const std::string& unit);

// "schedlab_<workload>_<metric in base units>": the unit spelt in the metric's name is replaced by the
// base unit's suffix, which Prometheus wants last ("latency_p99_us" -> "latency_p99_seconds",
// "throughput_mb_s" -> "throughput_bytes_per_second"); a time unit leading "X_per_Y" becomes a
// duration of Y ("ns_per_yield" -> "yield_duration_seconds"). Every character outside [a-z0-9_]
// becomes '_'.
std::string prometheus_name(const std::string& workload, const std::string& metric, const std::string& unit);

// One gauge series of an instance: a headline median, or one of the instance's own series (counters per
// operation, repetitions by status, duration; see instance_series below).
struct HeadlineValue {
  std::string family;  // prometheus_name(...)
  std::string help;
  std::string workload;
  std::string instance_id;  // the bundle's instance id: a sweep's spells its values ("yield.threads=2")
  std::string params_hash;  // of its resolved parameters: two instances with one id still differ here
  std::string metric;       // the bundle's name, e.g. "latency_p99_us" (an event name for a counter)
  double value = 0;         // median of the ok repetitions, in base units
  int repetitions = 0;      // ok repetitions the median is taken over
  std::map<std::string, std::string> labels;  // beyond host/configuration/workload/instance_id: "status"
};

// Upper bounds (seconds) of the exported latency buckets: 1, 2, 3, 5, 7 per decade from 1 us to 10 s.
// Each is a bucket boundary of core/histogram.hpp's log-linear scheme (1 us steps to 1 ms, then 100
// per decade), so re-bucketing loses no count: a source bucket never straddles an exported bound.
const std::vector<double>& latency_bounds_seconds();

struct LatencyBuckets {
  std::string family;  // "schedlab_<workload>_latency_seconds"
  std::string help;
  std::string workload;
  std::string instance_id;
  std::string params_hash;
  std::vector<double> counts;  // per exported bucket (not cumulative), one more than the bounds: +Inf
  double sum_seconds = 0;      // estimated from bucket midpoints: the bundle keeps no exact sum
  double count = 0;
};

// The counters a dashboard shows next to the headline metrics, one family each (a bundle event and the
// family it becomes). Their unit is the same whatever the workload, so a family spans workloads
// (labelled `workload`) rather than one per workload: the counters are the collector's, not a workload's.
struct CounterFamily {
  const char* event;  // bundle counter name: "perf::CONTEXT-SWITCHES/op" (the runner's per-operation form)
  const char* family;
  const char* help;
};
const std::vector<CounterFamily>& counter_families();

// "2026-12-01T08:07:32.040Z" (the bundle's timestamps) as seconds since the epoch; nullopt otherwise.
std::optional<double> utc_seconds(const std::string& timestamp);

struct PublishedSeries {
  std::vector<HeadlineValue> headlines;  // gauges: headline medians and the instance series
  std::vector<LatencyBuckets> histograms;
};

// The headline metrics (MetricInfo::headline) of every instance with at least one ok repetition, and
// the merged `details.histogram` (LatencyHistogram::to_json) of its ok repetitions when they carry one;
// for every instance with a timed repetition, its instance series too:
// - schedlab_repetitions{status}: timed repetitions by status (ok, failed, timeout always, 0 or more;
//   any other status the bundle holds), so that "no failures" is a 0 and not an absent series;
// - schedlab_instance_duration_seconds: the wall time of all its repetitions (warm-up, timed, diagnostic);
// - schedlab_instance_finished_timestamp_seconds: the bundle's finished_at;
// - counter_families(): the median over the ok repetitions whose counter is ok. A counter that is
//   unsupported (or not counted) in every ok repetition exports nothing, never a number;
// - schedlab_instructions_per_cycle: the median of instructions / cycles over the ok repetitions where
//   every instructions and cycles event is ok and both were counted at the same privilege levels.
PublishedSeries published_series(const Bundle& bundle);

}  // namespace schedlab
