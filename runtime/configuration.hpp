#pragma once
// A runtime configuration: what can change under a booted kernel without a reboot (the scheduler
// class, sched_ext scheduler, sched features, debugfs tunables, scheduler sysctls, the CPU weight and
// bandwidth of the workload's cgroup). `schedlab run --configuration A --configuration B` alternates
// them trial by trial inside one boot (README.md in this folder).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace schedlab::runtime {

struct CpuBandwidth {
  std::optional<long> quota_us;  // nullopt: "max", no limit
  long period_us = 100000;
};

struct RuntimeConfiguration {
  std::string name;                             // names the side: bundles land in OUT/<id>/<name>/
  std::string scheduler;                        // "" as found, "eevdf"/"cfs" built in, "scx:NAME"
  std::vector<std::string> features;            // sched features: "NO_PLACE_LAG", "PLACE_LAG"
  std::map<std::string, std::string> tunables;  // debugfs sched/NAME -> value
  std::map<std::string, std::string> sysctls;   // kernel.sched_* -> value
  std::optional<long> cpu_weight;               // cgroup v2 units 1..10000 (v1: cpu.shares = w * 1024 / 100)
  std::optional<CpuBandwidth> cpu_max;          // the workload cgroup's bandwidth
  std::string defined_at;                       // "FILE:LINE" or "--configuration SPEC"

  bool scx() const { return scheduler.rfind("scx:", 0) == 0; }
  std::string scx_name() const { return scx() ? scheduler.substr(4) : std::string(); }
  bool needs_cgroup() const { return cpu_weight.has_value() || cpu_max.has_value(); }
  nlohmann::json to_json() const;  // as given (the read-back values go in the bundle)
  // The inline --configuration spec that resolves to this configuration again ("name=N,cpu.max=...").
  std::string to_spec() const;
};

// The inverse of to_json(): a bundle's `configuration.runtime.given` back into a configuration, so that
// a side measured once can be applied again (a change point's rerun). InputError naming `where`.
RuntimeConfiguration configuration_from_json(const nlohmann::json& given, const std::string& where);

// [configuration.NAME] tables of a TOML file; errors name the file, line and key (InputError).
std::vector<RuntimeConfiguration> load_configurations(const std::filesystem::path& file);

// One --configuration SPEC: a name the file defines; "eevdf", "cfs" or "scx:NAME" alone; or inline
// "name=N,scheduler=scx:fifo,feature=NO_PLACE_LAG,tunable.base_slice_ns=1000000,
// sysctl.kernel.sched_rr_timeslice_ms=50,cpu.weight=50,cpu.max=50000/100000". Throws InputError.
RuntimeConfiguration resolve_configuration(const std::string& spec,
                                           const std::vector<RuntimeConfiguration>& file);

// "50000 100000", "50000/100000", "max", "max 100000" -> the bandwidth; InputError naming `where`.
CpuBandwidth parse_cpu_max(const std::string& text, const std::string& where);

}  // namespace schedlab::runtime
