#include "collector/perf/cpu_window.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "collector/sysstats/proc_tables.hpp"
#include "core/error.hpp"

namespace schedlab {

std::optional<std::map<int, double>> busy_from_cpuacct(const std::string& usage_percpu,
                                                       const std::vector<int>& cpus) {
  // One number of ns per possible CPU, in CPU order.
  const auto words = split_ws(usage_percpu);
  std::map<int, double> out;
  for (int cpu : cpus) {
    if (cpu < 0 || static_cast<std::size_t>(cpu) >= words.size()) return std::nullopt;
    unsigned long long ns = 0;
    const auto& w = words[static_cast<std::size_t>(cpu)];
    auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), ns);
    if (ec != std::errc() || p != w.data() + w.size()) return std::nullopt;
    out[cpu] = static_cast<double>(ns) * 1e-9;
  }
  return out;
}

std::optional<std::map<int, double>> busy_from_proc_stat(const std::string& text,
                                                         const std::vector<int>& cpus, long ticks_per_s) {
  const auto stat = parse_proc_stat(text, "stat");
  std::map<int, double> out;
  for (int cpu : cpus) {
    auto it = stat.cpus.find(cpu);
    if (it == stat.cpus.end()) return std::nullopt;
    const auto& t = it->second;
    // guest time is inside user and nice already; steal is time the vCPU did not run at all.
    const auto ticks = t[kUser] + t[kNice] + t[kSystem] + t[kIrq] + t[kSoftirq];
    out[cpu] = static_cast<double>(ticks) / static_cast<double>(ticks_per_s);
  }
  return out;
}

std::optional<CpuBusy> read_cpu_busy(const HostPaths& paths, const std::vector<int>& cpus, std::string& why) {
  std::vector<std::string> tried;
  for (const char* dir : {"cpuacct", "cpu,cpuacct", "cpuacct,cpu"}) {
    const auto file = paths.sys / "fs/cgroup" / dir / "cpuacct.usage_percpu";
    if (auto text = read_text(file)) {
      // In ns, but a running task's time is brought up to date only at a tick or a switch: a reading can be
      // a tick behind, 10 ms at the slowest tick (HZ=100).
      if (auto busy = busy_from_cpuacct(*text, cpus)) return CpuBusy{"cpuacct", 0.01, *busy};
      tried.push_back(file.string() + " lacks a counted CPU");
    }
  }
  if (tried.empty()) tried.push_back("no cgroup v1 cpuacct hierarchy");
  const long ticks = ::sysconf(_SC_CLK_TCK);
  if (auto text = read_text(paths.proc / "stat")) {
    try {
      if (auto busy = busy_from_proc_stat(*text, cpus, ticks))
        return CpuBusy{"proc-stat", 1.0 / static_cast<double>(ticks), *busy};
      tried.push_back((paths.proc / "stat").string() + " lacks a counted CPU");
    } catch (const InputError& e) {
      tried.push_back(e.what());
    }
  } else {
    tried.push_back((paths.proc / "stat").string() + ": unreadable");
  }
  why.clear();
  for (const auto& t : tried) why += (why.empty() ? "" : "; ") + t;
  return std::nullopt;
}

CounterWindow make_window(const CpuBusy& before, const CpuBusy& after, double elapsed_s, double workload_s,
                          std::string workload_source) {
  CounterWindow w;
  w.elapsed_s = elapsed_s;
  w.busy_source = after.source;
  for (const auto& [cpu, busy] : after.busy_s) {
    w.cpus.push_back(cpu);
    auto b = before.busy_s.find(cpu);
    if (b != before.busy_s.end()) w.busy_s += std::max(0.0, busy - b->second);
  }
  const double n = static_cast<double>(w.cpus.size());
  w.resolution_s = after.resolution_s * 2 * n;
  w.workload_s = workload_s;
  w.workload_source = std::move(workload_source);
  w.other_s = std::max(0.0, w.busy_s - w.workload_s);
  w.idle_s = std::max(0.0, elapsed_s * n - w.busy_s);
  w.other_share = w.busy_s > 0 ? w.other_s / w.busy_s : 0;
  w.idle_share = elapsed_s > 0 && n > 0 ? w.idle_s / (elapsed_s * n) : 0;
  // Tick-resolution readings of a short window can show other tasks that were not there: flag only what
  // the resolution cannot explain.
  w.contaminated = w.busy_s > 0 && (w.other_s - w.resolution_s) / w.busy_s > kContaminationShare;
  return w;
}

nlohmann::json CounterWindow::to_json() const {
  return {{"cpus", cpus},
          {"elapsed_s", elapsed_s},
          {"busy_s", busy_s},
          {"busy_source", busy_source},
          {"resolution_s", resolution_s},
          {"workload_s", workload_s},
          {"workload_source", workload_source},
          {"other_s", other_s},
          {"other_share", other_share},
          {"idle_s", idle_s},
          {"idle_share", idle_share},
          {"contamination_threshold", kContaminationShare},
          {"contaminated", contaminated}};
}

std::optional<double> cgroup_cpu_seconds(const std::filesystem::path& cgroup_dir) {
  if (cgroup_dir.empty()) return std::nullopt;
  const auto text = read_text(cgroup_dir / "cpu.stat");
  if (!text) return std::nullopt;
  const auto words = split_ws(*text);
  for (std::size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == "usage_usec") {
      unsigned long long usec = 0;
      const auto& w = words[i + 1];
      auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), usec);
      if (ec == std::errc() && p == w.data() + w.size()) return static_cast<double>(usec) * 1e-6;
    }
  return std::nullopt;
}

}  // namespace schedlab
