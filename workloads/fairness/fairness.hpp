#pragma once
#include "workloads/workload.hpp"

namespace schedlab {

// N CPU-bound threads with given nice values, pinned to one CPU (or placed), each one's share of CPU
// time against the share its weight in the kernel's nice-to-weight table entitles it to, and how long
// the lightest was kept off the CPU. See README.md in this folder.
class FairnessWorkload : public Workload {
 public:
  std::string name() const override { return "fairness"; }
  std::string version() const override { return "1.0.0"; }
  std::string summary() const override;
  std::string experiment() const override;
  std::vector<ParamSpec> params() const override;
  std::vector<MetricDesc> metrics() const override;
  std::map<std::string, std::map<std::string, std::string>> quick_instances() const override;
  void validate(const ParamValues& params, const WorkloadContext& ctx) const override;
  WorkloadResult run(const ParamValues& params, const WorkloadContext& ctx) override;
  std::vector<int> cpus(const ParamValues& params, const WorkloadContext& ctx) const override;
  std::string needs_root(const ParamValues& params, const WorkloadContext& ctx) const override;
};

}  // namespace schedlab
