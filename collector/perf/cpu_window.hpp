#pragma once
// What ran on the counted CPUs while counters counted there system-wide (issue #22). Counting on CPUs
// costs nothing per context switch, but it counts every task on those CPUs: the window record says how
// much CPU time there was the workload's, other tasks', and idle, so that a reader knows how much of each
// count is not the workload's, and a counter is flagged `contaminated` when other tasks had more than a
// few percent of the busy time.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/host_paths.hpp"

namespace schedlab {

// Busy (non-idle) time per CPU from the most precise source this kernel offers:
//   cpuacct    the cgroup v1 root's cpuacct.usage_percpu (ns, every task, brought up to date at each
//              tick and switch, so up to a tick behind: hosts with a v1 cpuacct hierarchy, like this one)
//   proc-stat  /proc/stat user+nice+system+irq+softirq (USER_HZ ticks: 10 ms per CPU per reading)
// Not /proc/schedstat's rq_cpu_time: it grows only when a task leaves the CPU, so a task running through
// a window's edge is missing from it, by an amount with no bound.
struct CpuBusy {
  std::string source;
  double resolution_s = 0;       // per CPU and reading
  std::map<int, double> busy_s;  // by CPU number
};

// The busy time of `cpus`, or nullopt with `why` saying what no source could give.
std::optional<CpuBusy> read_cpu_busy(const HostPaths& paths, const std::vector<int>& cpus, std::string& why);

// Parsers of the sources' texts (exposed for the fixture tests); nullopt when a CPU is missing.
std::optional<std::map<int, double>> busy_from_cpuacct(const std::string& usage_percpu,
                                                       const std::vector<int>& cpus);
std::optional<std::map<int, double>> busy_from_proc_stat(const std::string& text,
                                                         const std::vector<int>& cpus, long ticks_per_s);

// Other tasks' share of the busy time above which a system-scope count is flagged `contaminated`.
inline constexpr double kContaminationShare = 0.03;

struct CounterWindow {
  std::vector<int> cpus;
  double elapsed_s = 0;   // wall time between the two readings
  double busy_s = 0;      // summed over the CPUs
  double workload_s = 0;  // the workload's CPU time (its cgroup's, else its process tree's)
  std::string workload_source;
  double other_s = 0;      // busy - workload, not below 0
  double idle_s = 0;       // elapsed x CPUs - busy, not below 0
  double other_share = 0;  // other / busy
  double idle_share = 0;   // idle / (elapsed x CPUs)
  std::string busy_source;
  double resolution_s = 0;    // of busy_s: the source's per-CPU resolution x 2 readings x CPUs
  bool contaminated = false;  // other_share above the threshold by more than the resolution allows

  nlohmann::json to_json() const;
};

// From two busy readings of the same source (`after` later) and the workload's CPU time.
CounterWindow make_window(const CpuBusy& before, const CpuBusy& after, double elapsed_s, double workload_s,
                          std::string workload_source);

// The workload's CPU time from its cgroup v2 leaf (cpu.stat usage_usec), nullopt without one.
std::optional<double> cgroup_cpu_seconds(const std::filesystem::path& cgroup_dir);

}  // namespace schedlab
