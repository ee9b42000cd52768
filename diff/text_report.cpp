// The diff as people read it: the verdicts on one screen, then kernbench's classic table and the top
// diffprofile lines, as kernel developers paste them into mail, then the details per instance.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "diff/diff.hpp"
#include "diff/experiment_record.hpp"
#include "diff/presentation.hpp"
#include "diff/report_tables.hpp"

namespace schedlab {
namespace {

constexpr std::size_t kTopProfileLines = 5;  // the front's diffprofile: largest increases and decreases

// Free text (warnings, notes) kept to the width, continuation lines indented.
std::string para(const std::string& first, const std::string& text, const TextLayout& l, std::size_t indent) {
  return wrap(first + text, l.width, indent) + "\n";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start < text.size();) {
    const auto end = text.find('\n', start);
    out.push_back(text.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// --- the first screen -----------------------------------------------------------------------------

// What is compared, and the legend: each side's name, what it was given as, its trials.
std::string title(const DiffResult& diff, const TextLayout& l) {
  std::size_t headline = 0;
  for (const auto& in : diff.instances)
    for (const auto& m : in.metrics) headline += m.headline;
  std::string others;
  for (std::size_t i = 1; i < diff.sides.size(); ++i) others += (i > 1 ? ", " : "") + diff.sides[i].name;
  std::string out =
      para("",
           fmt::format("schedlab diff: {} against {}, {} instance{}, {} headline metric{}", others,
                       diff.sides.front().name, diff.instances.size(), diff.instances.size() == 1 ? "" : "s",
                       headline, headline == 1 ? "" : "s"),
           l, 2);
  std::size_t longest = 0;
  for (const auto& s : diff.sides) longest = std::max(longest, s.name.size());
  for (const auto& s : diff.sides) {
    const bool base = &s == &diff.sides.front();
    auto what = fmt::format("{} trial{} x {} repetitions{}{}", s.trials, s.trials == 1 ? "" : "s",
                            s.repetitions_per_trial, s.smoke ? " (quick)" : "",
                            s.interleaved_with_base ? ", interleaved with the base" : "");
    out += para(fmt::format("  {:<5}  {:<{}}  ", base ? "base" : "other", s.name, longest),
                s.spec + ": " + what, l, 9 + longest);
  }
  return out;
}

std::string verdicts(const DiffResult& diff, const TextLayout& l) {
  return verdict_table(diff, l.colour).text(l.width) +
         para("",
              fmt::format("change: Hodges-Lehmann shift against the base, with its interval at 1-alpha "
                          "(levels in the details); verdicts at alpha {:g} after Benjamini-Hochberg, "
                          "margin ±{:g}%",
                          diff.options.alpha, diff.options.min_effect_pct),
              l, 2);
}

// The commits between git kernels (diff/kernel_commits.hpp): what changed in the code, beside the
// verdicts on what changed in the numbers.
std::string kernel_commits_text(const DiffResult& diff, const TextLayout& l) {
  std::string out;
  for (const auto& k : diff.kernel_commits) {
    const auto t = commits_text(k, diff.sides.front().name);
    out += para("kernel commits: ", t.title, l, 2) + para("  ", t.summary, l, 4);
    for (const auto& c : k.range.log) out += para("    " + c.commit + " ", c.subject, l, 5 + c.commit.size());
    if (!t.more.empty()) out += "    " + t.more + "\n";
  }
  return out;
}

// What the counts are (notes first), then one header line: the rows that follow are the classic block.
std::string profile_header(const ProfileDiff& p, const InstanceDiff& in, const DiffResult& diff,
                           const TextLayout& l) {
  const auto& base = diff.sides.front().name;
  std::string out;
  for (const auto& w : p.warnings) out += para("  note: ", w, l, 4);
  if (!p.lines.empty())
    out += para("  note: ",
                fmt::format("{} scaled to {}'s {}s (x{:.3f}); {} vs {} diagnostic repetitions", p.side, base,
                            p.per, p.scale, p.base_repetitions, p.other_repetitions),
                l, 4);
  return out + para(fmt::format("diffprofile {} {} -> {} ", in.id, base, p.side),
                    "(" + (p.event.empty() ? std::string("profile") : p.event) + " samples)", l, 2);
}

// --- details --------------------------------------------------------------------------------------

// Each headline verdict in full, with why where there is a reason, and the trials left out of the pairs.
std::string verdict_notes(const InstanceDiff& in, const TextLayout& l) {
  std::string out;
  for (const auto& m : in.metrics) {
    if (!m.headline) continue;
    for (const auto& c : m.comparisons) {
      const auto who = fmt::format("  {} on {}: ", m.name, c.side);
      const bool why = !c.verdict_reason.empty() && c.verdict != "too few runs";
      out +=
          para(who, paint_verdict(verdict_label(c), l.colour) + (why ? "; " + c.verdict_reason : ""), l, 4);
      for (const auto& note : c.notes) out += para("    ", note, l, 6);
    }
  }
  return out;
}

std::string counters_text(const InstanceDiff& in, const DiffResult& diff, const TextLayout& l) {
  const auto total = counters_total(in);
  if (total == 0) return "";
  const auto shown = counters_shown(in, diff.options.all_counters).size();
  std::string out =
      diff.options.all_counters
          ? para("  ",
                 fmt::format("counters, all {} (exploratory: no verdicts; moved: beyond the noise of "
                             "their repetitions):",
                             total),
                 l, 4)
          : para("  ",
                 fmt::format("counters that moved beyond the noise of their repetitions: {} of {} "
                             "(exploratory; --all shows every one)",
                             shown, total),
                 l, 4);
  if (shown > 0) out += counters_table(in, diff, 2).text(l.width);
  for (const auto* m : counters_shown(in, diff.options.all_counters))
    for (const auto& note : counter_quality_notes(*m)) out += para("    ", note, l, 6);
  if (const auto marked = hidden_marked_counters(in, diff.options.all_counters); marked > 0)
    out += para("    ",
                fmt::format("{} counter{} not shown multiplexed or contaminated on a side (--all shows them)",
                            marked, marked == 1 ? "" : "s"),
                l, 6);
  return out;
}

std::string diagnostic_text(const DiagnosticTable& d, const DiffResult& diff, const TextLayout& l) {
  const auto& base_name = diff.sides.front().name;
  const bool trace = d.kind == "trace";
  if (d.rows.empty()) {
    if (!trace) return "";  // schedstat absent or off on a side: the counter rows already say why
    return para("  ",
                fmt::format("trace {} -> {}: no traced repetition on {} (run --trace on both sides)",
                            base_name, d.side, d.base_repetitions == 0 ? base_name : d.side),
                l, 4);
  }
  const auto what =
      trace ? fmt::format(
                  "trace {} -> {}: the workload's tasks in {} vs {} traced repetitions (exploratory: "
                  "one repetition per trial)",
                  base_name, d.side, d.base_repetitions, d.other_repetitions)
            : fmt::format(
                  "schedstat {} -> {}: {} vs {} diagnostic repetitions, kernel.sched_schedstats on "
                  "(exploratory)",
                  base_name, d.side, d.base_repetitions, d.other_repetitions);
  return para("  ", what, l, 4) + diagnostic_table(d, diff, 4).text(l.width);
}

std::string instance_details(const InstanceDiff& in, const DiffResult& diff, const TextLayout& l) {
  std::string out =
      para(in.id + " ", fmt::format("({} {}: {})", in.workload, in.workload_version, params_text(in.params)),
           l, 4);
  for (const auto& side : in.missing_from) out += fmt::format("  not in {}\n", side);
  std::string test;
  for (const auto& m : in.metrics)
    if (m.headline && !m.comparisons.empty()) test = m.comparisons.front().test;
  if (!test.empty()) out += fmt::format("  primary test: {}\n", test_text(test));
  out += metrics_table(in, diff, 2).text(l.width);
  out += verdict_notes(in, l);
  out += counters_text(in, diff, l);
  for (const auto& f : in.failures) {
    if (f.failed == 0) continue;
    out +=
        para("  ",
             fmt::format("failed repetitions on {}: {}/{}{}{}", f.side, f.failed, f.total,
                         &f == &in.failures.front() ? "" : fmt::format(" (Fisher p {})", p_text(f.p_value)),
                         f.verdict.empty() ? "" : ": " + paint_verdict(f.verdict, l.colour)),
             l, 4);
  }
  for (const auto& m : in.metrics)
    for (const auto& t : m.trends)
      if (t.flagged && m.kind == "metric")
        out +=
            para("  ",
                 fmt::format("trend: {} {} with run order on {} (Kendall tau {:+.2f}, p {}): drift confounds "
                             "the comparison",
                             m.name, t.tau > 0 ? "rises" : "falls", t.side, t.tau, p_text(t.p_value)),
                 l, 4);
  for (const auto& t : in.traces) out += diagnostic_text(t, diff, l);
  for (const auto& t : in.schedstat) out += diagnostic_text(t, diff, l);
  return out + "\n";
}

std::string environment_text(const DiffResult& diff, const TextLayout& l) {
  if (diff.environment.empty()) return "";
  std::string out = "differences between the sides:\n";
  for (const auto& d : diff.environment) {
    out += fmt::format("  {:<13} {}\n", d.category, d.field);
    for (const auto& [side, value] : d.values) out += para(fmt::format("      {:<10} ", side), value, l, 17);
  }
  return out + "\n";
}

}  // namespace

std::string format_diff_text(const DiffResult& diff, const TextLayout& l) {
  std::string out;
  auto warning = [&](const std::string& w) {
    return para(l.colour ? "\033[1;31mWARNING\033[0m: " : "WARNING: ", w, l, 2);
  };
  // A forced comparison across hardware or methods heads the output: every line below rests on it.
  bool forced = false;
  for (const auto& w : diff.warnings)
    if (w.rfind("FORCED:", 0) == 0) out += warning(w), forced = true;
  if (forced) out += "\n";
  out += title(diff, l) + "\n" + verdicts(diff, l);
  if (const auto commits = kernel_commits_text(diff, l); !commits.empty()) out += "\n" + commits;
  std::string warnings;
  for (const auto& w : diff.warnings)
    if (w.rfind("FORCED:", 0) != 0) warnings += warning(w);
  if (!warnings.empty()) out += "\n" + warnings;
  for (const auto& in : diff.instances)
    if (in.workload == "kernbench") out += "\n" + kernbench_table(in, diff, 2).text(l.width);
  ProfileFormat top = diff.options.profile;
  if (top.lines == 0 && !top.all) top.lines = kTopProfileLines;
  for (const auto& in : diff.instances)
    for (const auto& p : in.profiles)
      out += "\n" + profile_header(p, in, diff, l) + format_diffprofile_rows(p, top);
  out += "\n";
  for (const auto& line : split_lines(format_experiment_text(diff.experiment))) {
    const auto lead = std::min(line.find_first_not_of(' '), line.size());
    out += line.empty() ? "\n" : para(line.substr(0, lead), line.substr(lead), l, lead + 2);
  }
  out += environment_text(diff, l);
  // The family is per other side: its trial-level headline comparisons (diff/README.md).
  std::string families;
  for (std::size_t i = 1; i < diff.sides.size(); ++i)
    families += fmt::format("{}{} {}", i == 1 ? "" : ", ", diff.sides[i].name, diff.sides[i].family);
  out += para("",
              fmt::format(
                  "details: alpha {:g}; Benjamini-Hochberg per side over its trial-level headline "
                  "comparisons ({}); better/worse need the interval beyond ±{:g}%, equivalent needs the "
                  "1-2alpha interval inside it; changes are Hodges-Lehmann shifts of log values as % (of "
                  "the values in their unit where one is <= 0)",
                  diff.options.alpha, families, diff.options.min_effect_pct),
              l, 2) +
         "\n";
  for (const auto& in : diff.instances) out += instance_details(in, diff, l);
  return out;
}

}  // namespace schedlab
