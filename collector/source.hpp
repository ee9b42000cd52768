#pragma once
// A per-repetition collection source. The runner attaches each source to the repetition's
// process before the workload starts, enables them together, and collects after the process
// tree has exited. Sources must not poll while the workload runs: they read at the boundaries.
#include <sys/types.h>

#include <string>

#include "core/result.hpp"

namespace schedlab {

class Source {
 public:
  virtual ~Source() = default;
  virtual std::string name() const = 0;
  virtual void attach(pid_t pid) = 0;  // the process is stopped before its workload
  virtual void enable() = 0;
  virtual void collect(Repetition& rep) = 0;  // after the tree exited
};

}  // namespace schedlab
