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
  nlohmann::json kernel;         // release, version, cmdline, hz, preempt, clocksource, taint, ...
  nlohmann::json configuration;  // what is under test; "hash" is its content key
  nlohmann::json environment;  // what makes runs noisy: load, governor, boost, SMT, THP, steal, root_fs, ...
  nlohmann::json provenance;   // the suite build that collected this, and the glibc it runs on
};

SysinfoReport collect_sysinfo(const HostPaths& paths);

// SysinfoReport::host alone (CPU, topology, memory, virtualization, fingerprint): what names the machine,
// without the kernel and environment facts, for a daemon that wants to know which box it is on.
nlohmann::json host_facts(const HostPaths& paths);

// Human-readable warnings about a start that makes results noisy or not comparable, e.g.
// "load average 1.73 at start is above 0.5 per CPU (2 CPUs)" or "SMT is on".
std::vector<std::string> noise_warnings(const nlohmann::json& environment, const nlohmann::json& host);

// The kernel's taint mask as the letters its Oops header prints for the set bits, in bit order
// (kernel/panic.c taint_flags): 512 -> "W", 640 -> "DW"; 0 -> "". A bit this table does not know
// yet shows as "?<bit>".
std::string taint_letters(unsigned long mask);

// proc/sys/kernel/tainted as {"value": 512, "flags": "W"}; null when unreadable.
nlohmann::json taint_state(const HostPaths& paths);

// What the kernel may change while a run goes on, read before and after each repetition:
// {"taint": taint_state, "clocksource": the current clocksource or null}.
nlohmann::json kernel_state(const HostPaths& paths);

// What changed between two kernel_state readings: {"before", "after", "tainted": new taint bits
// appeared, "new_taint_flags": their letters, "clocksource_changed"}.
nlohmann::json kernel_state_change(const nlohmann::json& before, const nlohmann::json& after);

// The filesystem the suite runs from: the last "/" line of proc/mounts (the one on top), as
// {"type": "9p" | "overlay" | "ext4" | ..., "source": "hostroot" | "/dev/vda" | ...}; null when
// unreadable. A `schedlab kernel boot` guest runs on "9p" (--root 9p) or "overlay" over the ext4
// image (--root image); timings of workloads that exec or read files differ between them.
nlohmann::json root_filesystem(const HostPaths& paths);

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
