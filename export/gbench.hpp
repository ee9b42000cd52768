#pragma once
// Google Benchmark's JSON output format for a result bundle, so that tools written for it
// (benchmark's own tools/compare.py) read schedlab results. The shape follows what Google
// Benchmark 1.7.1 writes with --benchmark_format=json --benchmark_repetitions=N.
//
// benchmarks[], in bundle instance order; per instance the headline metrics first, then the
// others by name; per metric the iterations in run order, then the aggregates:
//
//   {"name": "yield/ns_per_yield", "run_name": "yield/ns_per_yield", "run_type": "iteration",
//    "family_index": 0, "per_family_instance_index": 0, "repetitions": 3, "repetition_index": 0,
//    "threads": 1, "iterations": 1, "real_time": 658.6, "cpu_time": 658.6, "time_unit": "ns",
//    "elapsed_s": 0.0132, "yields": 20000, "cycles:u": 4.1e7}
//   {"name": "yield/ns_per_yield_mean", "run_name": "yield/ns_per_yield", "run_type": "aggregate",
//    "aggregate_name": "mean", "aggregate_unit": "time", "iterations": 3, ...}
//
// - One benchmark per instance and metric whose unit is a duration (is_duration_unit: ns, us,
//   ms, s; time_unit is that unit, the same four Google Benchmark knows), named
//   "<instance id>/<metric>". family_index numbers the instances, per_family_instance_index
//   the metrics within one, so compare.py's sort keeps each benchmark's entries together.
// - "iteration" entries: one per timed repetition with status ok that has the metric.
//   iterations is 1 (a repetition is one measurement). repetitions is the number of timed
//   repetitions the instance ran, ok or not; repetition_index is the repetition's index.
//   cpu_time repeats real_time: schedlab records no per-operation CPU time, and the tools
//   require the field.
// - User counters on an iteration: that repetition's metrics that are not durations and its
//   ok counters (status "ok"; the scaled value), name: value. A name that Google Benchmark
//   uses itself ("name", "label", "iterations", ...) or that a metric already took gets the
//   prefix "metric." or "counter.".
// - "aggregate" entries mean, median, stddev (sample, n-1) and cv (stddev / mean as a fraction,
//   0 when the mean is 0) over the iteration values, with aggregate_unit "time" ("percentage"
//   for cv) and iterations = the number of values; the counters are aggregated the same way
//   over the repetitions that have them. Like Google Benchmark, there are no aggregates for a
//   benchmark with fewer than two iterations.
// - Never exported: the warm-up repetition; repetitions whose status is not ok (listed in
//   context.schedlab_dropped_repetitions as {instance, index, status, reason}); counters that
//   are not ok (they carry no value); non-finite values (listed in
//   context.schedlab_dropped_values as {instance, index, name, reason}).
// - An instance whose repetitions ran under Google Benchmark (the micro workload keeps the JSON
//   its reporter wrote in a repetition's details.gbench) is exported as Google Benchmark wrote
//   it instead: per ok repetition its own entry (its name, e.g. "pipe:same-cpu/min_time:0.500/
//   real_time", its iterations, real_time, cpu_time, time_unit and its counters), with
//   family_index, per_family_instance_index, repetitions and repetition_index as above, and the
//   repetition's non-duration metrics and ok counters (including the runner's "EVENT/op") added
//   as user counters where the entry has no key of that name; then the aggregates as above.
//
// context: date (the bundle's started_at), host_name, executable "schedlab", num_cpus (online
// CPUs), mhz_per_cpu 0 (bundles record no clock frequency), cpu_scaling_enabled (true only when
// a recorded cpufreq governor is not "performance"), caches [] (not recorded), load_avg (the
// environment's, else []), library_build_type ("debug" for a Debug build of schedlab, else
// "release"), and schedlab_schema, schedlab_run_id, schedlab_trial, schedlab_label,
// schedlab_kernel_release, schedlab_configuration_hash, schedlab_smoke plus the two
// schedlab_dropped_* lists above.
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace schedlab {

// Throws InputError naming `source` when the bundle has nothing to export (no ok timed
// repetition with a finite duration metric): an empty benchmarks list would lose it silently.
nlohmann::json gbench_json(const Bundle& bundle, const std::string& source = "bundle");

}  // namespace schedlab
