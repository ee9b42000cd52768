#pragma once
#include "workloads/workload.hpp"

namespace schedlab {

// T threads each sleeping to an absolute deadline every P us and recording how late they ran,
// idle or under load. See README.md in this folder.
class WakeupWorkload : public Workload {
 public:
  std::string name() const override { return "wakeup"; }
  std::string version() const override { return "1.0.0"; }
  std::string summary() const override;
  std::string experiment() const override;
  std::vector<ParamSpec> params() const override;
  std::vector<MetricDesc> metrics() const override;
  std::map<std::string, std::map<std::string, std::string>> quick_instances() const override;
  bool records_latency_histogram() const override { return true; }
  void validate(const ParamValues& params, const WorkloadContext& ctx) const override;
  WorkloadResult run(const ParamValues& params, const WorkloadContext& ctx) override;
  std::vector<int> cpus(const ParamValues& params, const WorkloadContext& ctx) const override;
  std::string needs_root(const ParamValues& params, const WorkloadContext& ctx) const override;
};

}  // namespace schedlab
