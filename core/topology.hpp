#pragma once
// Online CPUs and how they share cores, last-level caches and NUMA nodes, read from sysfs.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/host_paths.hpp"

namespace schedlab {

struct CpuTopology {
  int cpu = 0;
  int package = 0;
  int core = 0;                   // core_id within the package
  int llc = -1;                   // lowest CPU number sharing this CPU's last-level cache (-1 unknown)
  int node = 0;                   // NUMA node
  std::vector<int> smt_siblings;  // including this CPU
};

struct Topology {
  std::vector<CpuTopology> cpus;  // online CPUs, ascending

  const CpuTopology* find(int cpu) const;
  bool same_core(int a, int b) const;
  bool same_llc(int a, int b) const;
  bool same_node(int a, int b) const;
  bool smt_active() const;
  int llc_count() const;
  int node_count() const;
  nlohmann::json to_json() const;
};

Topology read_topology(const HostPaths& paths);

}  // namespace schedlab
