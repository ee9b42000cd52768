// build_diff: matching instances across sides and running the pre-chosen tests on each metric.
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "diff/diff.hpp"
#include "diff/environment.hpp"
#include "diff/samples.hpp"
#include "stats/multiple.hpp"
#include "stats/parametric.hpp"
#include "stats/rank_tests.hpp"

namespace schedlab {
namespace {

constexpr double kPower = 0.8;

using Trials = std::vector<TrialValues>;

std::vector<double> flatten(const Trials& trials) {
  std::vector<double> all;
  for (const auto& t : trials) all.insert(all.end(), t.values.begin(), t.values.end());
  return all;
}

std::vector<double> trial_medians(const Trials& trials) {
  std::vector<double> out;
  for (const auto& t : trials) {
    if (!t.values.empty()) out.push_back(median(t.values));
  }
  return out;
}

SideStats side_stats(const Trials& trials) {
  auto all = flatten(trials);
  auto s = summarize(all);
  return {trials.size(), all.size(), s.median, s.mean, s.cv, s.min, s.max};
}

bool all_positive(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return x > 0; });
}

std::vector<double> logs(const std::vector<double>& v) {
  std::vector<double> out;
  out.reserve(v.size());
  for (double x : v) out.push_back(std::log(x));
  return out;
}

bool is_tail_metric(const std::string& name) {
  return name.find("p99") != std::string::npos || name.find("_max") != std::string::npos ||
         name.rfind("max_", 0) == 0;
}

// Sides are interleaved when their trials alternate in time (ABAB... or BABA...): then trial i of one
// side and trial i of the other ran under the same slow drift, and are analysed as pairs.
bool interleaved(const Side& base, const Side& other) {
  if (base.bundles.size() < 2 || base.bundles.size() != other.bundles.size()) return false;
  std::vector<std::pair<std::string, int>> order;
  for (const auto& b : base.bundles) order.emplace_back(b.bundle.started_at, 0);
  for (const auto& b : other.bundles) order.emplace_back(b.bundle.started_at, 1);
  std::sort(order.begin(), order.end());
  for (std::size_t i = 1; i < order.size(); ++i) {
    if (order[i].second == order[i - 1].second) return false;
  }
  return true;
}

// Repetitions of one invocation share its state (placement, host neighbours, memory layout), so they
// are not independent runs: on the noisy VM the A/A calibration found 29-50% false better/worse
// verdicts from them. Their test is shown; a verdict needs trials.
constexpr const char* kRepetitionTest = "mann-whitney/repetitions";

struct Test {
  std::string name;
  std::vector<double> x, y;  // baseline and other samples (trial medians or repetitions)
  bool paired = false;
};

Test choose_test(const Trials& base, const Trials& other, bool pairable) {
  if (base.size() >= 2 && other.size() >= 2) {
    if (pairable && base.size() == other.size()) {
      return {"wilcoxon-paired/trials", trial_medians(base), trial_medians(other), true};
    }
    return {"mann-whitney/trials", trial_medians(base), trial_medians(other), false};
  }
  return {kRepetitionTest, flatten(base), flatten(other), false};
}

double pct(double shift, double reference) {
  return reference != 0 ? 100.0 * shift / reference : 0;
}

void run_unpaired(const Test& t, double alpha, Comparison& c) {
  auto mw = stats::mann_whitney(t.x, t.y);
  c.p_value = mw.p_value;
  c.min_p = stats::mann_whitney_min_p(t.x.size(), t.y.size());
  double ref = median(t.x);
  auto hl = stats::hodges_lehmann(t.x, t.y, 1 - alpha);
  c.shift_pct = pct(hl.estimate, ref);
  c.ci_lower_pct = pct(hl.lower, ref);
  c.ci_upper_pct = pct(hl.upper, ref);
  c.ci_confidence = hl.confidence;
  auto tost = stats::hodges_lehmann(t.x, t.y, 1 - 2 * alpha);
  c.tost_lower_pct = pct(tost.lower, ref);
  c.tost_upper_pct = pct(tost.upper, ref);
  bool use_logs = all_positive(t.x) && all_positive(t.y);
  auto lx = use_logs ? logs(t.x) : t.x;
  auto ly = use_logs ? logs(t.y) : t.y;
  c.welch_log_p = stats::welch_t(lx, ly, 1 - alpha).p_value;
  double mds =
      stats::minimum_detectable_shift(sample_sd(lx), lx.size(), sample_sd(ly), ly.size(), alpha, kPower);
  c.mde_pct = use_logs ? 100.0 * std::expm1(mds) : pct(mds, ref);
}

// Pairs are compared as log ratios, so a shift reads as a ratio whatever the level of each pair.
void run_paired(const Test& t, double alpha, Comparison& c) {
  bool use_logs = all_positive(t.x) && all_positive(t.y);
  double ref = median(t.x);
  std::vector<double> d;
  for (std::size_t i = 0; i < t.x.size(); ++i) {
    d.push_back(use_logs ? std::log(t.y[i] / t.x[i]) : t.y[i] - t.x[i]);
  }
  auto to_pct = [&](double v) { return use_logs ? 100.0 * std::expm1(v) : pct(v, ref); };
  auto w = stats::wilcoxon_signed_rank(d);
  c.p_value = w.p_value;
  std::size_t nonzero = std::count_if(d.begin(), d.end(), [](double v) { return v != 0; });
  c.min_p = stats::wilcoxon_min_p(nonzero);
  auto hl = stats::hodges_lehmann_paired(d, 1 - alpha);
  c.shift_pct = to_pct(hl.estimate);
  c.ci_lower_pct = to_pct(hl.lower);
  c.ci_upper_pct = to_pct(hl.upper);
  c.ci_confidence = hl.confidence;
  auto tost = stats::hodges_lehmann_paired(d, 1 - 2 * alpha);
  c.tost_lower_pct = to_pct(tost.lower);
  c.tost_upper_pct = to_pct(tost.upper);
  auto lx = use_logs ? logs(t.x) : t.x;
  auto ly = use_logs ? logs(t.y) : t.y;
  c.welch_log_p = stats::welch_t(lx, ly, 1 - alpha).p_value;
  // A paired design's noise is the spread of the differences.
  double sd = sample_sd(d);
  double mds = d.size() < 2 ? INFINITY
                            : (stats::normal_quantile(1 - alpha / 2) + stats::normal_quantile(kPower)) *
                                  std::sqrt(M_PI / 3) * sd / std::sqrt(static_cast<double>(d.size()));
  c.mde_pct = to_pct(mds);
}

Comparison compare(const std::string& side, const Trials& base, const Trials& other, bool pairable,
                   double alpha) {
  Comparison c;
  c.side = side;
  c.stats = side_stats(other);
  auto test = choose_test(base, other, pairable);
  c.test = test.name;
  c.n_base = test.x.size();
  c.n_other = test.y.size();
  if (test.paired) {
    run_paired(test, alpha, c);
  } else {
    run_unpaired(test, alpha, c);
  }
  c.p_adjusted = c.p_value;
  return c;
}

Trend trend_of(const std::string& side, const Trials& trials, double alpha) {
  auto mk = stats::mann_kendall(flatten(trials));
  return {side, mk.statistic, mk.p_value, mk.p_value < alpha};
}

void judge(const MetricDiff& m, Comparison& c, const DiffOptions& o) {
  if (c.test == kRepetitionTest) {
    c.verdict = "too few runs";
    c.verdict_reason = "one trial on a side: its repetitions are not independent runs";
    return;
  }
  if (c.min_p > o.alpha) {
    c.verdict = "too few runs";
    c.verdict_reason = fmt::format("{} vs {} {} reach p = {:.3g} at best", c.n_base, c.n_other,
                                   c.test == "wilcoxon-paired/trials" ? "pairs" : "trials", c.min_p);
    return;
  }
  c.verdict_reason.clear();
  if (c.p_adjusted < o.alpha && c.shift_pct != 0) {
    bool higher = c.shift_pct > 0;
    bool good = m.direction == Direction::kHigherIsBetter ? higher : !higher;
    c.verdict = good ? "better" : "worse";
  } else if (c.tost_lower_pct >= -o.min_effect_pct && c.tost_upper_pct <= o.min_effect_pct) {
    c.verdict = fmt::format("equivalent (±{:g}%)", o.min_effect_pct);
  } else {
    c.verdict = "inconclusive";
  }
}

struct SideData {
  const Side* side;
  std::vector<std::pair<std::string, InstanceSamples>> instances;
  const InstanceSamples* find(const std::string& key) const {
    for (const auto& [k, s] : instances) {
      if (k == key) return &s;
    }
    return nullptr;
  }
};

const Trials* find_trials(const std::map<std::string, Trials>& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() || it->second.empty() ? nullptr : &it->second;
}

MetricDiff metric_row(const std::string& name, const std::string& kind, const Trials& base_trials,
                      const std::vector<SideData>& data, const std::string& key,
                      const std::vector<bool>& pairable, const DiffOptions& o) {
  MetricDiff m;
  m.name = name;
  m.kind = kind;
  m.base = side_stats(base_trials);
  m.tail = is_tail_metric(name);
  m.trends.push_back(trend_of(data[0].side->name, base_trials, o.trend_alpha));
  for (std::size_t i = 1; i < data.size(); ++i) {
    const auto* s = data[i].find(key);
    if (!s) continue;
    const auto* t = find_trials(kind == "counter" ? s->counters : s->metrics, name);
    if (!t) continue;
    m.comparisons.push_back(compare(data[i].side->name, base_trials, *t, pairable[i], o.alpha));
    m.trends.push_back(trend_of(data[i].side->name, *t, o.trend_alpha));
  }
  return m;
}

InstanceDiff instance_diff(const std::string& key, const InstanceSamples& base,
                           const std::vector<SideData>& data, const std::vector<bool>& pairable,
                           const DiffOptions& o) {
  const Instance& in = *base.first;
  InstanceDiff d{in.id, in.workload, in.params_hash, in.params, in.workload_version, {}, {}, {}, {}, {}, {}};
  for (const auto& [name, trials] : base.metrics) {
    auto m = metric_row(name, "metric", trials, data, key, pairable, o);
    if (auto it = in.metric_info.find(name); it != in.metric_info.end()) {
      m.unit = it->second.unit;
      m.direction = it->second.direction;
      m.headline = it->second.headline;
    }
    d.metrics.push_back(std::move(m));
  }
  // Headline metrics first, in the order the workload declared them (the map is alphabetical, so
  // keep the stable order among equals).
  std::stable_sort(d.metrics.begin(), d.metrics.end(),
                   [](const MetricDiff& a, const MetricDiff& b) { return a.headline > b.headline; });
  for (const auto& [name, trials] : base.counters) {
    auto m = metric_row(name, "counter", trials, data, key, pairable, o);
    m.unit = base.counter_units.at(name);
    m.has_direction = false;
    d.metrics.push_back(std::move(m));
  }
  d.failures.push_back({data[0].side->name, base.failed, base.total, 1});
  for (std::size_t i = 1; i < data.size(); ++i) {
    const auto* s = data[i].find(key);
    if (!s) {
      d.missing_from.push_back(data[i].side->name);
      continue;
    }
    double p =
        stats::fisher_exact(static_cast<long>(base.failed), static_cast<long>(base.total - base.failed),
                            static_cast<long>(s->failed), static_cast<long>(s->total - s->failed));
    d.failures.push_back({data[i].side->name, s->failed, s->total, p});
  }
  const auto base_profile = profile_totals(base);
  for (std::size_t i = 1; i < data.size(); ++i) {
    const auto* s = data[i].find(key);
    if (!s) continue;
    const auto other_profile = profile_totals(*s);
    if (base_profile.repetitions == 0 && other_profile.repetitions == 0) continue;
    d.profiles.push_back(diff_profiles(data[i].side->name, base_profile, other_profile));
  }
  for (std::size_t i = 1; i < data.size(); ++i) {
    const auto* s = data[i].find(key);
    if (!s) continue;
    auto t = diff_traces(data[i].side->name, base, *s);
    if (t.base_repetitions > 0 || t.other_repetitions > 0) d.traces.push_back(std::move(t));
    auto schedstat = diff_diagnostic_schedstat(data[i].side->name, base, *s);
    if (!schedstat.rows.empty()) d.schedstat.push_back(std::move(schedstat));
  }
  return d;
}

// Benjamini–Hochberg over every headline comparison of one other side, then the verdicts.
void adjust_and_judge(DiffResult& r) {
  for (std::size_t side = 1; side < r.sides.size(); ++side) {
    const auto& name = r.sides[side].name;
    std::vector<Comparison*> family;
    std::vector<const MetricDiff*> owners;
    for (auto& in : r.instances) {
      for (auto& m : in.metrics) {
        if (!m.headline) continue;
        for (auto& c : m.comparisons) {
          if (c.side == name) {
            family.push_back(&c);
            owners.push_back(&m);
          }
        }
      }
    }
    std::vector<double> p;
    for (auto* c : family) p.push_back(c->p_value);
    auto adjusted = stats::benjamini_hochberg(p);
    for (std::size_t i = 0; i < family.size(); ++i) {
      family[i]->p_adjusted = adjusted[i];
      judge(*owners[i], *family[i], r.options);
      if (family[i]->verdict == "worse") r.regression = true;
    }
  }
}

void check_versions(const InstanceDiff& d, const std::vector<SideData>& data, const std::string& key,
                    DiffResult& r) {
  for (std::size_t i = 1; i < data.size(); ++i) {
    const auto* s = data[i].find(key);
    if (!s || s->first->workload_version == d.workload_version) continue;
    auto what =
        fmt::format("instance {}: workload {} version {} on {} but {} on {}", d.id, d.workload,
                    d.workload_version, data[0].side->name, s->first->workload_version, data[i].side->name);
    if (!r.options.force)
      throw InputError(what + "; results of different versions do not compare (--force to compare anyway)");
    r.warnings.push_back("FORCED: " + what);
  }
}

}  // namespace

DiffResult build_diff(const std::vector<Side>& input_sides, const DiffOptions& options) {
  if (input_sides.size() < 2) throw InputError("diff needs a baseline and at least one other side");
  if (!(options.alpha > 0 && options.alpha < 0.5)) throw InputError("--alpha must lie in (0, 0.5)");
  if (!(options.min_effect_pct > 0)) throw InputError("--min-effect must be a positive percentage");
  const auto& sides = input_sides;
  DiffResult r;
  r.options = options;
  std::vector<SideData> data;
  std::vector<bool> pairable;
  for (const auto& s : sides) {
    data.push_back({&s, side_samples(s)});
    pairable.push_back(&s != &sides[0] && interleaved(sides[0], s));
    SideInfo info{s.name, s.spec, {}, s.bundles.size(), false, pairable.back()};
    for (const auto& b : s.bundles) {
      info.sources.push_back(b.path.string());
      info.smoke = info.smoke || b.bundle.smoke;
    }
    r.sides.push_back(std::move(info));
  }
  r.environment = environment_differences(sides);
  check_hardware(sides, options.force, r.warnings);
  for (const auto& [key, base] : data[0].instances) {
    auto d = instance_diff(key, base, data, pairable, options);
    check_versions(d, data, key, r);
    r.instances.push_back(std::move(d));
  }
  for (std::size_t i = 1; i < data.size(); ++i) {
    bool shared = std::any_of(data[0].instances.begin(), data[0].instances.end(),
                              [&](const auto& kv) { return data[i].find(kv.first) != nullptr; });
    if (!shared) {
      throw InputError(
          fmt::format("{} and {} have no workload instance in common (same workload and parameters)",
                      sides[0].spec, sides[i].spec));
    }
  }
  bool single_trial =
      std::any_of(r.sides.begin(), r.sides.end(), [](const SideInfo& s) { return s.trials < 2; });
  if (single_trial) {
    r.warnings.push_back(
        "a side has one trial: its repetitions are compared and shown, but give no verdict (they share "
        "one invocation's state and are not independent runs); take >= 4 trials per side (run --trials), "
        ">= 6 pairs when interleaved");
  }
  for (std::size_t i = 1; i < r.sides.size(); ++i) {
    if (r.sides[i].trials >= 2 && r.sides[0].trials >= 2 && !r.sides[i].interleaved_with_base) {
      r.warnings.push_back(fmt::format(
          "{} did not run interleaved with {}: a slow drift of the machine reads as a difference between "
          "them (see bench/aa_calibration.py); alternate the trials of the two for a paired test",
          r.sides[i].name, r.sides[0].name));
    }
  }
  for (const auto& side : sides) {
    // `schedlab kernel boot` puts the qemu accelerator on the guest's command line.
    bool emulated = std::any_of(side.bundles.begin(), side.bundles.end(), [](const LoadedBundle& b) {
      const auto* accel = &b.bundle.kernel;
      for (const char* key : {"booted_by", "accel"})
        accel = accel && accel->is_object() && accel->contains(key) ? &(*accel)[key] : nullptr;
      return accel && *accel == "tcg";
    });
    if (emulated)
      r.warnings.push_back(side.name +
                           " ran in an emulated guest (qemu TCG): its results are functional checks, "
                           "not performance verdicts");
  }
  for (const auto& side : r.sides) {
    if (side.smoke)
      r.warnings.push_back(side.name + " is a quick (smoke) run: too few repetitions for verdicts");
  }
  adjust_and_judge(r);
  return r;
}

}  // namespace schedlab
