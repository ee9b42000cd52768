#pragma once
// `--trace`: the sched_switch, sched_wakeup(_new), sched_migrate_task and sched_process_fork
// tracepoints on every CPU through perf_event_open (no PMU needed), one ring per CPU, summarised
// per task of the workload after the repetition (sched_trace.hpp) into Repetition::trace.
#include <map>
#include <string>
#include <vector>

#include "collector/perf/perf_source.hpp"
#include "collector/perf/ring_set.hpp"
#include "collector/source.hpp"
#include "collector/trace/sched_trace.hpp"
#include "collector/trace/tracefs.hpp"
#include "core/host_paths.hpp"

namespace schedlab {

class TraceSource : public Source {
 public:
  explicit TraceSource(HostPaths paths = HostPaths::live(), PerfOpener opener = system_perf_opener());

  std::string name() const override { return "trace"; }
  void attach(const AttachTarget& target) override;
  void enable() override;
  void collect(Repetition& rep) override;

  static constexpr std::size_t kListedTasks = 20;  // the busiest; totals cover every task

 private:
  // Field offsets are looked up once at attach (where a missing field is an error to report),
  // never on the drainer thread.
  struct Decoder {
    SchedEvent::Kind kind;
    TracepointFormat format;
    TracepointField pid, other, state, comm;
  };
  static Decoder decoder_for(SchedEvent::Kind kind, TracepointFormat format);
  void open_all(const AttachTarget& target);
  void decode(const unsigned char* payload, std::size_t size);

  HostPaths paths_;
  PerfOpener opener_;
  RingSet rings_;
  std::vector<Decoder> decoders_;
  std::vector<SchedEvent> events_;
  std::map<pid_t, std::string> comms_;
  std::uint64_t lost_ = 0;
  pid_t root_ = -1;
  std::string note_;
  int open_errno_ = 0;
  std::string open_reason_;
};

}  // namespace schedlab
