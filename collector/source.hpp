#pragma once
// A per-repetition collection source. The runner attaches each source to the repetition's
// process before the workload starts, enables them together, and collects after the process
// tree has exited. Sources must not poll while the workload runs: they read at the boundaries.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace schedlab {

// What a source measures: the repetition's process tree, which is alone in `cgroup` when
// the runner could give it a cgroup v2 leaf.
struct AttachTarget {
  pid_t pid = -1;
  std::filesystem::path cgroup;    // empty: no cgroup of its own
  std::vector<int> cpus;           // online CPUs
  std::vector<int> workload_cpus;  // the CPUs the workload may use (Workload::cpus); empty: `cpus`
};

class Source {
 public:
  virtual ~Source() = default;
  virtual std::string name() const = 0;
  virtual void attach(const AttachTarget& target) = 0;  // the process waits before its workload
  virtual void enable() = 0;
  // After the tree exited and was reaped (rep.rusage holds its CPU time), before its cgroup goes.
  virtual void collect(Repetition& rep) = 0;
};

}  // namespace schedlab
