#pragma once
// wakeup.load=kernbench: kernbench's default generated tree rebuilt in a loop (make clean, make
// -j 2 x CPUs) beside the waking threads — the X-plus-kernel-compile scenario of the
// place_entity() report. The loop runs in its own process group, so stopping it kills make and
// every compiler it started.
#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "workloads/workload.hpp"

namespace schedlab {

class KernbenchLoad {
 public:
  // Prepares the tree (untimed, generated once into the cache) and starts the loop at nice value
  // `nice` (make's children inherit it). Call it before the process starts threads: it forks.
  // Throws SystemError when the loop cannot take that nice value (a negative one without
  // CAP_SYS_NICE).
  KernbenchLoad(const WorkloadContext& ctx, int nice);
  ~KernbenchLoad();  // kills the loop's process group and reaps it
  KernbenchLoad(const KernbenchLoad&) = delete;
  KernbenchLoad& operator=(const KernbenchLoad&) = delete;
  nlohmann::json describe() const { return describe_; }

 private:
  void stop();  // kills the loop's process group and reaps it
  pid_t pid_ = -1;
  nlohmann::json describe_;
};

}  // namespace schedlab
