#pragma once
// System-wide scheduler evidence over a repetition, from /proc: CPU time per CPU split as
// /proc/stat splits it (steal decides what a VM's timings mean), context switches and forks, the
// rescheduling, function-call and TLB-shootdown IPIs of /proc/interrupts, and the SCHED softirq.
// Totals become counters with scope "system" (so `diff` shows them beside the perf counters);
// per-CPU deltas go to the repetition's "system" object. A file that cannot be read or parsed makes
// its counters `unsupported` with the reason, never a guess.
#include <optional>
#include <string>

#include "collector/source.hpp"
#include "collector/sysstats/proc_reading.hpp"
#include "collector/sysstats/proc_tables.hpp"
#include "core/host_paths.hpp"

namespace schedlab {

class SystemStatsSource : public Source {
 public:
  explicit SystemStatsSource(HostPaths paths = HostPaths::live());

  std::string name() const override { return "system"; }
  void attach(const AttachTarget&) override {}
  void enable() override;
  void collect(Repetition& rep) override;

  struct Snapshot {
    ProcReading<ProcStat> stat;
    ProcReading<PerCpuTable> interrupts, softirqs;
  };

 private:
  Snapshot take() const;

  HostPaths paths_;
  long ticks_per_s_;
  Snapshot before_;
};

}  // namespace schedlab
