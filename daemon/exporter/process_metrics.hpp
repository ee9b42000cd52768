#pragma once
// The standard process_* metrics of the Prometheus client libraries (client_golang's process
// collector), which prometheus-cpp does not provide, read from /proc through the HostPaths seam so a
// test can point them at a capture.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "core/host_paths.hpp"

namespace schedlab {

struct ProcessSample {
  std::optional<double> cpu_seconds;         // utime + stime of /proc/PID/stat, over the clock tick
  std::optional<double> resident_bytes;      // statm's resident pages x page size
  std::optional<double> virtual_bytes;       // stat's vsize
  std::optional<double> start_time_seconds;  // /proc/stat btime + stat's starttime / clock tick
  std::optional<double> open_fds;            // entries of /proc/PID/fd
  std::optional<double> max_fds;             // soft "Max open files" of /proc/PID/limits
};

struct ProcessClock {
  long ticks_per_second;  // sysconf(_SC_CLK_TCK)
  long page_size;         // sysconf(_SC_PAGESIZE)
  static ProcessClock live();
};

// A field that cannot be read or parsed stays nullopt: a scrape never fails for it.
ProcessSample read_process_sample(const HostPaths& paths, const std::string& pid, const ProcessClock& clock);

class ProcessCollector : public prometheus::Collectable {
 public:
  ProcessCollector(HostPaths paths, std::string pid, ProcessClock clock)
      : paths_(std::move(paths)), pid_(std::move(pid)), clock_(clock) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  HostPaths paths_;
  std::string pid_;
  ProcessClock clock_;
};

}  // namespace schedlab
