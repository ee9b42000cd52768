#include "collector/sysstats/schedstat_source.hpp"

#include <cerrno>
#include <fstream>
#include <map>
#include <optional>

#include "core/error.hpp"

namespace schedlab {
namespace {

// CPU fields as counters: nanosecond sums in seconds, the rest as counts.
const std::map<std::string, std::pair<std::string, double>> kCpuCounters = {
    {"yld_count", {"count", 1}},   {"sched_count", {"count", 1}}, {"sched_goidle", {"count", 1}},
    {"ttwu_count", {"count", 1}},  {"ttwu_local", {"count", 1}},  {"rq_cpu_time_ns", {"s", 1e-9}},
    {"run_delay_ns", {"s", 1e-9}}, {"pcount", {"count", 1}}};

// Fed by sched_info (CONFIG_SCHED_INFO), which counts whatever kernel.sched_schedstats says; every
// other field stands still while the sysctl is 0.
bool counts_without_schedstats(const std::string& field) {
  return field == "rq_cpu_time_ns" || field == "run_delay_ns" || field == "pcount";
}

// Domain fields summed over idle types and domains: the load balancer's work in one number each.
const std::vector<std::string> kDomainTotals = {
    "lb_count", "lb_failed", "lb_gained", "alb_count", "alb_pushed", "ttwu_wake_remote", "ttwu_move_affine"};

std::string counter_name(const std::string& field) {
  auto name = field;
  if (auto at = name.rfind("_ns"); at != std::string::npos && at + 3 == name.size())
    name.replace(at, 3, "_s");
  return "schedstat." + name;
}

bool ends_with_field(const std::string& full, const std::string& field) {
  return full == field ||
         (full.size() > field.size() && full.compare(full.size() - field.size(), field.size(), field) == 0 &&
          full[full.size() - field.size() - 1] == '.');
}

nlohmann::json to_json(const Schedstat& d) {
  nlohmann::json cpus = nlohmann::json::object();
  for (const auto& c : d.cpus) {
    nlohmann::json domains = nlohmann::json::array();
    for (const auto& dom : c.domains)
      domains.push_back({{"name", dom.name}, {"cpumask", dom.cpumask}, {"delta", dom.fields}});
    cpus[std::to_string(c.cpu)] = {{"delta", c.fields}, {"domains", domains}};
  }
  return {{"version", d.version}, {"jiffies", d.timestamp}, {"cpus", cpus}};
}

}  // namespace

SchedstatSource::SchedstatSource(HostPaths paths, SchedstatsSwitch mode)
    : paths_(std::move(paths)), mode_(mode) {}

SchedstatSource::~SchedstatSource() {
  restore();
}

void SchedstatSource::attach(const AttachTarget&) {
  if (mode_ != SchedstatsSwitch::kOnForRepetition) return;
  const auto sysctl = paths_.proc / "sys/kernel/sched_schedstats";
  const auto now = read_line(sysctl);
  if (!now || trim(*now) != "0") return;  // absent (no CONFIG_SCHEDSTATS) or already counting
  if (write_kernel_file(sysctl, "1", switch_error_)) switched_from_ = "0";
}

void SchedstatSource::restore() {
  if (switched_from_.empty()) return;
  std::string error;
  write_kernel_file(paths_.proc / "sys/kernel/sched_schedstats", switched_from_, error);
  switched_from_.clear();
}

ProcReading<Schedstat> SchedstatSource::read() const {
  return read_proc<Schedstat>(paths_.proc / "schedstat", parse_schedstat);
}

void SchedstatSource::enable() {
  before_ = read();
}

void SchedstatSource::collect(Repetition& rep) {
  const auto after = read();
  auto enabled = read_line(paths_.proc / "sys/kernel/sched_schedstats");
  const bool counting_off = enabled && trim(*enabled) == "0";
  // A zero from a kernel that was not counting is not a measurement.
  auto not_counted = [](CounterReading c) {
    if (!c.ok()) return c;
    c.status = status::kNotCounted;
    c.value = 0;
    c.reason =
        "kernel.sched_schedstats was 0: the kernel did not count this (--profile switches it on for "
        "diagnostic repetitions; or sysctl kernel.sched_schedstats=1 for every repetition)";
    return c;
  };
  auto why = why_not(before_, after);
  std::optional<Schedstat> delta;
  if (before_.value && after.value) {
    try {
      delta = schedstat_delta(*before_.value, *after.value);
    } catch (const InputError& e) {
      why = {e.what(), 0};
    }
  }
  for (const auto& [field, unit_scale] : kCpuCounters) {
    std::optional<double> total;
    if (delta) {
      total = 0.0;
      for (const auto& c : delta->cpus) *total += static_cast<double>(c.fields.at(field)) * unit_scale.second;
    }
    auto c = system_counter(unit_scale.first, total, why);
    rep.counters[counter_name(field)] =
        counting_off && !counts_without_schedstats(field) ? not_counted(c) : c;
  }
  for (const auto& field : kDomainTotals) {
    std::optional<double> total;
    if (delta) {
      total = 0.0;
      for (const auto& c : delta->cpus) {
        for (const auto& dom : c.domains) {
          for (const auto& [name, v] : dom.fields) {
            if (ends_with_field(name, field)) *total += static_cast<double>(v);
          }
        }
      }
    }
    auto c = system_counter("count", total, why);
    rep.counters["schedstat." + field] = counting_off ? not_counted(c) : c;
  }
  const bool switched = !switched_from_.empty();
  restore();
  rep.system["schedstat"] = delta ? to_json(*delta) : nlohmann::json{{"unsupported", why.first}};
  rep.system["schedstat"]["sched_schedstats"] = enabled ? nlohmann::json(*enabled) : nlohmann::json();
  rep.system["schedstat"]["switched_on_for_repetition"] = switched;
  if (!switch_error_.empty()) rep.system["schedstat"]["switch_error"] = switch_error_;
}

}  // namespace schedlab
