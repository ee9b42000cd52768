#include "collector/sysstats/system_stats_source.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "collector/sysstats/proc_reading.hpp"

namespace schedlab {
namespace {

// A later reading below an earlier one (a counter reset, a CPU gone offline and back) has no delta.
std::optional<std::uint64_t> delta(std::uint64_t before, std::uint64_t after) {
  if (after < before) return std::nullopt;
  return after - before;
}

void put(Repetition& rep, const std::string& name, const std::string& unit, std::optional<double> value,
         const std::pair<std::string, int>& why) {
  rep.counters[name] = system_counter(unit, value, why);
}

}  // namespace

SystemStatsSource::SystemStatsSource(HostPaths paths)
    : paths_(std::move(paths)), ticks_per_s_(::sysconf(_SC_CLK_TCK)) {}

SystemStatsSource::Snapshot SystemStatsSource::take() const {
  return {read_proc<ProcStat>(paths_.proc / "stat", parse_proc_stat),
          read_proc<PerCpuTable>(paths_.proc / "interrupts", parse_per_cpu_table),
          read_proc<PerCpuTable>(paths_.proc / "softirqs", parse_per_cpu_table)};
}

void SystemStatsSource::enable() {
  before_ = take();
}

void SystemStatsSource::collect(Repetition& rep) {
  const Snapshot after = take();
  nlohmann::json per_cpu = nlohmann::json::object();
  const double tick_s = 1.0 / static_cast<double>(ticks_per_s_);

  // /proc/stat: seconds per CPU-time class, summed over CPUs; context switches and forks.
  const auto stat_why = why_not(before_.stat, after.stat);
  const bool have_stat = before_.stat.value && after.stat.value;
  for (std::size_t f = 0; f < kCpuTimeNames.size(); ++f) {
    if (f == kGuest || f == kGuestNice) continue;  // already inside user and nice
    std::optional<double> total = have_stat ? std::optional<double>(0.0) : std::nullopt;
    if (have_stat) {
      for (const auto& [cpu, ticks] : after.stat.value->cpus) {
        auto it = before_.stat.value->cpus.find(cpu);
        if (it == before_.stat.value->cpus.end()) continue;
        auto d = delta(it->second[f], ticks[f]);
        if (!d) {
          total.reset();
          break;
        }
        *total += static_cast<double>(*d) * tick_s;
        per_cpu[std::to_string(cpu)][std::string(kCpuTimeNames[f]) + "_s"] = static_cast<double>(*d) * tick_s;
      }
    }
    put(rep, fmt::format("system.{}_s", kCpuTimeNames[f]), "s", total, stat_why);
  }
  auto stat_count = [&](std::uint64_t ProcStat::*field) -> std::optional<double> {
    if (!have_stat) return std::nullopt;
    auto d = delta((*before_.stat.value).*field, (*after.stat.value).*field);
    return d ? std::optional<double>(static_cast<double>(*d)) : std::nullopt;
  };
  put(rep, "system.context_switches", "count", stat_count(&ProcStat::context_switches), stat_why);
  put(rep, "system.forks", "count", stat_count(&ProcStat::forks), stat_why);

  // Per-CPU event tables: the rows the scheduler reports of the 2000s read.
  auto table_rows = [&](const ProcReading<PerCpuTable>& b, const ProcReading<PerCpuTable>& a,
                        std::initializer_list<std::pair<const char*, const char*>> rows) {
    const auto why = why_not(b, a);
    for (const auto& [row, counter] : rows) {
      std::optional<double> total;
      auto row_why = why;
      if (b.value && a.value) {
        auto bi = b.value->rows.find(row);
        auto ai = a.value->rows.find(row);
        if (bi == b.value->rows.end() || ai == a.value->rows.end() || b.value->cpus != a.value->cpus) {
          row_why.first = fmt::format("no {} row in both readings of this kernel's table", row);
        } else {
          total = 0.0;
          for (std::size_t i = 0; i < a.value->cpus.size(); ++i) {
            auto d = delta(bi->second[i], ai->second[i]);
            if (!d) {
              total.reset();
              break;
            }
            *total += static_cast<double>(*d);
            per_cpu[std::to_string(a.value->cpus[i])][counter] = static_cast<double>(*d);
          }
        }
      }
      put(rep, std::string("system.") + counter, "count", total, row_why);
    }
  };
  table_rows(before_.interrupts, after.interrupts,
             {{"RES", "resched_ipis"}, {"CAL", "function_call_ipis"}, {"TLB", "tlb_shootdowns"}});
  table_rows(before_.softirqs, after.softirqs, {{"SCHED", "sched_softirqs"}});
  rep.system = {{"per_cpu", per_cpu}, {"clock_ticks_per_s", ticks_per_s_}};
}

}  // namespace schedlab
