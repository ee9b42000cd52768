#pragma once
// Runs a plan: for each trial, every workload instance in a seeded shuffled order, one
// discarded warm-up and R timed repetitions each, and writes one bundle per trial.
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collector/perf/perf_source.hpp"
#include "collector/profile/profile_source.hpp"
#include "collector/runner/isolation.hpp"
#include "collector/runner/progress.hpp"
#include "collector/runner/settle.hpp"
#include "collector/runner/workload_user.hpp"
#include "core/host_paths.hpp"
#include "core/result.hpp"
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
  // One more, counted on the workload alone (cgroup or task tree): exact per-workload counts, at the
  // per-switch cost that timed repetitions (counted on CPUs) do not pay. nullopt: none.
  std::optional<CounterScope> attribution;
  int count() const { return (profile ? repetitions : 0) + (trace ? 1 : 0) + (attribution ? 1 : 0); }
};

// A runtime configuration in effect around one trial (runtime/): applied when made, restored by
// finish() (or its destructor). The runner puts each repetition's processes in its cgroups and asks
// after every repetition whether it still holds (a sched_ext scheduler the kernel ejected does not).
class TrialEnvironment {
 public:
  virtual ~TrialEnvironment() = default;
  // cgroup v1 directories each repetition's process also joins (its cgroup.procs), e.g. the cpu
  // controller's group that carries cpu.cfs_quota_us.
  virtual std::vector<std::filesystem::path> cgroups_v1() const { return {}; }
  // Where the cgroup v2 leaves are made; empty: below this process's own cgroup.
  virtual std::filesystem::path cgroup2_parent() const { return {}; }
  // After each repetition: why the configuration no longer holds, or nullopt.
  virtual std::optional<std::string> lost() { return std::nullopt; }
  // What the trial ran under, read back (bundle.configuration.runtime: part of the configuration hash).
  virtual nlohmann::json settings() const = 0;
  // Restores what was applied; returns the switch's record (bundle.environment.runtime_switch).
  virtual nlohmann::json finish() = 0;
};
// Makes (applies) one; throws with the reason when the configuration cannot be applied.
using TrialEnvironmentFactory = std::function<std::unique_ptr<TrialEnvironment>()>;

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
  std::optional<std::uint64_t> memory_limit_bytes;  // each repetition's memory cgroup limit; none: unlimited
  // Under root, workloads that need no privilege run as this user (Workload::needs_root); "": as we are.
  std::string workload_user;
  // The box's class label ([campaign] host_label, run --host-label), kept in the bundle as host.label so
  // that a store indexing it can select the box's class by its name; "": none (the class is the shape).
  std::string host_label;
  SettlePolicy settle;
  DiagnosticsPlan diagnostics;
  TrialEnvironmentFactory environment;  // a runtime configuration around every trial; none: as found
  std::string configuration_key;        // the configuration's content hash ("" without one)
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
  const std::optional<WorkloadUser>& workload_user() const { return workload_user_; }

 private:
  RunPlan plan_;
  HostPaths paths_;
  WorkloadContext context_;
  std::vector<PreparedInstance> instances_;
  std::optional<WorkloadUser> workload_user_;  // resolved when we are root and one was asked for
};

struct RunOutcome {
  std::vector<std::filesystem::path> bundles;
  int failed_repetitions = 0;
  bool interrupted = false;
};

RunOutcome execute(PreparedRun& run, Progress& progress);

// Runs trials one at a time, each written as a bundle: execute() runs a plan's trials in a row, an
// experiment (experiment/) alternates the trials of two runs. Keeps the work done for the progress line's
// estimate. `interrupted` is an InterruptGuard's flag, which the caller owns.
class TrialRunner {
 public:
  TrialRunner(PreparedRun& run, Progress& progress, const volatile std::sig_atomic_t* interrupted,
              std::string run_id);
  struct Trial {
    std::filesystem::path path;
    Bundle bundle;
    int failed_repetitions = 0;
    bool interrupted = false;
  };
  // Trial `trial` (0-based) of `planned_trials` (shown in the progress line), written to `path` (never
  // over an existing file).
  // `annotate` sees the bundle before it is written (an experiment marks its side and pair).
  Trial run_trial(int trial, int planned_trials, const std::filesystem::path& path,
                  const SettlePolicy& settle, const std::function<void(Bundle&)>& annotate = {});

 private:
  PreparedRun& run_;
  Progress& progress_;
  const volatile std::sig_atomic_t* interrupted_;
  std::string run_id_;
  double start_s_ = 0, work_s_ = 0;
  int done_ = 0;
};

// A run id as execute() makes them: the UTC time and 6 hex digits of entropy (20261130T161824Z-bf13e6).
std::string new_run_id(std::uint64_t entropy);

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
