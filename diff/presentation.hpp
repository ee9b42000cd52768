#pragma once
// What the diff's text, markdown and JSON summary share: numbers as people read them, the verdict lines
// in the order they are read (regressions, improvements, the rest), and which counter rows are shown.
#include <string>
#include <vector>

#include "core/display.hpp"
#include "diff/diff.hpp"

namespace schedlab {

// An effect in the comparison's unit: "+12.3%", "-126%", or "+3.1 us" for a shift in the metric's unit;
// `brief`: percentages of 10 or more as whole numbers ("+31%"), for the verdict table.
std::string effect_value(double v, const std::string& effect_unit, bool brief = false);
// "[+1.2, +20.1]": the interval at the level the test achieves, the unit given by the change beside it.
std::string interval_value(const Comparison& c, bool brief = false);
// The verdict as printed: "inconclusive (MDE 12%)", "too few runs (one trial)", "worse" ...; `brief`
// leaves out why too few (the warnings and the details say it) and an MDE that does not apply.
std::string verdict_label(const Comparison& c, bool brief = false);

// What a table calls side `i`: its name, or with two sides "base" and "other" when a name is longer
// than a column of numbers (the legend says which is which).
std::string side_title(const DiffResult& diff, std::size_t i);
std::string side_title(const DiffResult& diff, const std::string& name);

// "6x3" (trials x repetitions), or the repetitions of one trial.
std::string n_text(const SideStats& s);
std::string p_text(double p);
// "threads=1 yields=1000000"
std::string params_text(const nlohmann::json& params);
// "Mann-Whitney U on trial medians" for "mann-whitney/trials"
std::string test_text(const std::string& test);

// One line of the verdict table: a headline metric of an instance against one other side, or the
// instance's failure rate when one side failed repetitions, or an instance a side lacks.
struct SummaryLine {
  const InstanceDiff* instance = nullptr;
  const MetricDiff* metric = nullptr;      // null for failures and missing instances
  const Comparison* comparison = nullptr;  // null when the side lacks the metric or the instance
  const FailureRate* failures = nullptr;   // the line of failed repetitions
  std::string side;
  std::string what;  // the metric's name, "failed repetitions", or "(not run)"
  std::string base;  // values as printed
  std::string other;
  std::string change;    // "-43%"
  std::string interval;  // "[-45, -41]"
  std::string verdict;   // as printed
  int group = 4;         // 0 worse, 1 worse (not beyond), 2 better, 3 better (not beyond), 4 the rest
};

// Regressions first, then improvements, each from the largest change; then the rest in instance order.
std::vector<SummaryLine> summary_lines(const DiffResult& diff);

// The counter rows of an instance that a reader sees: per-operation copies instead of the totals they
// come from, only those whose change lies outside the noise of their repetitions unless `all`, ranked
// by the size of the change (the largest first; with `all`, the moved ones first).
std::vector<const MetricDiff*> counters_shown(const InstanceDiff& in, bool all);
// How the shown counter `m` was read where that makes it an estimate or not the workload's alone (#22):
// "perf::CYCLES on k61: multiplexed in 1/3 repetitions, scaled up to x2.00 (time enabled / running): an
// estimate", "... contaminated in 3/3 repetitions: other tasks had up to 41.0% of the counted CPUs' busy
// time"; none for a counter read plainly.
std::vector<std::string> counter_quality_notes(const MetricDiff& m);
// Of the counter rows not shown by default, how many carry such a mark on some side.
std::size_t hidden_marked_counters(const InstanceDiff& in, bool all);
// Counter rows of an instance in all (moved or not), per-operation copies counted once.
std::size_t counters_total(const InstanceDiff& in);

// The commits between a git kernel and the base's (diff/kernel_commits.hpp), as the text, the markdown
// and the report print them. Title: "tip 89abcdef0123 against v6.12 0123456789ab in /srv/linux" (a
// dirty tree's commit marked "(dirty)"). Summary: "3 commits in 0123456789ab..89abcdef0123:", the ways
// an older or diverged side reads, or "commits between them: repository /x not readable here".
// More: "... and 5 more" when the log was capped, else empty.
struct CommitsText {
  std::string title;
  std::string summary;
  std::string more;
};
CommitsText commits_text(const KernelCommits& k, const std::string& base_name);

}  // namespace schedlab
