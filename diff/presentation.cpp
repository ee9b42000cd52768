#include "diff/presentation.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/display.hpp"
#include "core/per_operation.hpp"

namespace schedlab {
namespace {

std::string signed_bound(double v, bool brief) {
  if (!std::isfinite(v)) return "n/a";
  return std::fabs(v) >= (brief ? 10 : 100) ? fmt::format("{:+.0f}", v) : fmt::format("{:+.1f}", v);
}

std::string signed_pct(double v, bool brief) {
  return std::isfinite(v) ? signed_bound(v, brief) + "%" : "n/a";
}

int group_of(const std::string& verdict) {
  if (verdict == "worse") return 0;
  if (verdict.rfind("worse", 0) == 0) return 1;
  if (verdict == "better") return 2;
  if (verdict.rfind("better", 0) == 0) return 3;
  return 4;
}

// The size a line is ranked by: the change in %, or in units relative to the base.
double size_of(const Comparison& c, double base) {
  const double size = c.effect_unit == "%" ? std::fabs(c.shift)
                      : base != 0          ? std::fabs(c.shift / base) * 100
                                           : INFINITY;
  return std::isnan(size) ? 0 : size;
}

}  // namespace

std::string effect_value(double v, const std::string& effect_unit, bool brief) {
  if (effect_unit == "%") return signed_pct(v, brief);
  if (!std::isfinite(v)) return "n/a";
  const auto s = display_scale(v, effect_unit);
  return scaled_number(v, s, true) + s.unit;
}

std::string interval_value(const Comparison& c, bool brief) {
  if (c.effect_unit == "%")
    return "[" + signed_bound(c.ci_lower, brief) + ", " + signed_bound(c.ci_upper, brief) + "]";
  // In the scale of the change beside it, whose unit it shares.
  const auto s = display_scale(
      c.shift != 0 ? c.shift : std::max(std::fabs(c.ci_lower), std::fabs(c.ci_upper)), c.effect_unit);
  return "[" + scaled_number(c.ci_lower, s, true) + ", " + scaled_number(c.ci_upper, s, true) + "]";
}

std::string verdict_label(const Comparison& c, bool brief) {
  if (c.verdict == "inconclusive") {
    // No MDE where none applies (a verdict withheld, as for an emulated guest): the details say why.
    if (brief && !std::isfinite(c.mde)) return c.verdict;
    auto mde = std::isfinite(c.mde) ? effect_value(c.mde, c.effect_unit, brief) : std::string("n/a");
    if (!mde.empty() && mde[0] == '+') mde.erase(0, 1);
    return c.verdict + " (MDE " + mde + ")";
  }
  if (c.verdict == "too few runs" && brief) return c.verdict;
  if (c.verdict == "too few runs")
    return c.verdict +
           (c.test == "mann-whitney/repetitions" ? " (one trial)" : fmt::format(" (min p {:.3f})", c.min_p));
  return c.verdict;
}

std::string side_title(const DiffResult& diff, std::size_t i) {
  constexpr std::size_t kLongest = 12;
  const bool short_names = std::all_of(diff.sides.begin(), diff.sides.end(),
                                       [](const SideInfo& s) { return s.name.size() <= kLongest; });
  if (short_names || diff.sides.size() != 2) return diff.sides.at(i).name;
  return i == 0 ? "base" : "other";
}

std::string side_title(const DiffResult& diff, const std::string& name) {
  for (std::size_t i = 0; i < diff.sides.size(); ++i)
    if (diff.sides[i].name == name) return side_title(diff, i);
  return name;
}

std::string n_text(const SideStats& s) {
  return s.trials > 1 ? fmt::format("{}x{}", s.trials, s.repetitions / std::max<std::size_t>(s.trials, 1))
                      : fmt::format("{}", s.repetitions);
}

std::string p_text(double p) {
  if (!std::isfinite(p)) return "n/a";
  return p < 0.001 ? fmt::format("{:.1e}", p) : fmt::format("{:.3f}", p);
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

std::vector<SummaryLine> summary_lines(const DiffResult& diff) {
  std::vector<std::pair<double, SummaryLine>> lines;  // with the size it is ranked by
  for (const auto& in : diff.instances) {
    for (const auto& m : in.metrics) {
      if (!m.headline) continue;
      for (const auto& c : m.comparisons) {
        SummaryLine l;
        l.instance = &in;
        l.metric = &m;
        l.comparison = &c;
        l.side = c.side;
        l.what = m.name;
        l.base = human_value(m.base.median, m.unit);
        l.other = human_value(c.stats.median, m.unit);
        l.change = effect_value(c.shift, c.effect_unit, true);
        l.interval = interval_value(c, true);
        l.verdict = verdict_label(c, true);
        l.group = group_of(c.verdict);
        lines.emplace_back(size_of(c, m.base.median), std::move(l));
      }
    }
    for (const auto& f : in.failures) {
      if (&f == &in.failures.front() || (f.failed == 0 && in.failures.front().failed == 0)) continue;
      SummaryLine l;
      l.instance = &in;
      l.failures = &f;
      l.side = f.side;
      l.what = "failed repetitions";
      l.base = fmt::format("{}/{}", in.failures.front().failed, in.failures.front().total);
      l.other = fmt::format("{}/{}", f.failed, f.total);
      l.change =
          fmt::format("{:+d}", static_cast<long>(f.failed) - static_cast<long>(in.failures.front().failed));
      l.interval = fmt::format("Fisher p {:.3g}", f.p_value);
      l.verdict = f.verdict.empty() ? "no difference at alpha" : f.verdict;
      l.group = group_of(f.verdict);
      lines.emplace_back(INFINITY, std::move(l));
    }
    for (const auto& side : in.missing_from) {
      SummaryLine l;
      l.instance = &in;
      l.side = side;
      l.what = "(not run)";
      l.verdict = "not in " + side;
      lines.emplace_back(0, std::move(l));
    }
  }
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) {
    if (a.second.group != b.second.group) return a.second.group < b.second.group;
    return a.second.group < 4 && a.first > b.first;
  });
  std::vector<SummaryLine> out;
  for (auto& [_, l] : lines) out.push_back(std::move(l));
  return out;
}

namespace {

// The relative size of a counter's change, the largest over the sides: what the rows are ranked by.
double counter_size(const MetricDiff& m) {
  double size = 0;
  for (const auto& c : m.comparisons) {
    const double delta = std::fabs(c.stats.mean - m.base.mean);
    size = std::max(size, m.base.mean != 0 ? delta / std::fabs(m.base.mean) : (delta > 0 ? INFINITY : 0));
  }
  return size;
}

bool moved(const MetricDiff& m) {
  return std::any_of(m.comparisons.begin(), m.comparisons.end(),
                     [](const auto& c) { return c.outside_noise; });
}

// Counters whose per-operation copy the instance has: the copy is shown instead.
bool replaced_by_copy(const InstanceDiff& in, const MetricDiff& m) {
  if (!per_operation_source(m.name).empty()) return false;
  const auto copy = m.name + kPerOperationSuffix;
  return std::any_of(in.metrics.begin(), in.metrics.end(),
                     [&](const MetricDiff& o) { return o.kind == "counter" && o.name == copy; });
}

}  // namespace

std::vector<const MetricDiff*> counters_shown(const InstanceDiff& in, bool all) {
  std::vector<const MetricDiff*> out;
  for (const auto& m : in.metrics)
    if (m.kind == "counter" && !replaced_by_copy(in, m) && (all || moved(m))) out.push_back(&m);
  std::stable_sort(out.begin(), out.end(), [](const MetricDiff* a, const MetricDiff* b) {
    if (moved(*a) != moved(*b)) return moved(*a);
    return counter_size(*a) > counter_size(*b);
  });
  return out;
}

std::vector<std::string> counter_quality_notes(const MetricDiff& m) {
  std::vector<std::string> out;
  for (const auto& [side, q] : m.quality) {
    if (q.multiplexed > 0)
      out.push_back(
          fmt::format("{} on {}: multiplexed in {}/{} repetitions, scaled up to x{:.2f} (time enabled / "
                      "running): an estimate",
                      m.name, side, q.multiplexed, q.repetitions, q.max_scaling));
    if (q.contaminated > 0)
      out.push_back(
          fmt::format("{} on {}: contaminated in {}/{} repetitions: other tasks had up to {:.1f}% of "
                      "the counted CPUs' busy time",
                      m.name, side, q.contaminated, q.repetitions, 100 * q.max_foreign_share));
  }
  return out;
}

std::size_t hidden_marked_counters(const InstanceDiff& in, bool all) {
  if (all) return 0;
  std::size_t n = 0;
  for (const auto* m : counters_shown(in, true))
    if (!moved(*m) && !counter_quality_notes(*m).empty()) ++n;
  return n;
}

std::size_t counters_total(const InstanceDiff& in) {
  return counters_shown(in, true).size();
}

CommitsText commits_text(const KernelCommits& k, const std::string& base_name) {
  const auto& r = k.range;
  auto id = [](const std::string& commit, bool dirty) {
    return commit.substr(0, 12) + (dirty ? " (dirty)" : "");
  };
  auto commits = [](std::size_t n) { return fmt::format("{} commit{}", n, n == 1 ? "" : "s"); };
  const auto base = r.base_commit.substr(0, 12), other = r.other_commit.substr(0, 12);
  CommitsText t;
  t.title = fmt::format("{} {} against {} {} in {}", k.side, id(r.other_commit, k.other_dirty), base_name,
                        id(r.base_commit, k.base_dirty), r.repository);
  if (r.error) {
    t.summary = "commits between them: " + *r.error;
    return t;
  }
  if (r.ahead == 0 && r.behind == 0)
    t.summary = k.base_dirty || k.other_dirty
                    ? "the same commit: what differs is a dirty tree's changes, which git does not hold"
                    : "the same commit";
  else if (r.behind == 0)
    t.summary = fmt::format("{} in {}..{}:", commits(r.ahead), base, other);
  else if (r.ahead == 0)
    t.summary = fmt::format("{} is older: {} has {} more, {}..{}:", k.side, base_name, commits(r.behind),
                            other, base);
  else
    t.summary = fmt::format("the two diverged: {} only in {}, {} only in {}; {}..{}:", commits(r.ahead),
                            k.side, r.behind, base_name, base, other);
  if (r.listed_count() > r.log.size())
    t.more = fmt::format("... and {} more", r.listed_count() - r.log.size());
  return t;
}

}  // namespace schedlab
