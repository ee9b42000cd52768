#pragma once
// Before a workload starts: wait (bounded) for the machine to be quiet, and record what was seen.
#include <nlohmann/json.hpp>

#include "core/host_paths.hpp"

namespace schedlab {

struct SettlePolicy {
  double max_wait_s = 10;
  double max_load_per_cpu = 0.5;  // 1-minute load average per online CPU
  int max_running = 1;            // procs_running, counting ourselves
};

// {"settled": bool, "waited_s", "load1", "procs_running", "cpus", thresholds...}
nlohmann::json settle(const SettlePolicy& policy, int cpus, const HostPaths& paths = HostPaths::live());

}  // namespace schedlab
