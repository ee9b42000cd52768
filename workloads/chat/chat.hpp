#pragma once
#include "workloads/workload.hpp"

namespace schedlab {

// A VolanoMark-like chat server: rooms of users, a server thread per connection, every message
// broadcast to its room under a lock that is a futex mutex or a sched_yield() spin. See README.md here.
class ChatWorkload : public Workload {
 public:
  std::string name() const override { return "chat"; }
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
