#include "collector/sysstats/schedstat.hpp"

#include <array>

#include <fmt/format.h>

#include "collector/sysstats/proc_text.hpp"
#include "core/error.hpp"

namespace schedlab {
namespace {

constexpr std::array<const char*, 9> kCpuFields = {"yld_count",      "legacy_expired", "sched_count",
                                                   "sched_goidle",   "ttwu_count",     "ttwu_local",
                                                   "rq_cpu_time_ns", "run_delay_ns",   "pcount"};

// Per idle type, in the order the version prints the types.
const std::vector<std::string> kBalanceV15 = {"lb_count",  "lb_balanced",   "lb_failed",  "lb_imbalance",
                                              "lb_gained", "lb_hot_gained", "lb_nobusyq", "lb_nobusyg"};
const std::vector<std::string> kBalanceV17 = {
    "lb_count",          "lb_balanced",       "lb_failed",           "lb_imbalance_load",
    "lb_imbalance_util", "lb_imbalance_task", "lb_imbalance_misfit", "lb_gained",
    "lb_hot_gained",     "lb_nobusyq",        "lb_nobusyg"};
constexpr std::array<const char*, 12> kTail = {
    "alb_count", "alb_failed",   "alb_pushed", "sbe_count",        "sbe_balanced",     "sbe_pushed",
    "sbf_count", "sbf_balanced", "sbf_pushed", "ttwu_wake_remote", "ttwu_move_affine", "ttwu_move_balance"};

std::vector<std::string> domain_field_names(int version) {
  // Version 15 printed CPU_IDLE first; 16 swapped it with the busy type (__CPU_NOT_IDLE).
  const std::vector<std::string> types = version == 15 ? std::vector<std::string>{"idle", "busy", "newidle"}
                                                       : std::vector<std::string>{"busy", "idle", "newidle"};
  const auto& balance = version >= 17 ? kBalanceV17 : kBalanceV15;
  std::vector<std::string> names;
  for (const auto& t : types) {
    for (const auto& b : balance) names.push_back(t + "." + b);
  }
  for (const char* t : kTail) names.emplace_back(t);
  return names;
}

std::uint64_t count(const std::string& word, const std::string& origin, std::size_t line,
                    const std::string& what) {
  std::uint64_t v = 0;
  if (!parse_count(word, v)) malformed_line(origin, line, fmt::format("{} is '{}', not a count", what, word));
  return v;
}

}  // namespace

Schedstat parse_schedstat(const std::string& text, const std::string& origin) {
  Schedstat s;
  std::vector<std::string> domain_names;
  for_each_line(text, [&](std::size_t line_no, const std::vector<std::string>& words) {
    const auto& key = words[0];
    if (line_no == 1) {
      if (key != "version" || words.size() != 2) malformed_line(origin, 1, "no 'version N' line");
      s.version = static_cast<int>(count(words[1], origin, 1, "version"));
      if (s.version < 15 || s.version > 17)
        malformed_line(origin, 1,
                       fmt::format("schedstat version {} is not supported (15, 16 and 17 are)", s.version));
      domain_names = domain_field_names(s.version);
    } else if (key == "timestamp" && words.size() == 2) {
      s.timestamp = count(words[1], origin, line_no, "timestamp");
    } else if (key.rfind("cpu", 0) == 0 && numbered(key, "cpu") >= 0) {
      if (words.size() != kCpuFields.size() + 1)
        malformed_line(origin, line_no,
                       fmt::format("{} has {} fields, version {} prints {}", key, words.size() - 1, s.version,
                                   kCpuFields.size()));
      SchedstatCpu cpu;
      cpu.cpu = numbered(key, "cpu");
      for (std::size_t i = 0; i < kCpuFields.size(); ++i) {
        if (i == 1) continue;  // the O(1) scheduler's expired-array count: always 0
        cpu.fields[kCpuFields[i]] = count(words[i + 1], origin, line_no, key + " " + kCpuFields[i]);
      }
      s.cpus.push_back(std::move(cpu));
    } else if (key.rfind("domain", 0) == 0 && numbered(key, "domain") >= 0) {
      if (s.cpus.empty()) malformed_line(origin, line_no, key + " before any cpu line");
      const std::size_t lead = s.version >= 17 ? 3 : 2;  // domainN [name] cpumask
      if (words.size() != lead + domain_names.size())
        malformed_line(origin, line_no,
                       fmt::format("{} has {} fields, version {} prints {}", key, words.size() - lead,
                                   s.version, domain_names.size()));
      SchedstatDomain d;
      if (s.version >= 17) d.name = words[1];
      d.cpumask = words[lead - 1];
      for (std::size_t i = 0; i < domain_names.size(); ++i) {
        if (domain_names[i].rfind("sb", 0) == 0) continue;  // sched_balance_exec/fork: never counted
        d.fields[domain_names[i]] = count(words[lead + i], origin, line_no, key + " " + domain_names[i]);
      }
      s.cpus.back().domains.push_back(std::move(d));
    } else {
      malformed_line(origin, line_no, "unexpected line '" + key + " ...'");
    }
  });
  if (s.version == 0) throw InputError(origin + ": empty");
  if (s.cpus.empty()) throw InputError(origin + ": no cpu lines");
  return s;
}

Schedstat schedstat_delta(const Schedstat& before, const Schedstat& after) {
  if (before.version != after.version || before.cpus.size() != after.cpus.size())
    throw InputError("schedstat readings differ in version or CPUs (a CPU went offline?)");
  auto sub = [](const std::map<std::string, std::uint64_t>& b, const std::map<std::string, std::uint64_t>& a,
                const std::string& where) {
    std::map<std::string, std::uint64_t> d;
    for (const auto& [name, v] : a) {
      auto it = b.find(name);
      if (it == b.end() || v < it->second)
        throw InputError(fmt::format("schedstat {} {} went backwards or appeared", where, name));
      d[name] = v - it->second;
    }
    return d;
  };
  Schedstat d{after.version, after.timestamp - before.timestamp, {}};
  for (std::size_t i = 0; i < after.cpus.size(); ++i) {
    const auto &b = before.cpus[i], &a = after.cpus[i];
    if (a.cpu != b.cpu || a.domains.size() != b.domains.size())
      throw InputError(fmt::format("schedstat cpu{}: domains changed between readings", a.cpu));
    SchedstatCpu c{a.cpu, sub(b.fields, a.fields, "cpu" + std::to_string(a.cpu)), {}};
    for (std::size_t k = 0; k < a.domains.size(); ++k) {
      c.domains.push_back(
          {a.domains[k].name, a.domains[k].cpumask,
           sub(b.domains[k].fields, a.domains[k].fields, fmt::format("cpu{} domain{}", a.cpu, k))});
    }
    d.cpus.push_back(std::move(c));
  }
  return d;
}

}  // namespace schedlab
