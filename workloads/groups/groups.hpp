#pragma once
#include "workloads/workload.hpp"

namespace schedlab {

// hackbench: groups of sender and receiver tasks (processes or threads) passing small messages over
// AF_UNIX socketpairs or pipes; the time from the start signal to the last task gone. See README.md.
class GroupsWorkload : public Workload {
 public:
  std::string name() const override { return "groups"; }
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
