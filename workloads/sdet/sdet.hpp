#pragma once
#include "workloads/workload.hpp"

namespace schedlab {

// SDET-style multi-user throughput: U user processes, each running a set of short shell scripts of
// common commands in its own order and directory; scripts per hour. See README.md here.
class SdetWorkload : public Workload {
 public:
  std::string name() const override { return "sdet"; }
  std::string version() const override { return "1.0.0"; }
  std::string summary() const override;
  std::string experiment() const override;
  std::vector<ParamSpec> params() const override;
  std::vector<MetricDesc> metrics() const override;
  std::map<std::string, std::map<std::string, std::string>> quick_instances() const override;
  void validate(const ParamValues& params, const WorkloadContext& ctx) const override;
  WorkloadResult run(const ParamValues& params, const WorkloadContext& ctx) override;
  std::vector<int> cpus(const ParamValues& params, const WorkloadContext& ctx) const override;
};

}  // namespace schedlab
