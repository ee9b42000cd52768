#pragma once
#include "workloads/workload.hpp"

namespace schedlab {

// Scheduler primitives measured in-process by Google Benchmark: sched_yield, a pipe and a futex
// ping-pong between two threads, thread creation, a migration, clock_nanosleep. One primitive
// per instance, so the runner's counters of a repetition divide into counters per operation.
// See README.md in this folder.
class MicroWorkload : public Workload {
 public:
  std::string name() const override { return "micro"; }
  std::string version() const override { return "1.0.0"; }
  std::string summary() const override;
  std::string experiment() const override;
  std::vector<ParamSpec> params() const override;
  std::vector<MetricDesc> metrics() const override;
  std::map<std::string, std::map<std::string, std::string>> quick_instances() const override;
  void validate(const ParamValues& params, const WorkloadContext& ctx) const override;
  WorkloadResult run(const ParamValues& params, const WorkloadContext& ctx) override;
};

}  // namespace schedlab
