#pragma once
// Runs one repetition of a workload in a child process: isolated (cgroup leaf or process
// group), counted by the sources from before its first instruction of work, bounded by a
// time limit after which everything it started is killed, and by a memory limit if given.
#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collector/runner/isolation.hpp"
#include "collector/runner/workload_user.hpp"
#include "collector/source.hpp"
#include "core/result.hpp"
#include "workloads/workload.hpp"

namespace schedlab {

struct RepetitionRequest {
  Workload* workload = nullptr;
  const ParamValues* params = nullptr;
  const WorkloadContext* context = nullptr;
  std::vector<std::unique_ptr<Source>> sources;
  double timeout_s = 120;
  IsolationMode isolation = IsolationMode::kAuto;
  std::string leaf_name = "schedlab";
  std::filesystem::path cgroup2_parent;                 // where the v2 leaf is made; empty: our own cgroup
  std::vector<std::filesystem::path> extra_cgroups_v1;  // v1 groups the child also joins
  std::optional<std::uint64_t> memory_limit_bytes;  // the repetition's memory cgroup limit; none: unlimited
  std::optional<WorkloadUser> run_as;  // the workload's process drops to this user; nullopt: stays as we are
  std::string why_root;                // a workload user was asked for, and this instance needs root because
  const volatile std::sig_atomic_t* interrupted = nullptr;  // set by a signal handler: stop now
};

Repetition run_repetition(RepetitionRequest& request);

}  // namespace schedlab
