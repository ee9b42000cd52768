// Host identity, the machine's state at the start of a trial, and the suite's own provenance.
// Kernel and scheduler facts live in kernel_facts.cpp.
#include "collector/sysinfo/sysinfo.hpp"

#include <gnu/libc-version.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <sstream>
#include <system_error>

#include "core/hash.hpp"
#include "core/topology.hpp"
#include "schedlab/build_info.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using sysinfo_detail::cmdline_param;
using sysinfo_detail::read_trimmed;
using CpuInfo = std::map<std::string, std::string, std::less<>>;

constexpr double kLoadPerCpuLimit = 0.5;
constexpr long kKibPerGib = 1024 * 1024;

// Names a hypervisor from a piece of text it leaves behind; the first match wins.
struct HypervisorHint {
  const char* needle;
  const char* name;
};
// DMI "sys_vendor product_name". Vendors that also sell bare metal (Amazon EC2, Microsoft) are only
// named through a product string no physical machine carries.
constexpr HypervisorHint kDmiHints[] = {{"QEMU", "QEMU"},
                                        {"KVM", "KVM"},
                                        {"VMware", "VMware"},
                                        {"VirtualBox", "VirtualBox"},
                                        {"Xen", "Xen"},
                                        {"Microsoft Corporation Virtual Machine", "Hyper-V"},
                                        {"Google Compute Engine", "KVM"}};
// Paravirtual clocksources in available_clocksource.
constexpr HypervisorHint kClocksourceHints[] = {
    {"kvm-clock", "KVM"}, {"hyperv_clocksource_tsc_page", "Hyper-V"}, {"xen", "Xen"}};

// How each cpufreq driver exposes turbo/boost; the first readable file decides.
struct BoostKnob {
  const char* path;  // under /sys/devices/system/cpu
  const char* on_value;
};
constexpr BoostKnob kBoostKnobs[] = {{"cpufreq/boost", "1"},           // acpi-cpufreq
                                     {"intel_pstate/no_turbo", "0"},   // intel_pstate (inverted)
                                     {"cpufreq/policy0/boost", "1"}};  // amd-pstate, per policy

json or_null(const std::optional<std::string>& s) {
  return s ? json(*s) : json(nullptr);
}

template <typename T>
std::optional<T> parse_number(std::string_view s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// The bracketed choice of a sysfs selector: "always [madvise] never" -> "madvise".
json bracketed(const std::optional<std::string>& line) {
  if (!line) return nullptr;
  auto open = line->find('['), close = line->find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return nullptr;
  return line->substr(open + 1, close - open - 1);
}

json int_or_null(const std::optional<std::string>& s) {
  auto v = s ? parse_number<long>(*s) : std::nullopt;
  return v ? json(*v) : json(nullptr);
}

// ---- host -------------------------------------------------------------------------------------

// "key\t: value" lines of the first processor block of /proc/cpuinfo.
CpuInfo first_cpu_block(const HostPaths& paths) {
  CpuInfo out;
  auto text = read_text(paths.proc / "cpuinfo");
  if (!text) return out;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (trim(line).empty()) {
      if (!out.empty()) break;
      continue;
    }
    auto colon = line.find(':');
    if (colon != std::string::npos) out.emplace(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
  }
  return out;
}

json cpuinfo_field(const CpuInfo& cpu, std::string_view key) {
  auto it = cpu.find(key);
  return it == cpu.end() ? json(nullptr) : json(it->second);
}

json memory_kib(const HostPaths& paths) {
  auto text = read_text(paths.proc / "meminfo");
  if (!text) return nullptr;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    auto words = split_ws(line);
    if (words.size() >= 2 && words[0] == "MemTotal:")
      if (auto kib = parse_number<long>(words[1])) return *kib;
  }
  return nullptr;
}

const char* match_hint(const std::string& text, const auto& hints) {
  for (const auto& h : hints)
    if (text.find(h.needle) != std::string::npos) return h.name;
  return nullptr;
}

// virtualized is null only when nothing could be read that would tell.
json virtualization(const HostPaths& paths, const CpuInfo& cpu) {
  std::vector<std::string> evidence;
  std::string hypervisor;
  auto note = [&](std::string what, const char* name) {
    evidence.push_back(std::move(what));
    if (hypervisor.empty() && name) hypervisor = name;
  };
  auto flags = cpu.find("flags");
  if (flags != cpu.end() && std::ranges::count(split_ws(flags->second), "hypervisor"))
    note("cpuinfo flags: hypervisor", nullptr);
  if (auto type = read_trimmed(paths.sys / "hypervisor/type"); type && !type->empty())
    note("/sys/hypervisor/type: " + *type, *type == "xen" ? "Xen" : type->c_str());
  auto vendor = read_trimmed(paths.sys / "class/dmi/id/sys_vendor");
  auto product = read_trimmed(paths.sys / "class/dmi/id/product_name");
  const std::string dmi = vendor.value_or("") + " " + product.value_or("");
  if (const char* name = match_hint(dmi, kDmiHints)) note("dmi: " + trim(dmi), name);
  auto clocks = read_trimmed(paths.sys / "devices/system/clocksource/clocksource0/available_clocksource");
  for (const auto& clock : split_ws(clocks.value_or("")))
    if (const char* name = match_hint(clock, kClocksourceHints)) note("clocksource: " + clock, name);

  std::string joined;
  for (const auto& e : evidence) joined += (joined.empty() ? "" : "; ") + e;
  const bool could_tell = flags != cpu.end() || vendor || product || clocks;
  json virtualized = !evidence.empty() ? json(true) : could_tell ? json(false) : json(nullptr);
  return {{"virtualized", virtualized}, {"hypervisor", hypervisor}, {"evidence", joined}};
}

json topology_json(const HostPaths& paths) {
  try {
    auto topo = read_topology(paths);
    if (topo.cpus.empty()) return nullptr;
    return topo.to_json();
  } catch (const std::exception&) {  // a malformed CPU list is as good as none
    return nullptr;
  }
}

// The hardware identity: CPU, microcode, topology shape and memory size. Hostnames lie.
json fingerprint(const json& host) {
  const json& topo = host["topology"];
  if (host["cpu_model"].is_null() && topo.is_null()) return nullptr;
  json summary = nullptr;
  if (topo.is_object())
    summary = {{"online_cpus", topo["online_cpus"]},
               {"smt_active", topo["smt_active"]},
               {"llc_groups", topo["llc_groups"]},
               {"numa_nodes", topo["numa_nodes"]}};
  json memory_gib = nullptr;
  if (host["memory_kib"].is_number())
    memory_gib = std::lround(host["memory_kib"].get<double>() / static_cast<double>(kKibPerGib));
  return canonical_hash(json{{"cpu_model", host["cpu_model"]},
                             {"microcode", host["microcode"]},
                             {"topology", summary},
                             {"memory_gib", memory_gib}});
}

}  // namespace

json host_facts(const HostPaths& paths) {
  const CpuInfo cpu = first_cpu_block(paths);
  json host = {{"hostname", or_null(read_trimmed(paths.proc / "sys/kernel/hostname"))},
               {"cpu_model", cpuinfo_field(cpu, "model name")},
               {"microcode", cpuinfo_field(cpu, "microcode")},
               {"vendor", cpuinfo_field(cpu, "vendor_id")},
               {"memory_kib", memory_kib(paths)},
               {"topology", topology_json(paths)},
               {"virtualization", virtualization(paths, cpu)}};
  host["fingerprint"] = fingerprint(host);
  return host;
}

namespace {

// ---- environment ------------------------------------------------------------------------------

// "0.00 0.09 0.07 1/80 2857": load averages, then runnable/total scheduling entities.
void add_loadavg(const HostPaths& paths, json& env) {
  env["load_avg"] = nullptr;
  env["procs_running"] = nullptr;
  env["procs_total"] = nullptr;
  auto words = split_ws(read_trimmed(paths.proc / "loadavg").value_or(""));
  if (words.size() < 4) return;
  auto l1 = parse_number<double>(words[0]), l5 = parse_number<double>(words[1]),
       l15 = parse_number<double>(words[2]);
  if (l1 && l5 && l15) env["load_avg"] = {*l1, *l5, *l15};
  auto slash = words[3].find('/');
  if (slash == std::string::npos) return;
  env["procs_running"] = int_or_null(words[3].substr(0, slash));
  env["procs_total"] = int_or_null(words[3].substr(slash + 1));
}

// One governor for all CPUs, or a per-CPU map when they differ; "none" without cpufreq.
json governor(const HostPaths& paths) {
  std::error_code ec;
  fs::directory_iterator it(paths.sys / "devices/system/cpu", ec);
  if (ec) return "unknown";
  std::map<std::string, std::string> per_cpu;
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.size() < 4 || name.rfind("cpu", 0) != 0 || !std::isdigit(static_cast<unsigned char>(name[3])))
      continue;
    if (auto g = read_trimmed(it->path() / "cpufreq/scaling_governor")) per_cpu[name] = *g;
  }
  if (per_cpu.empty()) return "none";
  const auto& first = per_cpu.begin()->second;
  if (std::ranges::all_of(per_cpu, [&](const auto& kv) { return kv.second == first; })) return first;
  return per_cpu;
}

std::string boost(const HostPaths& paths) {
  for (const auto& knob : kBoostKnobs)
    if (auto v = read_trimmed(paths.sys / "devices/system/cpu" / knob.path))
      return *v == knob.on_value ? "on" : "off";
  return "unknown";
}

json smt(const HostPaths& paths) {
  const auto dir = paths.sys / "devices/system/cpu/smt";
  auto active = read_trimmed(dir / "active");
  return {{"control", or_null(read_trimmed(dir / "control"))},
          {"active", active ? json(*active == "1") : json(nullptr)}};
}

// What the cmdline asked for and what the kernel reports (sysfs "" means no CPU).
json cpu_set(const std::optional<std::string>& cmdline, std::string_view param, const fs::path& sysfs) {
  return {{"cmdline", or_null(cmdline ? cmdline_param(*cmdline, param) : std::nullopt)},
          {"sysfs", or_null(read_trimmed(sysfs))}};
}

// The 8th value of each "cpuN" line of /proc/stat, in USER_HZ ticks since boot.
json steal_ticks(const HostPaths& paths) {
  auto text = read_text(paths.proc / "stat");
  if (!text) return nullptr;
  json out = json::object();
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    auto words = split_ws(line);
    if (words.empty() || words[0].size() <= 3 || words[0].rfind("cpu", 0) != 0) continue;
    out[words[0]] = words.size() > 8 ? int_or_null(words[8]) : json(nullptr);
  }
  return out;
}

json environment_facts(const HostPaths& paths) {
  const auto cpu = paths.sys / "devices/system/cpu";
  const auto thp = paths.sys / "kernel/mm/transparent_hugepage";
  auto cmdline = read_trimmed(paths.proc / "cmdline");
  auto autogroup = int_or_null(read_trimmed(paths.proc / "sys/kernel/sched_autogroup_enabled"));
  json env = json::object();
  add_loadavg(paths, env);
  env["governor"] = governor(paths);
  env["boost"] = boost(paths);
  env["smt"] = smt(paths);
  env["thp"] = {{"enabled", bracketed(read_trimmed(thp / "enabled"))},
                {"defrag", bracketed(read_trimmed(thp / "defrag"))}};
  env["numa_balancing"] = int_or_null(read_trimmed(paths.proc / "sys/kernel/numa_balancing"));
  env["autogroup"] = autogroup.is_null() ? json(nullptr) : json(autogroup.get<long>() != 0);
  env["isolcpus"] = cpu_set(cmdline, "isolcpus", cpu / "isolated");
  env["nohz_full"] = cpu_set(cmdline, "nohz_full", cpu / "nohz_full");
  env["steal_ticks"] = steal_ticks(paths);
  env["root_fs"] = root_filesystem(paths);
  return env;
}

json provenance_facts() {
  return {{"suite_version", build_info::kVersion},    {"suite_git_sha", build_info::kGitSha},
          {"suite_git_dirty", build_info::kGitDirty}, {"compiler", build_info::kCompiler},
          {"cxx_flags", build_info::kCxxFlags},       {"build_type", build_info::kBuildType},
          {"glibc", gnu_get_libc_version()}};  // the running binary's, not the host's under test
}

// ---- warnings ---------------------------------------------------------------------------------

const json* field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// Locale-independent: "1.73" with two decimals, or the shortest form ("0.5") without.
std::string decimal(double v, std::optional<int> precision = std::nullopt) {
  char buf[32];
  auto [p, ec] = precision ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, *precision)
                           : std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, p) : std::string("?");
}

std::optional<std::string> load_warning(const json& env, const json& host) {
  const json* load = field(env, "load_avg");
  if (!load || !load->is_array() || load->empty() || !(*load)[0].is_number()) return std::nullopt;
  const double one_minute = (*load)[0].get<double>();
  const json* cpus = field(host, "topology") ? field(*field(host, "topology"), "online_cpus") : nullptr;
  const long n = cpus && cpus->is_number_integer() && cpus->get<long>() > 0 ? cpus->get<long>() : 0;
  const double limit = kLoadPerCpuLimit * static_cast<double>(n > 0 ? n : 1);
  if (one_minute <= limit) return std::nullopt;
  const std::string count = n == 0 ? "CPU count unknown" : std::to_string(n) + (n == 1 ? " CPU" : " CPUs");
  return "load average " + decimal(one_minute, 2) + " at start is above " + decimal(kLoadPerCpuLimit) +
         " per CPU (" + count + ")";
}

std::optional<std::string> governor_warning(const json& env) {
  const json* g = field(env, "governor");
  if (!g) return std::nullopt;
  if (g->is_object()) return "cpufreq governors differ between CPUs: " + g->dump();
  if (!g->is_string()) return std::nullopt;
  const auto& name = g->get_ref<const std::string&>();
  if (name == "performance" || name == "none" || name == "unknown") return std::nullopt;
  return "cpufreq governor is '" + name + "', not 'performance'";
}

std::optional<std::string> vm_warning(const json& host) {
  const json* virt = field(host, "virtualization");
  const json* yes = virt ? field(*virt, "virtualized") : nullptr;
  if (!yes || *yes != true) return std::nullopt;
  const json* name = field(*virt, "hypervisor");
  const bool named = name && name->is_string() && !name->get_ref<const std::string&>().empty();
  return "running in a virtual machine" + (named ? " (" + name->get<std::string>() + ")" : std::string()) +
         ": expect ±25% drift between batches";
}

}  // namespace

SysinfoReport collect_sysinfo(const HostPaths& paths) {
  SysinfoReport r;
  r.boot_id = boot_id(paths);
  if (r.boot_id.empty()) r.boot_id = "unknown";
  r.host = host_facts(paths);
  r.kernel = sysinfo_detail::kernel_facts(paths);
  r.environment = environment_facts(paths);
  r.provenance = provenance_facts();

  json config = sysinfo_detail::scheduler_facts(paths, r.kernel["release"]);
  config["kernel_release"] = r.kernel["release"];
  config["kernel_config_hash"] = r.kernel["config_hash"];
  // What follows " -- " is init's, not the kernel's (and changes per boot on some hosts).
  std::string cmdline = r.kernel["cmdline"].is_string() ? r.kernel["cmdline"].get<std::string>() : "";
  if (auto init_args = cmdline.find(" -- "); init_args != std::string::npos) cmdline.resize(init_args);
  config["cmdline"] = r.kernel["cmdline"].is_string() ? json(cmdline) : json(nullptr);
  config["governor"] = r.environment["governor"];
  config["boost"] = r.environment["boost"];
  config["hash"] = canonical_hash(config);  // computed before "hash" exists, so over the rest
  r.configuration = std::move(config);
  return r;
}

std::vector<std::string> noise_warnings(const json& environment, const json& host) {
  std::vector<std::string> out;
  for (auto w : {load_warning(environment, host), governor_warning(environment), vm_warning(host)})
    if (w) out.push_back(std::move(*w));
  const json* smt_state = field(environment, "smt");
  const json* active = smt_state ? field(*smt_state, "active") : nullptr;
  if (active && *active == true) out.push_back("SMT is on");
  const json* b = field(environment, "boost");
  if (b && *b == "on") out.push_back("boost is on");
  return out;
}

}  // namespace schedlab
