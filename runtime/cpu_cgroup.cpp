#include "runtime/cpu_cgroup.hpp"

#include <algorithm>

#include "core/cgroup_hierarchy.hpp"

namespace schedlab::runtime {

long shares_for_weight(long weight) {
  return std::max(2L, weight * 1024 / 100);
}

std::optional<CpuController> find_cpu_controller(const HostPaths& paths, std::string& why) {
  const auto where = find_controller_hierarchy(paths, "cpu", why);
  if (!where) return std::nullopt;
  return CpuController{where->version, where->parent, where->mount};
}

}  // namespace schedlab::runtime
