#pragma once
// Where the cpu controller is (cgroup v1's own hierarchy, as on this machine, or cgroup v2's unified
// one) and the workload cgroup a configuration's weight and bandwidth go on.
#include <filesystem>
#include <optional>
#include <string>

#include "core/host_paths.hpp"

namespace schedlab::runtime {

struct CpuController {
  int version = 0;               // 1 or 2
  std::filesystem::path parent;  // where our group is made: v1 our own cpu cgroup, v2 the root
  std::filesystem::path mount;
};

// nullopt with `why` set when no cpu controller can be used.
std::optional<CpuController> find_cpu_controller(const HostPaths& paths, std::string& why);

// v2 weight 1..10000 (default 100) as v1 cpu.shares (default 1024), as systemd maps CPUWeight.
long shares_for_weight(long weight);

}  // namespace schedlab::runtime
