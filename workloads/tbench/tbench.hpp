#pragma once
#include "workloads/workload.hpp"

namespace schedlab {

// dbench's tbench: N client processes replaying a dbench loadfile against a server over TCP on
// loopback, each operation one request and one reply of tbench's sizes. See README.md here.
class TbenchWorkload : public Workload {
 public:
  std::string name() const override { return "tbench"; }
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
};

}  // namespace schedlab
