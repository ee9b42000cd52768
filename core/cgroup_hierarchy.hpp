#pragma once
// Where a cgroup controller can be used: cgroup v1's own hierarchy for it (this machine mounts cpu and
// memory apart, beside an empty v2 one) or the v2 unified hierarchy when its root offers it. Read from
// /proc/self/mountinfo and /proc/self/cgroup under a HostPaths, so tests can point it at captures.
#include <filesystem>
#include <optional>
#include <string>

#include "core/host_paths.hpp"

namespace schedlab {

struct ControllerHierarchy {
  int version = 0;              // 1 or 2
  std::filesystem::path mount;  // where the hierarchy is mounted
  // v1: this process's group in it ("4:memory:/user.slice"), so a container's limits still hold; the
  // mount when that group is not visible. v2: the mount (our own group holds processes, and a domain
  // controller cannot be enabled below a group with processes).
  std::filesystem::path parent;
};

// nullopt with `why` set when neither hierarchy offers `controller`.
std::optional<ControllerHierarchy> find_controller_hierarchy(const HostPaths& paths,
                                                             const std::string& controller, std::string& why);

// Where cgroup2 is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid hierarchy), or "".
std::filesystem::path cgroup2_mount(const HostPaths& paths);

}  // namespace schedlab
