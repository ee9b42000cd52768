#include "diff/diagnostics_diff.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/result.hpp"

namespace schedlab {
namespace {

struct TraceSums {
  WorkDone work;
  std::map<std::string, double> totals;  // summed over repetitions
  double latency_weighted = 0;           // mean latency x wakeups, to average over repetitions
  double latency_max = 0;
};

TraceSums sum_traces(const InstanceSamples& side) {
  TraceSums s;
  for (const Instance* in : side.all) {
    for (const auto& rep : in->diagnostics) {
      if (!rep.ok() || rep.trace.value("status", "") != status::kOk) continue;
      s.work.add(rep);
      const auto& t = rep.trace.at("totals");
      for (const char* key : {"switches", "preempted", "migrations", "run_s", "wait_s", "wakeups", "tasks"})
        s.totals[key] += t.value(key, 0.0);
      s.latency_weighted += t.value("wakeup_latency_mean_us", 0.0) * t.value("wakeups", 0.0);
      s.latency_max = std::max(s.latency_max, t.value("wakeup_latency_max_us", 0.0));
    }
  }
  return s;
}

}  // namespace

DiagnosticTable diff_traces(const std::string& side, const InstanceSamples& base,
                            const InstanceSamples& other) {
  DiagnosticTable d;
  d.kind = "trace";
  d.side = side;
  const auto a = sum_traces(base), b = sum_traces(other);
  d.base_repetitions = a.work.repetitions;
  d.other_repetitions = b.work.repetitions;
  if (a.work.repetitions == 0 || b.work.repetitions == 0) return d;
  const bool per_op = a.work.every_rep_has_operations && b.work.every_rep_has_operations;
  d.per = per_op ? "operation" : "repetition";
  const double a_div = a.work.divisor(per_op), b_div = b.work.divisor(per_op);
  const std::string per = per_op ? "/op" : "/rep";
  auto rate = [&](const char* key, const std::string& measure, const std::string& unit, double scale) {
    d.rows.push_back(
        {measure, unit + per, a.totals.at(key) * scale / a_div, b.totals.at(key) * scale / b_div});
  };
  rate("switches", "context switches", "", 1);
  rate("preempted", "preemptions (switched out runnable)", "", 1);
  rate("migrations", "migrations", "", 1);
  rate("run_s", "time running", "us", 1e6);
  rate("wait_s", "time runnable, waiting for a CPU", "us", 1e6);
  rate("wakeups", "wakeups", "", 1);
  auto mean_latency = [](const TraceSums& s) {
    return s.totals.at("wakeups") > 0 ? s.latency_weighted / s.totals.at("wakeups") : 0.0;
  };
  d.rows.push_back({"wakeup-to-run latency, mean", "us", mean_latency(a), mean_latency(b)});
  d.rows.push_back({"wakeup-to-run latency, max", "us", a.latency_max, b.latency_max});
  d.rows.push_back({"tasks traced per repetition", "",
                    a.totals.at("tasks") / static_cast<double>(a.work.repetitions),
                    b.totals.at("tasks") / static_cast<double>(b.work.repetitions)});
  return d;
}

namespace {

struct CounterSums {
  WorkDone work;
  std::map<std::string, double> values;
  std::map<std::string, std::string> units;
};

CounterSums sum_diagnostic_schedstat(const InstanceSamples& side) {
  CounterSums s;
  for (const Instance* in : side.all) {
    for (const auto& rep : in->diagnostics) {
      if (!rep.ok()) continue;
      bool any = false;
      for (const auto& [name, c] : rep.counters) {
        if (name.rfind("schedstat.", 0) != 0 || name.find("/op") != std::string::npos || !c.ok()) continue;
        s.values[name] += c.value;
        s.units[name] = c.unit;
        any = true;
      }
      if (any) s.work.add(rep);
    }
  }
  return s;
}

}  // namespace

DiagnosticTable diff_diagnostic_schedstat(const std::string& side, const InstanceSamples& base,
                                          const InstanceSamples& other) {
  DiagnosticTable d;
  d.kind = "schedstat";
  d.side = side;
  const auto a = sum_diagnostic_schedstat(base), b = sum_diagnostic_schedstat(other);
  d.base_repetitions = a.work.repetitions;
  d.other_repetitions = b.work.repetitions;
  if (a.work.repetitions == 0 || b.work.repetitions == 0) return d;
  const bool per_op = a.work.every_rep_has_operations && b.work.every_rep_has_operations;
  d.per = per_op ? "operation" : "repetition";
  const double a_div = a.work.divisor(per_op), b_div = b.work.divisor(per_op);
  for (const auto& [name, value] : a.values) {
    auto it = b.values.find(name);
    if (it == b.values.end()) continue;
    const auto& unit = a.units.at(name);
    d.rows.push_back(
        {name, (unit == "count" ? "" : unit) + (per_op ? "/op" : "/rep"), value / a_div, it->second / b_div});
  }
  return d;
}

std::string format_diagnostic_table(const DiagnosticTable& d, const std::string& base_name) {
  const bool trace = d.kind == "trace";
  if (d.rows.empty()) {
    if (!trace) return "";  // schedstat absent or off on a side: the counter rows already say why
    return fmt::format("  trace {} -> {}: no traced repetition on {} (run --trace on both sides)\n",
                       base_name, d.side, d.base_repetitions == 0 ? base_name : d.side);
  }
  std::string out =
      trace ? fmt::format(
                  "  trace {} -> {}: the workload's tasks in {} vs {} traced repetitions (exploratory: "
                  "one repetition per trial)\n",
                  base_name, d.side, d.base_repetitions, d.other_repetitions)
            : fmt::format(
                  "  schedstat {} -> {}: {} vs {} diagnostic repetitions, kernel.sched_schedstats on "
                  "(exploratory)\n",
                  base_name, d.side, d.base_repetitions, d.other_repetitions);
  out += fmt::format("    {:<46} {:>14} {:>14} {:>9}\n", "measure", base_name.substr(0, 14),
                     d.side.substr(0, 14), "change");
  for (const auto& r : d.rows) {
    const auto change = r.base != 0 ? fmt::format("{:+.1f}%", (r.other - r.base) / r.base * 100) : "";
    out += fmt::format("    {:<46} {:>14.4g} {:>14.4g} {:>9}\n",
                       r.measure + (r.unit.empty() ? "" : " (" + r.unit + ")"), r.base, r.other, change);
  }
  return out;
}

nlohmann::json to_json(const DiagnosticTable& d) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : d.rows)
    rows.push_back({{"measure", r.measure}, {"unit", r.unit}, {"base", r.base}, {"other", r.other}});
  return {{"kind", d.kind},
          {"side", d.side},
          {"normalised_per", d.per},
          {"base_repetitions", d.base_repetitions},
          {"other_repetitions", d.other_repetitions},
          {"rows", rows}};
}

}  // namespace schedlab
