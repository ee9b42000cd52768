#pragma once
// Runs a plan: for each trial, every workload instance in a seeded shuffled order, one
// discarded warm-up and R timed repetitions each, and writes one bundle per trial.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collector/perf/perf_source.hpp"
#include "collector/profile/profile_source.hpp"
#include "collector/runner/isolation.hpp"
#include "collector/runner/progress.hpp"
#include "collector/runner/settle.hpp"
#include "core/host_paths.hpp"
#include "workloads/workload.hpp"

namespace schedlab {

struct InstancePlan {
  std::string id;
  std::string workload;
  std::map<std::string, std::string> params;  // KEY -> VALUE as given
};

// Instrumentation that perturbs runs on diagnostic repetitions after an instance's timed ones:
// the sampled profile, and kernel.sched_schedstats switched on for them when it was off.
struct DiagnosticsPlan {
  bool profile = false;
  ProfileOptions profile_options;
  int repetitions = 1;  // per instance and trial, when profiling
  bool trace = false;   // one more diagnostic repetition with the scheduler tracepoints
  int count() const { return (profile ? repetitions : 0) + (trace ? 1 : 0); }
};

struct RunPlan {
  std::vector<InstancePlan> instances;
  int repetitions = 9;
  bool smoke = false;
  int trials = 1;
  std::vector<std::string> events;  // empty with counters on: the default set
  bool counters = true;
  CounterScope counter_scope = CounterScope::kAuto;
  double timeout_s = 120;
  std::uint64_t seed = 0;
  std::string label;
  std::filesystem::path out_dir = "results";
  std::filesystem::path cache_dir = "/var/cache/schedlab";
  IsolationMode isolation = IsolationMode::kAuto;
  SettlePolicy settle;
  DiagnosticsPlan diagnostics;
};

struct PreparedInstance {
  std::string id;
  std::unique_ptr<Workload> workload;
  ParamValues params;
};

// Everything checked before anything runs or is written: workloads, parameters against this
// machine's topology, events, the output directory. Throws InputError.
class PreparedRun {
 public:
  PreparedRun(RunPlan plan, HostPaths paths);
  const RunPlan& plan() const { return plan_; }
  const std::vector<PreparedInstance>& instances() const { return instances_; }
  const WorkloadContext& context() const { return context_; }
  const HostPaths& paths() const { return paths_; }

 private:
  RunPlan plan_;
  HostPaths paths_;
  WorkloadContext context_;
  std::vector<PreparedInstance> instances_;
};

struct RunOutcome {
  std::vector<std::filesystem::path> bundles;
  int failed_repetitions = 0;
  bool interrupted = false;
};

RunOutcome execute(PreparedRun& run, Progress& progress);

// 0..n-1 in a seeded order: Fisher-Yates with our own draw (std::shuffle's algorithm is the library's
// choice), so a seed gives the same order with any standard library and across restarts.
std::vector<std::size_t> shuffled_order(std::size_t n, std::uint64_t seed);

// The quick suite: every registered workload's quick instances.
std::vector<InstancePlan> quick_suite();

// A list value ("[2,4,8]") expands an instance into one per value (a sweep), with ids such as
// "kernbench.jobs=4"; several lists give their cartesian product. Throws InputError on "[]".
std::vector<InstancePlan> expand_sweeps(const std::vector<InstancePlan>& instances);

// A parameter whose default is a list (micro.benchmarks) sweeps when not given: the default is
// filled in as if given, for expand_sweeps. Throws InputError for an unknown workload.
std::vector<InstancePlan> with_default_sweeps(std::vector<InstancePlan> instances);

}  // namespace schedlab
