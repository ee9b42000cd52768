#include "core/topology.hpp"

#include <algorithm>
#include <set>

namespace schedlab {
namespace {

int read_int(const std::filesystem::path& p, int fallback) {
  auto line = read_line(p);
  if (!line) return fallback;
  try {
    return std::stoi(*line);
  } catch (...) {
    return fallback;
  }
}

// The highest-level unified or data cache of the CPU: its shared_cpu_list names the LLC group.
int read_llc(const std::filesystem::path& cpu_dir) {
  int best_level = -1, llc = -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cpu_dir / "cache", ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("index", 0) != 0) continue;
    auto type = read_line(entry.path() / "type");
    if (type && *type == "Instruction") continue;
    int level = read_int(entry.path() / "level", -1);
    auto shared = read_line(entry.path() / "shared_cpu_list");
    if (level > best_level && shared) {
      auto cpus = parse_cpu_list(*shared);
      if (!cpus.empty()) {
        best_level = level;
        llc = cpus.front();
      }
    }
  }
  return llc;
}

}  // namespace

const CpuTopology* Topology::find(int cpu) const {
  for (const auto& c : cpus)
    if (c.cpu == cpu) return &c;
  return nullptr;
}

bool Topology::same_core(int a, int b) const {
  auto *x = find(a), *y = find(b);
  return x && y && x->package == y->package && x->core == y->core;
}

bool Topology::same_llc(int a, int b) const {
  auto *x = find(a), *y = find(b);
  return x && y && x->llc >= 0 && x->llc == y->llc;
}

bool Topology::same_node(int a, int b) const {
  auto *x = find(a), *y = find(b);
  return x && y && x->node == y->node;
}

bool Topology::smt_active() const {
  return std::any_of(cpus.begin(), cpus.end(),
                     [](const CpuTopology& c) { return c.smt_siblings.size() > 1; });
}

int Topology::llc_count() const {
  std::set<int> s;
  for (const auto& c : cpus) s.insert(c.llc);
  return static_cast<int>(s.size());
}

int Topology::node_count() const {
  std::set<int> s;
  for (const auto& c : cpus) s.insert(c.node);
  return static_cast<int>(s.size());
}

nlohmann::json Topology::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : cpus)
    list.push_back({{"cpu", c.cpu},
                    {"package", c.package},
                    {"core", c.core},
                    {"llc", c.llc},
                    {"node", c.node},
                    {"smt_siblings", format_cpu_list(c.smt_siblings)}});
  return {{"online_cpus", static_cast<int>(cpus.size())},
          {"smt_active", smt_active()},
          {"llc_groups", llc_count()},
          {"numa_nodes", node_count()},
          {"cpus", list}};
}

Topology read_topology(const HostPaths& paths) {
  const auto cpu_root = paths.sys / "devices/system/cpu";
  Topology topo;
  auto online = read_line(cpu_root / "online");
  if (!online) return topo;
  std::vector<std::pair<int, std::vector<int>>> nodes;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(paths.sys / "devices/system/node", ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("node", 0) != 0 || name.size() == 4 || !std::isdigit(static_cast<unsigned char>(name[4])))
      continue;
    auto list = read_line(entry.path() / "cpulist");
    if (list) nodes.emplace_back(std::stoi(name.substr(4)), parse_cpu_list(*list));
  }
  for (int cpu : parse_cpu_list(*online)) {
    const auto dir = cpu_root / ("cpu" + std::to_string(cpu));
    CpuTopology t;
    t.cpu = cpu;
    t.package = read_int(dir / "topology/physical_package_id", 0);
    t.core = read_int(dir / "topology/core_id", cpu);
    auto siblings = read_line(dir / "topology/thread_siblings_list");
    t.smt_siblings = siblings ? parse_cpu_list(*siblings) : std::vector<int>{cpu};
    t.llc = read_llc(dir);
    for (const auto& [node, cpus] : nodes)
      if (std::find(cpus.begin(), cpus.end(), cpu) != cpus.end()) t.node = node;
    topo.cpus.push_back(std::move(t));
  }
  return topo;
}

}  // namespace schedlab
