// The diff as markdown, for a merge request, an issue or a wiki: the same sections as the text, in the
// same order, with tables and headings; the diffprofile stays the classic block in a code fence.
#include <fmt/format.h>

#include "diff/diff.hpp"
#include "diff/experiment_record.hpp"
#include "diff/presentation.hpp"
#include "diff/report_tables.hpp"

namespace schedlab {
namespace {

// Markdown takes `*`, `_` and backticks as markup: names and free text are shown as they are.
std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '_' || c == '`' || c == '<' || c == '[' || c == ']') out += '\\';
    out += c;
  }
  return out;
}

// Cells come from the same tables as the text; markup in them is escaped the same way.
std::string table_markdown(const Table& t) {
  std::string out;
  std::string line;
  for (char c : t.markdown()) {
    line += c;
    if (c != '\n') continue;
    // The separator line (| --- |) stays as it is.
    out += line.rfind("| ---", 0) == 0 ? line : escaped(line);
    line.clear();
  }
  return out;
}

std::string legend(const DiffResult& diff) {
  Table t({{"side"}, {"role"}, {"given as"}, {"trials", true}, {"repetitions", true}, {"design"}});
  for (const auto& s : diff.sides)
    t.add({s.name, &s == &diff.sides.front() ? "base" : "other", s.spec, std::to_string(s.trials),
           std::to_string(s.repetitions_per_trial) + (s.smoke ? " (quick)" : ""),
           &s == &diff.sides.front() ? ""
           : s.interleaved_with_base ? "interleaved"
                                     : "one after the other"});
  return table_markdown(t);
}

std::string instance_details(const InstanceDiff& in, const DiffResult& diff) {
  std::string out = fmt::format("### {}\n\n{} {}: {}\n\n", escaped(in.id), escaped(in.workload),
                                escaped(in.workload_version), escaped(params_text(in.params)));
  for (const auto& side : in.missing_from) out += fmt::format("Not in {}.\n\n", escaped(side));
  std::string test;
  for (const auto& m : in.metrics)
    if (m.headline && !m.comparisons.empty()) test = m.comparisons.front().test;
  if (!test.empty()) out += "Primary test: " + test_text(test) + ".\n\n";
  out += table_markdown(metrics_table(in, diff, 0)) + "\n";
  for (const auto& m : in.metrics) {
    if (!m.headline) continue;
    for (const auto& c : m.comparisons) {
      if (!c.verdict_reason.empty() && c.verdict != "too few runs")
        out += fmt::format("- {} on {}: {}; {}\n", escaped(m.name), escaped(c.side), verdict_label(c),
                           escaped(c.verdict_reason));
      for (const auto& note : c.notes)
        out += fmt::format("- {} on {}: {}\n", escaped(m.name), escaped(c.side), escaped(note));
    }
  }
  const auto total = counters_total(in);
  if (total > 0) {
    const auto shown = counters_shown(in, diff.options.all_counters).size();
    out += diff.options.all_counters
               ? fmt::format(
                     "\nCounters, all {} (exploratory, no verdicts; moved: beyond the noise of their "
                     "repetitions):\n\n",
                     total)
               : fmt::format(
                     "\nCounters that moved beyond the noise of their repetitions: {} of {} "
                     "(exploratory; `--all` shows every one).\n\n",
                     shown, total);
    if (shown > 0) out += table_markdown(counters_table(in, diff, 0)) + "\n";
    for (const auto* m : counters_shown(in, diff.options.all_counters))
      for (const auto& note : counter_quality_notes(*m)) out += "- " + escaped(note) + "\n";
    if (const auto marked = hidden_marked_counters(in, diff.options.all_counters); marked > 0)
      out +=
          fmt::format("- {} counter{} not shown multiplexed or contaminated on a side (`--all` shows them)\n",
                      marked, marked == 1 ? "" : "s");
  }
  for (const auto& f : in.failures)
    if (f.failed > 0)
      out += fmt::format("- failed repetitions on {}: {}/{}{}{}\n", escaped(f.side), f.failed, f.total,
                         &f == &in.failures.front() ? "" : fmt::format(" (Fisher p {})", p_text(f.p_value)),
                         f.verdict.empty() ? "" : ": " + f.verdict);
  for (const auto& m : in.metrics)
    for (const auto& t : m.trends)
      if (t.flagged && m.kind == "metric")
        out +=
            fmt::format("- trend: {} {} with run order on {} (Kendall tau {:+.2f}, p {})\n", escaped(m.name),
                        t.tau > 0 ? "rises" : "falls", escaped(t.side), t.tau, p_text(t.p_value));
  for (const auto* tables : {&in.traces, &in.schedstat})
    for (const auto& t : *tables) {
      if (t.rows.empty()) continue;
      out += fmt::format("\n{} {} -> {} ({} vs {} diagnostic repetitions, exploratory):\n\n", t.kind,
                         escaped(diff.sides.front().name), escaped(t.side), t.base_repetitions,
                         t.other_repetitions);
      out += table_markdown(diagnostic_table(t, diff, 0));
    }
  return out + "\n";
}

// The commits between git kernels: the log as git prints it, in a code block.
std::string kernel_commits_markdown(const DiffResult& diff) {
  std::string out;
  for (const auto& k : diff.kernel_commits) {
    const auto t = commits_text(k, diff.sides.front().name);
    out += fmt::format("Kernel commits: {}\n\n{}\n\n", escaped(t.title), escaped(t.summary));
    if (k.range.log.empty()) continue;
    out += "```\n";
    for (const auto& c : k.range.log) out += c.commit + " " + c.subject + "\n";
    if (!t.more.empty()) out += t.more + "\n";
    out += "```\n\n";
  }
  return out;
}

}  // namespace

std::string format_diff_markdown(const DiffResult& diff) {
  std::string others;
  for (std::size_t i = 1; i < diff.sides.size(); ++i) others += (i > 1 ? ", " : "") + diff.sides[i].name;
  std::string out =
      fmt::format("## schedlab diff: {} against {}\n\n", escaped(others), escaped(diff.sides.front().name));
  for (const auto& w : diff.warnings)
    if (w.rfind("FORCED:", 0) == 0) out += "> **WARNING**: " + escaped(w) + "\n\n";
  out += legend(diff) + "\n";
  out += table_markdown(verdict_table(diff, false)) + "\n";
  out += fmt::format(
      "Change: Hodges-Lehmann shift against the base, with its interval at 1-alpha (levels in the details); "
      "verdicts at alpha {:g} after Benjamini-Hochberg, margin ±{:g}%.\n\n",
      diff.options.alpha, diff.options.min_effect_pct);
  out += kernel_commits_markdown(diff);
  for (const auto& w : diff.warnings)
    if (w.rfind("FORCED:", 0) != 0) out += "> **WARNING**: " + escaped(w) + "\n\n";
  for (const auto& in : diff.instances)
    if (in.workload == "kernbench") out += table_markdown(kernbench_table(in, diff, 0)) + "\n";
  ProfileFormat top = diff.options.profile;
  if (top.lines == 0 && !top.all) top.lines = 5;
  for (const auto& in : diff.instances)
    for (const auto& p : in.profiles) {
      out += fmt::format("diffprofile {} {} -> {} ({} samples):\n\n", escaped(in.id),
                         escaped(diff.sides.front().name), escaped(p.side),
                         p.event.empty() ? "profile" : p.event);
      for (const auto& w : p.warnings) out += "> " + escaped(w) + "\n\n";
      out += "```\n" + format_diffprofile_rows(p, top) + "```\n\n";
    }
  const auto experiment = format_experiment_text(diff.experiment);
  if (!experiment.empty()) out += "```\n" + experiment + "```\n\n";
  if (!diff.environment.empty()) {
    std::vector<Column> cols = {{"field"}, {"category"}};
    for (const auto& s : diff.sides) cols.push_back({s.name});
    Table t(cols);
    for (const auto& d : diff.environment) {
      std::vector<std::string> row = {d.field, d.category};
      for (const auto& s : diff.sides) {
        std::string value;
        for (const auto& [side, v] : d.values)
          if (side == s.name) value = v;
        row.push_back(value);
      }
      t.add(std::move(row));
    }
    out += "Differences between the sides:\n\n" + table_markdown(t) + "\n";
  }
  out += "## Details\n\n";
  for (const auto& in : diff.instances) out += instance_details(in, diff);
  return out;
}

}  // namespace schedlab
