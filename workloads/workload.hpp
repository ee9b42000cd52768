#pragma once
// A workload is one class behind this interface. It declares its parameters and metrics as
// data and, given resolved parameters, runs once and returns metrics. Repetitions, isolation,
// time limits and counters belong to the runner (collector/), which knows no specific workload.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metric.hpp"
#include "core/topology.hpp"
#include "workloads/params.hpp"
#include "workloads/privilege.hpp"

namespace schedlab {

struct WorkloadContext {
  Topology topology;
  std::vector<int> allowed_cpus;    // the affinity the run started with
  std::filesystem::path cache_dir;  // where workloads keep generated or extracted inputs
};

struct WorkloadResult {
  std::map<std::string, MetricValue> metrics;
  nlohmann::json details = nlohmann::json::object();
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  virtual std::string version() const = 0;  // semantic: a change that moves results bumps it
  virtual std::string summary() const = 0;
  virtual std::string experiment() const = 0;  // the historical experiment it reproduces
  virtual std::vector<ParamSpec> params() const = 0;
  virtual std::vector<MetricDesc> metrics() const = 0;
  // Parameters a quick smoke run uses (id -> values); the first instance is the plain one.
  virtual std::map<std::string, std::map<std::string, std::string>> quick_instances() const = 0;

  // Checks resolved parameters against this machine (e.g. a placement level the topology lacks);
  // throws InputError. Runs before anything is started or written.
  virtual void validate(const ParamValues& params, const WorkloadContext& ctx) const = 0;

  // Runs once, in the runner's child process; throws on failure.
  virtual WorkloadResult run(const ParamValues& params, const WorkloadContext& ctx) = 0;

  // Why this instance must run as root ("" when any user can run it): the runner's child drops to the
  // workload user (`run --workload-user`) otherwise. The scheduling parameters every workload takes
  // decide by default; a workload with privileges of its own says so here.
  virtual std::string needs_root(const ParamValues& params, const WorkloadContext& /*ctx*/) const {
    return root_needed_for_scheduling(params);
  }

  // Whether its repetitions carry details.histogram (latency buckets): the exporter publishes them as
  // schedlab_<workload>_latency_seconds and the dashboards draw its percentiles.
  virtual bool records_latency_histogram() const { return false; }

  // The CPUs the instance's tasks may run on: counting on CPUs (the default counter scope) counts
  // there. All the run's CPUs unless the workload pins every task that does its work.
  virtual std::vector<int> cpus(const ParamValues& /*params*/, const WorkloadContext& ctx) const {
    return ctx.allowed_cpus;
  }
};

}  // namespace schedlab
