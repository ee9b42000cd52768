#pragma once
#include <linux/perf_event.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collector/perf/cpu_window.hpp"
#include "collector/perf/pfm.hpp"
#include "collector/source.hpp"

namespace schedlab {

// perf_event_open, behind a seam: returns an fd, or -errno.
using PerfOpener =
    std::function<int(perf_event_attr& attr, pid_t pid, int cpu, int group_fd, unsigned long flags)>;
PerfOpener system_perf_opener();

// One fd's read (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING).
struct CountReadout {
  std::uint64_t value = 0, time_enabled_ns = 0, time_running_ns = 0;
};
// Fills a reading from its fds' readouts: each scaled by enabled/running when it was multiplexed (ran
// on a counter for part of the time it was enabled), then summed; `not-counted` when none ever ran.
void apply_readouts(CounterReading& reading, const std::vector<CountReadout>& readouts);

// What to tell the user for a failed perf_event_open.
std::string perf_open_advice(int err);

// Where counting happens, and what it costs the counted workload (issue #22):
//   kSystem    per CPU on the CPUs the workload may use, every task there (pid -1). The events stay on
//              their CPU: nothing is switched at a context switch (cost class "constant"); what else ran
//              on those CPUs is measured (CounterWindow) and a count it inflated is flagged.
//   kCgroup    per CPU on the repetition's cgroup: the kernel switches the events in and out whenever a
//              CPU passes between the cgroup and another ("per-switch").
//   kTaskTree  per task, inherited by the tree: every switch of a counted task switches its events
//              ("per-switch"); what `perf stat` does.
//   kAuto      kSystem, or kTaskTree where counting on CPUs is not permitted (perf_event_paranoid > 0
//              without CAP_PERFMON); the reason is in each counter's note.
// Two software events are read from the kernel's own accounting in kSystem and kAuto (cost class "none",
// `source` says where from), because counted on CPUs they cost or say too little:
//   context-switches  counted in the switch path itself, whatever the scope (~250 ns a switch on this VM,
//                     even system wide): the voluntary + involuntary switches of the reaped tree (rusage).
//   task-clock        on a CPU it is the window's wall time, idle included: the CPU time of the
//                     repetition's cgroup (cpu.stat usage_usec), else of the reaped tree (rusage).
// Both are the workload's own, never contaminated by the CPUs' other tasks. --attribution and the
// cgroup and task scopes count them with perf.
enum class CounterScope { kAuto, kSystem, kCgroup, kTaskTree };
CounterScope parse_counter_scope(const std::string& text);  // auto | system | cgroup | task
std::string to_string(CounterScope scope);

// An event that does not encode or open is recorded as unsupported with its errno; one event
// per fd (no groups), so that inheritance works on every kernel; multiplexing is scaled with
// time_enabled/time_running per fd, and the reading keeps both times and the scaling.
class PerfSource : public Source {
 public:
  explicit PerfSource(std::vector<std::string> events, CounterScope scope = CounterScope::kAuto,
                      PerfOpener opener = system_perf_opener(), HostPaths paths = HostPaths::live());
  ~PerfSource() override;
  PerfSource(const PerfSource&) = delete;
  PerfSource& operator=(const PerfSource&) = delete;

  std::string name() const override { return "perf"; }
  void attach(const AttachTarget& target) override;
  void enable() override;
  void collect(Repetition& rep) override;

 private:
  struct Counter {
    EncodedEvent event;
    std::vector<int> fds;  // one per CPU for the system and cgroup scopes, one for the task tree
    std::string scope;
    int open_errno = 0;
    std::string open_reason;
    std::string fallback_note;     // why the automatic scope fell back to the task tree
    bool from_accounting = false;  // read from the kernel's accounting instead of a perf event (see above)
  };
  bool open_per_cpu(Counter& c, int pid_or_cgroup_fd, const std::vector<int>& cpus, unsigned long flags,
                    const std::string& what);
  bool open_on_cpus(Counter& c, const AttachTarget& target);
  bool open_on_cgroup(Counter& c, const AttachTarget& target);
  bool open_on_task_tree(Counter& c, const AttachTarget& target);
  // The workload's CPU time from the kernel's accounting: its cgroup's cpu.stat, else its tree's rusage.
  struct WorkloadCpu {
    std::optional<double> seconds;
    bool from_cgroup = false;
  };
  WorkloadCpu workload_cpu(const Repetition& rep) const;
  CounterReading read(Counter& c) const;
  CounterReading read_accounting(const Counter& c, const Repetition& rep,
                                 const WorkloadCpu& workload_cpu) const;
  void note_window(Repetition& rep, const WorkloadCpu& workload_cpu);
  void close_all();

  std::vector<std::string> events_;
  CounterScope scope_;
  PerfOpener opener_;
  HostPaths paths_;
  std::vector<Counter> counters_;
  AttachTarget target_;
  // The busy time of the counted CPUs when counting started, for the window (kSystem only).
  std::optional<CpuBusy> busy_before_;
  std::string busy_why_;
  double enabled_at_s_ = 0;
};

}  // namespace schedlab
