#pragma once
#include <linux/perf_event.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "collector/perf/pfm.hpp"
#include "collector/source.hpp"

namespace schedlab {

// perf_event_open, behind a seam: returns an fd, or -errno.
using PerfOpener =
    std::function<int(perf_event_attr& attr, pid_t pid, int cpu, int group_fd, unsigned long flags)>;
PerfOpener system_perf_opener();

// What to tell the user for a failed perf_event_open.
std::string perf_open_advice(int err);

// Where counting happens. kAuto counts per CPU on the repetition's cgroup when it has one:
// such events stay scheduled while tasks of one cgroup switch among themselves, so a
// switch-heavy workload pays nothing per switch. Per-task counting (inherit=1 on the process
// tree) is the fallback and costs work at every context switch.
enum class CounterScope { kAuto, kTaskTree };
CounterScope parse_counter_scope(const std::string& text);  // auto | task

// An event that does not encode or open is recorded as unsupported with its errno; one event
// per fd (no groups), so that inheritance works on every kernel; multiplexing is scaled with
// time_enabled/time_running.
class PerfSource : public Source {
 public:
  explicit PerfSource(std::vector<std::string> events, CounterScope scope = CounterScope::kAuto,
                      PerfOpener opener = system_perf_opener());
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
    std::vector<int> fds;  // one per CPU for the cgroup scope, one for the task tree
    std::string scope;
    int open_errno = 0;
    std::string open_reason;
  };
  bool open_on_cgroup(Counter& c, const AttachTarget& target);
  bool open_on_task_tree(Counter& c, const AttachTarget& target);
  CounterReading read(Counter& c) const;
  void close_all();

  std::vector<std::string> events_;
  CounterScope scope_;
  PerfOpener opener_;
  std::vector<Counter> counters_;
};

}  // namespace schedlab
