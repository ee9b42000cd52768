#pragma once
#include <linux/perf_event.h>

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

// Counts each event for the attached process tree (inherit=1), one event per fd so that
// inheritance works on every kernel; multiplexing is scaled with time_enabled/time_running.
// An event that does not encode or open is recorded as unsupported with its errno.
class PerfSource : public Source {
 public:
  explicit PerfSource(std::vector<std::string> events, PerfOpener opener = system_perf_opener());
  ~PerfSource() override;
  PerfSource(const PerfSource&) = delete;
  PerfSource& operator=(const PerfSource&) = delete;

  std::string name() const override { return "perf"; }
  void attach(pid_t pid) override;
  void enable() override;
  void collect(Repetition& rep) override;

 private:
  struct Counter {
    EncodedEvent event;
    int fd = -1;
    int open_errno = 0;
    std::string open_reason;
  };
  void close_all();

  std::vector<std::string> events_;
  PerfOpener opener_;
  std::vector<Counter> counters_;
};

}  // namespace schedlab
