#pragma once
// The sysinfo source: who the host is, which kernel and scheduler configuration is under test, and
// the state the machine was in when a trial started. Every fact comes in through HostPaths; a fact
// that cannot be read is null or "unknown", never an exception and never a made-up number.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/host_paths.hpp"

namespace schedlab {

struct SysinfoReport {
  std::string boot_id;           // /proc/sys/kernel/random/boot_id, "unknown" when unreadable
  nlohmann::json host;           // hardware identity + "fingerprint" (the hostname is not part of it)
  nlohmann::json kernel;         // release, version, cmdline, hz, preempt, clocksource, mitigations, ...
  nlohmann::json configuration;  // what is under test; "hash" is its content key
  nlohmann::json environment;    // what makes runs noisy: load, governor, boost, SMT, THP, steal, ...
  nlohmann::json provenance;     // the suite build that collected this, and the glibc it runs on
};

SysinfoReport collect_sysinfo(const HostPaths& paths);

// Human-readable warnings about a start that makes results noisy or not comparable, e.g.
// "load average 1.73 at start is above 0.5 per CPU (2 CPUs)" or "SMT is on".
std::vector<std::string> noise_warnings(const nlohmann::json& environment, const nlohmann::json& host);

namespace sysinfo_detail {
// Shared by sysinfo.cpp and kernel_facts.cpp; tested through collect_sysinfo.

// The trimmed first line of a file, or nullopt.
std::optional<std::string> read_trimmed(const std::filesystem::path& path);
// The value of the last `name=value` kernel parameter before "--" in a cmdline, or nullopt.
std::optional<std::string> cmdline_param(const std::string& cmdline, std::string_view name);
// The "kernel" object (release, version, cmdline, hz, preempt, clocksource, mitigations, config_hash).
nlohmann::json kernel_facts(const HostPaths& paths);
// sched_tunables, sched_debugfs, sched_features and scheduler for the configuration.
nlohmann::json scheduler_facts(const HostPaths& paths, const nlohmann::json& release);
}  // namespace sysinfo_detail

}  // namespace schedlab
