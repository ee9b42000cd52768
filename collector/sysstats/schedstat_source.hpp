#pragma once
// /proc/schedstat over a repetition: per-CPU scheduler counters summed over CPUs as counters
// (`schedstat.sched_count`, `schedstat.yld_count`, `schedstat.run_delay_s`, ...; scope "system") plus
// load-balance and wakeup-placement totals over all domains; per-CPU and per-domain deltas go to the
// repetition's system.schedstat. A kernel without the file (CONFIG_SCHEDSTATS off) gives `unsupported`.
// Whether the kernel was counting (kernel.sched_schedstats) is recorded. Only a source made with
// SchedstatsSwitch::kOnForRepetition switches it on (for diagnostic repetitions: counting costs work
// at every enqueue and wakeup) and restores the old value after the repetition.
#include <string>

#include "collector/source.hpp"
#include "collector/sysstats/proc_reading.hpp"
#include "collector/sysstats/schedstat.hpp"
#include "core/host_paths.hpp"

namespace schedlab {

enum class SchedstatsSwitch { kAsFound, kOnForRepetition };

class SchedstatSource : public Source {
 public:
  explicit SchedstatSource(HostPaths paths = HostPaths::live(),
                           SchedstatsSwitch mode = SchedstatsSwitch::kAsFound);
  ~SchedstatSource() override;
  SchedstatSource(const SchedstatSource&) = delete;
  SchedstatSource& operator=(const SchedstatSource&) = delete;

  std::string name() const override { return "schedstat"; }
  void attach(const AttachTarget&) override;
  void enable() override;
  void collect(Repetition& rep) override;

 private:
  ProcReading<Schedstat> read() const;

  void restore();

  HostPaths paths_;
  SchedstatsSwitch mode_;
  std::string switched_from_;  // the sysctl's value before we switched it on; empty: untouched
  std::string switch_error_;
  ProcReading<Schedstat> before_;
};

}  // namespace schedlab
