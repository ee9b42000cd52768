#pragma once
// Where a repetition's processes live, so that all of them can be killed and accounted:
// a cgroup v2 leaf where the hierarchy is writable (cgroup.kill reaches even a task that
// called setsid()), a process group otherwise (with a sweep of our descendants for escapees).
#include <sys/types.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/host_paths.hpp"

namespace schedlab {

enum class IsolationMode { kAuto, kCgroup, kProcessGroup };
IsolationMode parse_isolation_mode(const std::string& text);  // auto | cgroup | process-group

class Isolation {
 public:
  virtual ~Isolation() = default;
  virtual std::string mode() const = 0;
  // Puts the (not yet started) process in; throws SystemError on failure.
  virtual void adopt(pid_t pid) = 0;
  // Number of processes still inside and living on: not counting those already reaped, exiting, or
  // with SIGKILL pending (what the workload itself killed, still leaving on a loaded machine).
  virtual int live_processes() const = 0;
  // Kills everything inside and waits (bounded) until it is gone. Returns how many were killed.
  virtual int kill_all() = 0;
  virtual nlohmann::json describe() const = 0;  // mode, path, cpu.stat, why a fallback was taken
  virtual std::filesystem::path cgroup_dir() const { return {}; }  // empty unless a cgroup leaf
};

// kAuto: a cgroup leaf when possible, else a process group with the reason recorded. The leaf is made
// below `parent` when given (a runtime configuration's cgroup with cpu.max), below our own cgroup otherwise;
// a given parent that cannot hold it is an error, never a silent fallback.
std::unique_ptr<Isolation> make_isolation(IsolationMode mode, const std::string& leaf_name,
                                          const HostPaths& paths = HostPaths::live(),
                                          const std::filesystem::path& parent = {});

// The cgroup v2 directory this process belongs to (wherever cgroup2 is mounted: /sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid hierarchy), or "" with `why` set.
std::filesystem::path own_cgroup_dir(const HostPaths& paths, std::string& why);

// SIGKILLs every process in the cgroup v2 directory `dir` and in the cgroups below it (cgroup.kill
// where the kernel has it, 5.14+; one by one otherwise), and waits until they are gone or `timeout_s`
// passed. Returns how many processes were inside. A missing directory is 0.
int kill_cgroup_tree(const std::filesystem::path& dir, double timeout_s);

// Removes the (empty) cgroup directory `dir`, waiting up to `timeout_s` while the kernel still reports it
// busy (EBUSY: a group whose last process was just killed or reaped). False when it is still there.
bool remove_cgroup_dir(const std::filesystem::path& dir, double timeout_s);

// All live descendants of `ancestor` (from /proc), children before grandchildren.
std::vector<pid_t> descendants_of(pid_t ancestor, const HostPaths& paths = HostPaths::live());

// SIGKILLs every descendant of this process (after a subreaper adopted them) and reaps direct
// children among them, until none is left or `timeout_s` passed. Returns how many were killed.
int kill_descendants(double timeout_s);

}  // namespace schedlab
