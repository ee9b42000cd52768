// The diff as people read it: one table per workload instance, as kernel developers paste into mail.
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "diff/diff.hpp"
#include "diff/experiment_record.hpp"

namespace schedlab {
namespace {

std::string value_text(double v, const std::string& unit) {
  auto num = std::fabs(v) >= 1e6 || (v != 0 && std::fabs(v) < 1e-3) ? fmt::format("{:.3e}", v)
                                                                    : fmt::format("{:.4g}", v);
  return unit.empty() || unit == "count" ? num : num + " " + unit;
}

std::string signed_pct(double v) {
  return std::isfinite(v) ? fmt::format("{:+.1f}%", v) : "n/a";
}

std::string n_text(const SideStats& s) {
  return s.trials > 1 ? fmt::format("{}x{}", s.trials, s.repetitions / std::max<std::size_t>(s.trials, 1))
                      : fmt::format("{}", s.repetitions);
}

std::string p_text(double p) {
  return p < 0.001 ? fmt::format("{:.1e}", p) : fmt::format("{:.3f}", p);
}

std::string paint(const std::string& text, bool colour) {
  if (!colour) return text;
  if (text == "worse") return "\033[1;31m" + text + "\033[0m";
  if (text == "better") return "\033[1;32m" + text + "\033[0m";
  if (text == "inconclusive" || text == "too few runs" || text.find(" (not beyond") != std::string::npos)
    return "\033[33m" + text + "\033[0m";
  return text;
}

// An effect in the comparison's unit: a signed percentage for ratios, else the metric's unit.
std::string effect_text(double v, const std::string& effect_unit) {
  if (!std::isfinite(v)) return "n/a";
  if (effect_unit == "%") return signed_pct(v);
  return (v > 0 ? "+" : "") + value_text(v, effect_unit);
}

std::string verdict_text(const Comparison& c, bool colour) {
  auto v = paint(c.verdict, colour);
  if (c.verdict == "inconclusive") {
    auto mde = std::isfinite(c.mde) ? effect_text(c.mde, c.effect_unit) : std::string("n/a");
    if (!mde.empty() && mde[0] == '+') mde.erase(0, 1);
    v += " (MDE " + mde + ")";
  }
  if (c.verdict == "too few runs") {
    v += c.test == "mann-whitney/repetitions" ? " (one trial)" : fmt::format(" (min p {:.3f})", c.min_p);
  }
  return v;
}

std::string params_text(const nlohmann::json& params) {
  std::string out;
  for (const auto& [k, v] : params.items())
    out += (out.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

std::string test_text(const std::string& test) {
  static const std::map<std::string, std::string> names = {
      {"mann-whitney/trials", "Mann-Whitney U on trial medians"},
      {"mann-whitney/repetitions", "Mann-Whitney U on repetitions"},
      {"wilcoxon-paired/trials", "Wilcoxon signed-rank on paired trials"}};
  auto it = names.find(test);
  return it == names.end() ? test : it->second;
}

constexpr const char* kRowFormat = "  {:<24} {:<16} {:>6} {:>14} {:>6} {:>10} {:>27} {:>8} {:>8} {:>8}  {}\n";

void append_metric(std::string& out, const MetricDiff& m, const std::string& base_name, bool colour) {
  auto label = m.name + (m.headline ? " *" : "");
  out += fmt::format(kRowFormat, label, base_name, n_text(m.base), value_text(m.base.median, m.unit),
                     fmt::format("{:.1f}%", 100 * m.base.cv), "", "", "", "", "", "");
  for (const auto& c : m.comparisons) {
    // The level the interval achieves, not the one asked for: exact rank intervals overshoot it.
    auto ci = fmt::format("[{}, {}] {:.1f}%", effect_text(c.ci_lower, c.effect_unit),
                          effect_text(c.ci_upper, c.effect_unit), 100 * c.ci_confidence);
    bool judged = m.headline;
    out += fmt::format(kRowFormat, "", c.side, n_text(c.stats), value_text(c.stats.median, m.unit),
                       fmt::format("{:.1f}%", 100 * c.stats.cv), effect_text(c.shift, c.effect_unit), ci,
                       judged ? p_text(c.p_value) : "", judged && c.in_family ? p_text(c.p_adjusted) : "",
                       judged ? p_text(c.t_test_p) : "", judged ? verdict_text(c, colour) : "");
    if (judged) {
      for (const auto& note : c.notes) out += fmt::format("      {}: {}\n", c.side, note);
      if (!c.verdict_reason.empty() && c.verdict != "too few runs")
        out += fmt::format("      {}: {}\n", c.side, c.verdict_reason);
    }
  }
  for (const auto& [side, q] : m.quality) {
    if (q.multiplexed > 0)
      out += fmt::format(
          "      {}: multiplexed in {}/{} repetitions, scaled up to x{:.2f} (time enabled / "
          "running): an estimate\n",
          side, q.multiplexed, q.repetitions, q.max_scaling);
    if (q.contaminated > 0)
      out += fmt::format(
          "      {}: contaminated in {}/{} repetitions: other tasks had up to {:.1f}% of the "
          "counted CPUs' busy time\n",
          side, q.contaminated, q.repetitions, 100 * q.max_foreign_share);
  }
}

// kernbench's own report: Elapsed, System, User and CPU as mean (standard deviation) per configuration.
void append_kernbench_table(std::string& out, const InstanceDiff& in, const std::vector<SideInfo>& sides) {
  static const std::vector<std::pair<std::string, std::string>> columns = {
      {"elapsed_s", "Elapsed"}, {"system_s", "System"}, {"user_s", "User"}, {"cpu_pct", "CPU"}};
  std::map<std::string, const MetricDiff*> by_name;
  for (const auto& m : in.metrics) by_name[m.name] = &m;
  out += fmt::format("  {:<24}", "kernbench, mean (sd)");
  for (const auto& [name, title] : columns) out += fmt::format(" {:>16}", title);
  out += "\n";
  for (std::size_t i = 0; i < sides.size(); ++i) {
    out += fmt::format("  {:<24}", sides[i].name);
    for (const auto& [name, title] : columns) {
      auto it = by_name.find(name);
      const SideStats* s = nullptr;
      if (it != by_name.end()) {
        if (i == 0) s = &it->second->base;
        for (const auto& c : it->second->comparisons) {
          if (i > 0 && c.side == sides[i].name) s = &c.stats;
        }
      }
      out += s ? fmt::format(" {:>16}", fmt::format("{:.2f} ({:.2f})", s->mean, s->cv * s->mean))
               : fmt::format(" {:>16}", "-");
    }
    out += "\n";
  }
  out += "\n";
}

void append_instance(std::string& out, const InstanceDiff& in, const DiffResult& diff, bool colour) {
  out += fmt::format("{} {}  ({})\n", in.id, in.workload_version, params_text(in.params));
  for (const auto& side : in.missing_from) out += fmt::format("  not in {}\n", side);
  std::string test;
  for (const auto& m : in.metrics) {
    if (m.headline && !m.comparisons.empty()) test = m.comparisons.front().test;
  }
  if (!test.empty()) out += fmt::format("  primary test: {}\n", test_text(test));
  if (in.workload == "kernbench") append_kernbench_table(out, in, diff.sides);
  out += fmt::format(kRowFormat, "metric (* headline)", "side", "n", "median", "CV", "change",
                     "CI (achieved level)", "p", "p(BH)", "t", "verdict");
  bool counters_started = false;
  for (const auto& m : in.metrics) {
    if (m.kind == "counter" && !counters_started) {
      out += "  counters (exploratory: no verdicts)\n";
      counters_started = true;
    }
    append_metric(out, m, diff.sides.front().name, colour);
  }
  for (const auto& f : in.failures) {
    if (f.failed == 0) continue;
    out += fmt::format("  failed repetitions on {}: {}/{}{}{}\n", f.side, f.failed, f.total,
                       &f == &in.failures.front() ? "" : fmt::format(" (Fisher p {})", p_text(f.p_value)),
                       f.verdict.empty() ? "" : ": " + paint(f.verdict, colour));
  }
  for (const auto& m : in.metrics) {
    for (const auto& t : m.trends) {
      if (t.flagged && m.kind == "metric") {
        out += fmt::format(
            "  trend: {} {} with run order on {} (Kendall tau {:+.2f}, p {}): drift confounds the "
            "comparison\n",
            m.name, t.tau > 0 ? "rises" : "falls", t.side, t.tau, p_text(t.p_value));
      }
    }
  }
  for (const auto& p : in.profiles) {
    out += fmt::format("  diffprofile {} -> {}: {} samples{}\n", diff.sides.front().name, p.side,
                       p.event.empty() ? "profile" : p.event,
                       p.lines.empty() ? ""
                                       : fmt::format(", {} scaled to {}'s {}s (x{:.3f}); {} vs {} diagnostic "
                                                     "repetitions",
                                                     p.side, diff.sides.front().name, p.per, p.scale,
                                                     p.base_repetitions, p.other_repetitions));
    out += format_diffprofile(p, diff.options.profile);
  }
  for (const auto& t : in.traces) out += format_diagnostic_table(t, diff.sides.front().name);
  for (const auto& t : in.schedstat) out += format_diagnostic_table(t, diff.sides.front().name);
  out += "\n";
}

}  // namespace

std::string format_diff_text(const DiffResult& diff, bool colour) {
  std::string out;
  for (const auto& w : diff.warnings) out += (colour ? "\033[1;31mWARNING\033[0m: " : "WARNING: ") + w + "\n";
  if (!diff.warnings.empty()) out += "\n";
  out += "sides:\n";
  for (const auto& s : diff.sides) {
    out += fmt::format("  {:<8} {}  ({} trial{}{}){}\n", &s == &diff.sides.front() ? "base" : "other", s.name,
                       s.trials, s.trials == 1 ? "" : "s",
                       s.interleaved_with_base ? ", interleaved with base" : "",
                       s.spec == s.name ? "" : "  " + s.spec);
  }
  // The family is per other side: its trial-level headline comparisons (diff/README.md).
  std::string families;
  for (std::size_t i = 1; i < diff.sides.size(); ++i)
    families += fmt::format("{}{} {}", i == 1 ? "" : ", ", diff.sides[i].name, diff.sides[i].family);
  out += fmt::format(
      "alpha {:g}; Benjamini-Hochberg per side over its trial-level headline comparisons ({}); better/worse "
      "need the interval beyond ±{:g}%, equivalent needs the 1-2alpha interval inside it; changes are "
      "Hodges-Lehmann shifts of log values as % (of the values in their unit where one is <= 0)\n\n",
      diff.options.alpha, families, diff.options.min_effect_pct);
  out += format_experiment_text(diff.experiment);
  if (!diff.environment.empty()) {
    out += "differences between the sides:\n";
    for (const auto& d : diff.environment) {
      out += fmt::format("  {:<13} {}\n", d.category, d.field);
      for (const auto& [side, value] : d.values) out += fmt::format("      {:<20} {}\n", side, value);
    }
    out += "\n";
  }
  for (const auto& in : diff.instances) append_instance(out, in, diff, colour);
  return out;
}

}  // namespace schedlab
