#pragma once
// The result bundle of DESIGN.md ("schedlab.result/2"; /1 is still read) as C++ types. Sources and the
// runner fill these; JSON is one encoder of them (bundle_io.hpp, bundle_encoding.hpp).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metric.hpp"

namespace schedlab {

// What this build writes. /2 holds what /1 held, less what a reader derives (per-operation copies of
// counters) and with repeated parts written once (bundle_encoding.hpp); readers accept both.
inline constexpr const char* kResultSchema = "schedlab.result/2";
inline constexpr const char* kResultSchemaV1 = "schedlab.result/1";

// Repetition and counter status words. Readers must accept values not listed here.
namespace status {
inline constexpr const char* kOk = "ok";
inline constexpr const char* kFailed = "failed";
inline constexpr const char* kTimeout = "timeout";
inline constexpr const char* kSkipped = "skipped";
inline constexpr const char* kUnsupported = "unsupported";
inline constexpr const char* kNotCounted = "not-counted";
}  // namespace status

struct CounterReading {
  std::string status = status::kOk;
  std::string unit = "count";
  double value = 0;       // scaled for multiplexing when time_running < time_enabled
  std::uint64_t raw = 0;  // as read
  std::uint64_t time_enabled_ns = 0;
  std::uint64_t time_running_ns = 0;
  int error_number = 0;  // for unsupported: the errno of the failed call
  std::string reason;    // for unsupported / not-counted: what failed and what to do
  std::string encoding;  // libpfm4's canonical form of the event
  std::string note;      // e.g. a software switch event counted without kernel level
  // "system-cpus" (every task on the workload's CPUs), "cgroup" (per CPU on the repetition's cgroup),
  // "task-tree" (per task, inherited); "system" for the /proc readings of SystemStatsSource.
  std::string scope;
  // perf counters: what counting costs a context switch: "constant" (events that stay on their CPU),
  // "per-switch" (events switched with the task or cgroup), "none" (read from the kernel's own accounting)
  std::string cost;
  // Where a perf counter's value came from when not from a perf event: "rusage" or "cgroup cpu.stat" (the
  // kernel's own accounting, read instead of an event that would cost or say too little on CPUs)
  std::string source;
  double foreign_share = -1;  // system-cpus: other tasks' share of the counted CPUs' busy time; -1: n/a
  bool contaminated = false;  // foreign_share above the window's threshold: not the workload's count alone

  bool ok() const { return status == status::kOk; }
  bool multiplexed() const { return ok() && time_running_ns < time_enabled_ns; }
  // time_enabled / time_running: what a multiplexed count was multiplied by (1 when never multiplexed).
  double scaling() const {
    return time_running_ns > 0 ? static_cast<double>(time_enabled_ns) / static_cast<double>(time_running_ns)
                               : 0;
  }
};

struct Repetition {
  int index = 0;
  bool warmup = false;
  std::string started_at;
  double duration_s = 0;
  std::string status = status::kOk;
  std::string reason;
  std::map<std::string, MetricValue> metrics;
  std::map<std::string, CounterReading> counters;
  nlohmann::json rusage = nlohmann::json::object();     // of the repetition's whole process tree
  nlohmann::json isolation = nlohmann::json::object();  // cgroup leaf or process group, cpu.stat
  nlohmann::json details = nlohmann::json::object();    // workload-specific extras
  nlohmann::json system = nlohmann::json::object();     // per-CPU /proc deltas (SystemStatsSource)
  // What ran on the CPUs that system-cpus counters counted (collector/perf/cpu_window.hpp); {} otherwise.
  nlohmann::json counter_window = nlohmann::json::object();
  nlohmann::json profile = nlohmann::json::object();  // per-symbol sample histogram (ProfileSource)
  nlohmann::json trace = nlohmann::json::object();    // per-task scheduler trace summary (TraceSource)
  // The kernel's state around the repetition (taint, clocksource before and after; see
  // kernel_state_change in collector/sysinfo): a WARN or a clocksource switch during it shows here.
  nlohmann::json kernel = nlohmann::json::object();

  bool ok() const { return status == status::kOk; }
};

struct MetricInfo {
  std::string unit;
  Direction direction = Direction::kLowerIsBetter;
  bool headline = false;
  std::string help;
};

struct Instance {
  std::string id;
  std::string workload;
  std::string workload_version;
  nlohmann::json params = nlohmann::json::object();  // resolved: every default filled in
  std::string params_hash;
  // Set by an experiment whose two sides differ in a parameter (run --versus): the key both sides'
  // copies share, so that the diff pairs them although their parameters, and hashes, differ. Empty
  // otherwise (instances then match by workload and params_hash).
  std::string compared_as;
  std::map<std::string, MetricInfo> metric_info;
  int run_order = 0;  // position in this trial's shuffled order
  nlohmann::json settle = nlohmann::json::object();
  std::optional<Repetition> warmup;
  std::vector<Repetition> repetitions;
  // Repetitions run with instrumentation that perturbs (profiling, schedstats switched on), after
  // the timed ones and never part of their statistics; `instrumentation` says what ran where.
  std::vector<Repetition> diagnostics;
  nlohmann::json instrumentation = nlohmann::json::object();
};

struct Bundle {
  std::string schema = kResultSchema;
  std::string run_id;
  int trial = 0;
  int trials = 1;
  std::string label;
  bool smoke = false;  // a quick run: too few repetitions for verdicts
  std::string boot_id;
  std::string started_at;
  std::string finished_at;
  std::uint64_t seed = 0;
  std::vector<std::string> events;
  nlohmann::json host = nlohmann::json::object();
  nlohmann::json kernel = nlohmann::json::object();
  nlohmann::json configuration = nlohmann::json::object();
  nlohmann::json environment = nlohmann::json::object();
  nlohmann::json provenance = nlohmann::json::object();
  // A trial of an experiment (run --versus): {id, side "a"|"b", pair, position 0|1 in its pair, order
  // "ab"|"ba"}. Empty otherwise.
  nlohmann::json experiment = nlohmann::json::object();
  std::vector<Instance> instances;
};

// The whole bundle as readers see it (every counter, every per-CPU object), in the version `b.schema`
// names; the file form of /2 is written from it by bundle_io.
nlohmann::json to_json(const Bundle& b);
nlohmann::json to_json(const CounterReading& c);

// Validates while converting; throws BundleError naming `source` and the JSON path. Takes /1 and /2, in
// the file form or as to_json writes it; per-operation counters are derived where a bundle lacks them.
Bundle bundle_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace schedlab
