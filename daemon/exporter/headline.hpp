#pragma once
// What the exporter publishes from a bundle, as plain values: each headline metric's median over the
// ok repetitions in base units under a Prometheus name, and each latency histogram re-bucketed onto
// bounds a dashboard can aggregate. No prometheus-cpp here: exporter.cpp renders these, tests read them.
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

struct HeadlineValue {
  std::string family;  // prometheus_name(...)
  std::string help;
  std::string workload;
  std::string instance_id;
  std::string metric;   // the bundle's name, e.g. "latency_p99_us"
  double value = 0;     // median of the ok repetitions, in base units
  int repetitions = 0;  // ok repetitions the median is taken over
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
  std::vector<double> counts;  // per exported bucket (not cumulative), one more than the bounds: +Inf
  double sum_seconds = 0;      // estimated from bucket midpoints: the bundle keeps no exact sum
  double count = 0;
};

struct PublishedSeries {
  std::vector<HeadlineValue> headlines;
  std::vector<LatencyBuckets> histograms;
};

// The headline metrics (MetricInfo::headline) of every instance with at least one ok repetition, and
// the merged `details.histogram` (LatencyHistogram::to_json) of its ok repetitions when they carry one.
PublishedSeries published_series(const Bundle& bundle);

}  // namespace schedlab
