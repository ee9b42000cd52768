// The diff for scripts: the same content as the text, stable field names (README "diff --json").
#include <cmath>

#include "diff/diff.hpp"
#include "diff/presentation.hpp"

namespace schedlab {
namespace {

// JSON has no infinity or NaN: an undefined number is null.
nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

nlohmann::json stats_json(const SideStats& s) {
  return {{"trials", s.trials},     {"repetitions", s.repetitions}, {"median", number(s.median)},
          {"mean", number(s.mean)}, {"cv", number(s.cv)},           {"min", number(s.min)},
          {"max", number(s.max)}};
}

nlohmann::json pair_json(double lo, double hi) {
  return {number(lo), number(hi)};
}

nlohmann::json comparison_json(const Comparison& c, bool headline) {
  // The *_pct fields hold the effect when it is a ratio; a shift in units has them null (`shift`, `ci`,
  // `tost_ci` and `mde` hold the effect in `effect_unit` either way).
  const bool percent = c.effect_unit == "%";
  auto as_pct = [&](double v) { return percent ? number(v) : nlohmann::json(); };
  nlohmann::json notes = c.notes;
  return {{"side", c.side},
          {"stats", stats_json(c.stats)},
          {"test", c.test},
          {"n_base", c.n_base},
          {"n_other", c.n_other},
          {"p_value", number(c.p_value)},
          {"in_family", c.in_family},
          {"p_adjusted", headline && c.in_family ? number(c.p_adjusted) : nlohmann::json()},
          {"min_p", number(c.min_p)},
          {"t_test", c.t_test},
          {"welch_log_p", number(c.t_test_p)},
          {"effect_unit", c.effect_unit},
          {"shift", number(c.shift)},
          {"ci", pair_json(c.ci_lower, c.ci_upper)},
          {"tost_ci", pair_json(c.tost_lower, c.tost_upper)},
          {"mde", number(c.mde)},
          {"shift_pct", as_pct(c.shift)},
          {"ci_pct", percent ? pair_json(c.ci_lower, c.ci_upper) : pair_json(NAN, NAN)},
          {"ci_confidence", number(c.ci_confidence)},
          {"tost_ci_pct", percent ? pair_json(c.tost_lower, c.tost_upper) : pair_json(NAN, NAN)},
          {"mde_pct", as_pct(c.mde)},
          {"verdict", headline ? nlohmann::json(c.verdict) : nlohmann::json()},
          {"verdict_reason",
           headline && !c.verdict_reason.empty() ? nlohmann::json(c.verdict_reason) : nlohmann::json()},
          {"notes", notes},
          {"noise", number(c.noise)},
          {"outside_noise", c.outside_noise}};
}

// The verdict table, in the order the text shows it (presentation.hpp): the report opens on it.
nlohmann::json summary_json(const DiffResult& diff) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : summary_lines(diff)) {
    const auto kind = l.comparison ? "metric" : l.failures ? "failures" : "missing";
    nlohmann::json j = {{"instance", l.instance->id},
                        {"workload", l.instance->workload},
                        {"params_hash", l.instance->params_hash},
                        {"label", instance_label(l.instance->id, l.instance->workload)},
                        {"kind", kind},
                        {"metric", l.metric ? nlohmann::json(l.metric->name) : nlohmann::json()},
                        {"side", l.side},
                        {"text",
                         {{"base", l.base},
                          {"other", l.other},
                          {"change", l.change},
                          {"interval", l.interval},
                          {"verdict", l.verdict}}},
                        {"group", l.group}};
    if (l.comparison) {
      const auto& c = *l.comparison;
      j["unit"] = l.metric->unit;
      j["base"] = number(l.metric->base.median);
      j["other"] = number(c.stats.median);
      j["effect_unit"] = c.effect_unit;
      j["shift"] = number(c.shift);
      j["ci"] = pair_json(c.ci_lower, c.ci_upper);
      j["verdict"] = c.verdict;
    } else if (l.failures) {
      j["verdict"] = l.failures->verdict.empty() ? nlohmann::json() : nlohmann::json(l.failures->verdict);
    }
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json metric_json(const MetricDiff& m) {
  nlohmann::json comparisons = nlohmann::json::array();
  for (const auto& c : m.comparisons) comparisons.push_back(comparison_json(c, m.headline));
  nlohmann::json trends = nlohmann::json::array();
  for (const auto& t : m.trends) {
    trends.push_back({{"side", t.side},
                      {"kendall_tau", number(t.tau)},
                      {"p_value", number(t.p_value)},
                      {"flagged", t.flagged}});
  }
  nlohmann::json quality = nlohmann::json::array();
  for (const auto& [side, q] : m.quality)
    quality.push_back({{"side", side},
                       {"repetitions", q.repetitions},
                       {"multiplexed_repetitions", q.multiplexed},
                       {"max_scaling", number(q.max_scaling)},
                       {"contaminated_repetitions", q.contaminated},
                       {"max_foreign_share", number(q.max_foreign_share)}});
  nlohmann::json j = {
      {"name", m.name},
      {"kind", m.kind},
      {"unit", m.unit},
      {"direction", m.has_direction ? nlohmann::json(to_string(m.direction)) : nlohmann::json()},
      {"headline", m.headline},
      {"tail", m.tail},
      {"base", stats_json(m.base)},
      {"comparisons", comparisons},
      {"trends", trends}};
  if (m.kind == "counter") j["quality"] = quality;
  return j;
}

nlohmann::json instance_json(const InstanceDiff& in) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& m : in.metrics) metrics.push_back(metric_json(m));
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& f : in.failures) {
    failures.push_back({{"side", f.side},
                        {"failed", f.failed},
                        {"total", f.total},
                        {"fisher_p", number(f.p_value)},
                        {"verdict", f.verdict.empty() ? nlohmann::json() : nlohmann::json(f.verdict)}});
  }
  nlohmann::json profiles = nlohmann::json::array();
  for (const auto& p : in.profiles) profiles.push_back(to_json(p));
  nlohmann::json traces = nlohmann::json::array();
  for (const auto& t : in.traces) traces.push_back(to_json(t));
  nlohmann::json schedstat = nlohmann::json::array();
  for (const auto& t : in.schedstat) schedstat.push_back(to_json(t));
  return {{"id", in.id},
          {"profiles", profiles},
          {"traces", traces},
          {"diagnostic_schedstat", schedstat},
          {"workload", in.workload},
          {"workload_version", in.workload_version},
          {"params", in.params},
          {"params_hash", in.params_hash},
          {"missing_from", in.missing_from},
          {"failures", failures},
          {"metrics", metrics}};
}

// Each other side against the base when both are git kernels of one repository; empty otherwise.
nlohmann::json kernel_commits_json(const DiffResult& diff) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : diff.kernel_commits) {
    const auto& r = k.range;
    const auto t = commits_text(k, diff.sides.front().name);
    nlohmann::json log = nlohmann::json::array();
    for (const auto& c : r.log) log.push_back({{"commit", c.commit}, {"subject", c.subject}});
    const bool known = !r.error;
    out.push_back({{"side", k.side},
                   {"repository", r.repository},
                   {"base", {{"commit", r.base_commit}, {"dirty", k.base_dirty}}},
                   {"other", {{"commit", r.other_commit}, {"dirty", k.other_dirty}}},
                   {"error", known ? nlohmann::json() : nlohmann::json(*r.error)},
                   {"ahead", known ? nlohmann::json(r.ahead) : nlohmann::json()},
                   {"behind", known ? nlohmann::json(r.behind) : nlohmann::json()},
                   {"listed", known ? nlohmann::json(r.listed) : nlohmann::json()},
                   {"log", log},
                   {"more", known ? nlohmann::json(r.listed_count() - r.log.size()) : nlohmann::json()},
                   {"text", {{"title", t.title}, {"summary", t.summary}, {"more", t.more}}}});
  }
  return out;
}

}  // namespace

nlohmann::json diff_to_json(const DiffResult& diff) {
  nlohmann::json sides = nlohmann::json::array();
  for (const auto& s : diff.sides) {
    sides.push_back({{"name", s.name},
                     {"spec", s.spec},
                     {"role", &s == &diff.sides.front() ? "base" : "other"},
                     {"trials", s.trials},
                     {"smoke", s.smoke},
                     {"repetitions_per_trial", s.repetitions_per_trial},
                     {"interleaved_with_base", s.interleaved_with_base},
                     {"bh_family", s.family},
                     {"sources", s.sources}});
  }
  nlohmann::json environment = nlohmann::json::array();
  for (const auto& d : diff.environment) {
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [side, value] : d.values) values[side] = value;
    environment.push_back({{"field", d.field}, {"category", d.category}, {"values", values}});
  }
  nlohmann::json instances = nlohmann::json::array();
  for (const auto& in : diff.instances) instances.push_back(instance_json(in));
  return {{"schema", "schedlab.diff/1"},
          {"options",
           {{"alpha", diff.options.alpha},
            {"min_effect_pct", diff.options.min_effect_pct},
            {"force", diff.options.force},
            {"trend_alpha", diff.options.trend_alpha}}},
          {"sides", sides},
          {"summary", summary_json(diff)},
          {"kernel_commits", kernel_commits_json(diff)},
          {"warnings", diff.warnings},
          {"environment_differences", environment},
          {"instances", instances},
          {"experiment", diff.experiment},
          {"regression", diff.regression}};
}

}  // namespace schedlab
