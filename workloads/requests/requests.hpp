#pragma once
#include "workloads/workload.hpp"

namespace schedlab {

// schbench-style request pools: message threads hand requests to their workers through futex
// wakeups; workers sleep, do a fixed matrix-multiply work over their cache footprint, and record
// how long their wakeups and requests took. See README.md here.
class RequestsWorkload : public Workload {
 public:
  std::string name() const override { return "requests"; }
  std::string version() const override { return "1.0.0"; }
  std::string summary() const override;
  std::string experiment() const override;
  std::vector<ParamSpec> params() const override;
  std::vector<MetricDesc> metrics() const override;
  std::map<std::string, std::map<std::string, std::string>> quick_instances() const override;
  bool records_latency_histogram() const override { return true; }
  void validate(const ParamValues& params, const WorkloadContext& ctx) const override;
  WorkloadResult run(const ParamValues& params, const WorkloadContext& ctx) override;
};

}  // namespace schedlab
