#pragma once
// A memory limit around one repetition. Its processes are in a memory cgroup whose limit the kernel
// enforces, so a workload that fills memory meets the OOM killer inside its own group, at its limit,
// instead of taking the lab box (and the daemon, or the ssh session) with it. Swap is limited too where
// the kernel accounts it, so the limit is on memory, not on memory plus a thrashing disk.
//   cgroup v1 (this machine: memory mounted apart): a group of its own below ours, which the repetition
//   joins beside its isolation; v2: memory.max (and memory.oom.group) on the repetition's own leaf.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/cgroup_hierarchy.hpp"

namespace schedlab {

// "512M", "2G", "64K", "1073741824" (bytes; K, M, G, T are powers of 1024, as in cgroup files). Throws
// InputError naming `what` (the option; "" where the caller names the key) for anything else, for 0, and for
// values past 2^63.
std::uint64_t parse_memory_size(const std::string& text, const std::string& what);
std::string format_memory_size(std::uint64_t bytes);  // "64 MiB", "1.5 GiB"

// Where a limit can be put, or nullopt with `why`: the memory controller's hierarchy.
std::optional<ControllerHierarchy> find_memory_controller(const HostPaths& paths, std::string& why);

class MemoryLimit {
 public:
  // v1: makes the group `leaf_name` below where.parent with the limit. v2: nothing yet; see apply_to_leaf.
  // Throws Error naming the file the kernel refused.
  MemoryLimit(std::uint64_t bytes, ControllerHierarchy where, const std::string& leaf_name);
  ~MemoryLimit();  // v1: removes the group (after its processes are gone)
  MemoryLimit(const MemoryLimit&) = delete;
  MemoryLimit& operator=(const MemoryLimit&) = delete;

  // v2: the repetition's leaf, made below where.parent, gets the limit (it must offer the memory controller).
  void apply_to_leaf(const std::filesystem::path& cgroup2_leaf);
  // Puts the (not yet started) process in the group; v2: nothing, the leaf's processes are.
  void adopt(pid_t pid);

  std::uint64_t bytes() const { return bytes_; }
  // Processes the kernel's OOM killer killed inside the group so far (-1: the kernel does not say).
  long oom_kills() const;
  // bytes, cgroup, version, peak_bytes and oom_kills as the kernel reports them.
  nlohmann::json describe() const;

 private:
  std::uint64_t bytes_;
  ControllerHierarchy where_;
  std::filesystem::path dir_;  // the group the limit is on
  bool own_group_ = false;     // v1: we made it, we remove it
};

}  // namespace schedlab
