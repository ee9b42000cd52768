#include "diff/report_tables.hpp"

#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "diff/presentation.hpp"

namespace schedlab {

std::string paint_verdict(const std::string& text, bool colour) {
  if (!colour) return text;
  if (text == "worse") return "\033[1;31m" + text + "\033[0m";
  if (text == "better") return "\033[1;32m" + text + "\033[0m";
  if (text.rfind("inconclusive", 0) == 0 || text.rfind("too few runs", 0) == 0 ||
      text.find(" (not beyond") != std::string::npos)
    return "\033[33m" + text + "\033[0m";
  return text;
}

Table verdict_table(const DiffResult& diff, bool colour) {
  const bool many = diff.sides.size() > 2;
  std::vector<Column> cols = {{"instance", false, false, true, 10}, {"metric", false, false, true, 10}};
  if (many) cols.push_back({"side", false});
  cols.push_back({side_title(diff, 0), true});
  cols.push_back({many ? "other" : side_title(diff, 1), true});
  cols.push_back({"change", true});
  cols.push_back({"interval", false});
  cols.push_back({"verdict", false});
  Table t(cols);
  for (const auto& s : summary_lines(diff)) {
    std::vector<std::string> row = {instance_label(s.instance->id, s.instance->workload), s.what};
    if (many) row.push_back(s.side);
    for (const auto& cell : {s.base, s.other, s.change, s.interval}) row.push_back(cell.empty() ? "-" : cell);
    row.push_back(paint_verdict(s.verdict, colour));
    t.add(std::move(row));
  }
  return t;
}

Table kernbench_table(const InstanceDiff& in, const DiffResult& diff, std::size_t indent) {
  static const std::vector<std::pair<std::string, std::string>> columns = {
      {"elapsed_s", "Elapsed"}, {"system_s", "System"}, {"user_s", "User"}, {"cpu_pct", "CPU"}};
  std::map<std::string, const MetricDiff*> by_name;
  for (const auto& m : in.metrics) by_name[m.name] = &m;
  std::vector<Column> cols = {{in.id + ", mean (sd)", false}};
  for (const auto& [_, title] : columns) cols.push_back({title, true});
  Table t(cols, indent);
  for (std::size_t i = 0; i < diff.sides.size(); ++i) {
    std::vector<std::string> row = {diff.sides[i].name};
    for (const auto& [name, _] : columns) {
      auto it = by_name.find(name);
      const SideStats* s = nullptr;
      if (it != by_name.end()) {
        if (i == 0) s = &it->second->base;
        for (const auto& c : it->second->comparisons)
          if (i > 0 && c.side == diff.sides[i].name) s = &c.stats;
      }
      row.push_back(s ? fmt::format("{:.2f} ({:.2f})", s->mean, s->cv * s->mean) : "-");
    }
    t.add(std::move(row));
  }
  return t;
}

Table metrics_table(const InstanceDiff& in, const DiffResult& diff, std::size_t indent) {
  // The level the intervals achieve, not the one asked for: exact rank intervals overshoot it. Said once
  // in the title when every interval of the table reaches the same.
  std::set<std::string> levels;
  for (const auto& m : in.metrics)
    for (const auto& c : m.comparisons)
      if (m.kind == "metric") levels.insert(fmt::format("{:.1f}%", 100 * c.ci_confidence));
  const bool one_level = levels.size() == 1;
  Table t({{"metric", false, false, true, 10},
           {"side", false},
           {"n", true},
           {"median", true},
           {"CV", true},
           {"change", true},
           {one_level ? "interval at " + *levels.begin() : "interval (level)", false},
           {"p", true},
           {"p(BH)", true, true},
           {"t", true, true}},
          indent);
  for (const auto& m : in.metrics) {
    if (m.kind != "metric") continue;
    t.add({m.name + (m.headline ? " *" : ""), side_title(diff, 0), n_text(m.base),
           human_value(m.base.median, m.unit), fmt::format("{:.1f}%", 100 * m.base.cv)});
    for (const auto& c : m.comparisons) {
      const bool judged = m.headline;
      auto interval = interval_value(c);  // in the unit of the change beside it
      if (!one_level) interval += fmt::format(" {:.1f}%", 100 * c.ci_confidence);
      t.add({"", side_title(diff, c.side), n_text(c.stats), human_value(c.stats.median, m.unit),
             fmt::format("{:.1f}%", 100 * c.stats.cv), effect_value(c.shift, c.effect_unit), interval,
             judged ? p_text(c.p_value) : "", judged && c.in_family ? p_text(c.p_adjusted) : "",
             judged ? p_text(c.t_test_p) : ""});
    }
  }
  return t;
}

Table counters_table(const InstanceDiff& in, const DiffResult& diff, std::size_t indent) {
  const bool many = diff.sides.size() > 2;
  std::vector<Column> cols = {{"counter", false, false, true, 14}};
  if (many) cols.push_back({"side", false});
  cols.push_back({side_title(diff, 0), true});
  cols.push_back({many ? "other" : side_title(diff, 1), true});
  cols.push_back({"change", true});
  cols.push_back({"interval", false});
  cols.push_back({"noise", true, true});
  const bool all = diff.options.all_counters;
  if (all) cols.push_back({"moved", false});  // the default shows only these
  Table t(cols, indent);
  for (const auto* m : counters_shown(in, diff.options.all_counters)) {
    bool first = true;
    for (const auto& c : m->comparisons) {
      std::vector<std::string> row = {first ? m->name : ""};
      if (many) row.push_back(c.side);
      row.push_back(first ? human_value(m->base.median, m->unit) : "");
      row.push_back(human_value(c.stats.median, m->unit));
      row.push_back(effect_value(c.shift, c.effect_unit));
      row.push_back(interval_value(c));
      row.push_back(std::isfinite(c.noise) ? "±" + human_value(c.noise, m->unit) : "n/a");
      if (all) row.push_back(c.outside_noise ? "yes" : "no");
      t.add(std::move(row));
      first = false;
    }
  }
  return t;
}

Table diagnostic_table(const DiagnosticTable& d, const DiffResult& diff, std::size_t indent) {
  Table t({{"measure", false, false, true, 20},
           {side_title(diff, 0), true},
           {side_title(diff, d.side), true},
           {"change", true}},
          indent);
  for (const auto& r : d.rows) {
    const auto change = r.base != 0 ? fmt::format("{:+.1f}%", (r.other - r.base) / r.base * 100) : "";
    t.add({r.measure + (r.unit.empty() ? "" : " (" + r.unit + ")"), fmt::format("{:.4g}", r.base),
           fmt::format("{:.4g}", r.other), change});
  }
  return t;
}

}  // namespace schedlab
