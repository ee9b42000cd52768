#include "experiment/sequential_experiment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/stats.hpp"
#include "stats/parametric.hpp"

namespace schedlab {
namespace {

double pct(double log_ratio) {
  return std::expm1(log_ratio) * 100;
}
double log_of_pct(double p) {
  return std::log1p(p / 100);
}
std::string interval_text(double lo, double hi) {
  return fmt::format("[{:+.2f}%, {:+.2f}%]", pct(lo), pct(hi));
}
// A spread of exactly 0 (identical values) would plan 2 pairs: the smallest spread a clock gives instead.
double usable_sd(double sd) {
  return std::max(sd, 1e-6);
}

}  // namespace

std::optional<double> trial_value(const Bundle& b, const std::string& metric) {
  std::vector<double> values;
  for (const auto& in : b.instances)
    for (const auto& rep : in.repetitions)
      if (rep.ok())
        if (auto it = rep.metrics.find(metric); it != rep.metrics.end() && it->second.value > 0)
          values.push_back(it->second.value);
  if (values.empty()) return std::nullopt;
  return median(values);
}

nlohmann::json read_experiment_record(const std::filesystem::path& file) {
  try {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
  } catch (const std::exception&) {
    return nullptr;
  }
}

std::vector<double> unstopped_ln_ratios(const nlohmann::json& record) {
  const auto design = record.value("design", nlohmann::json());
  const auto pairs = record.value("pairs", nlohmann::json());
  if (!design.is_object() || !pairs.is_array()) return {};
  const bool fixed = design.value("kind", "") == "fixed";
  const auto wanted = fixed ? pairs.size() : design.value("pilot_pairs", std::size_t{0});
  std::vector<double> d;
  for (const auto& p : pairs) {
    if (d.size() >= wanted) break;
    if (p.is_object() && p.contains("ln_ratio") && p["ln_ratio"].is_number())
      d.push_back(p["ln_ratio"].get<double>());
  }
  return d;
}

std::optional<KnownSpread> pooled_spread(const std::vector<std::pair<std::string, nlohmann::json>>& records,
                                         std::size_t min_pairs, std::size_t keep, const std::string& where) {
  struct Earlier {
    std::string started;
    std::vector<double> d;
    double pair_seconds;
    std::string from;
    nlohmann::json levels;
  };
  std::vector<Earlier> found;
  for (const auto& [path, j] : records) {
    if (!j.is_object()) continue;
    auto d = unstopped_ln_ratios(j);
    if (d.size() < std::max<std::size_t>(min_pairs, 2)) continue;
    const auto observed = j.value("observed", nlohmann::json());
    const double pair_seconds = observed.is_object() ? observed.value("median_pair_seconds", 0.0) : 0.0;
    found.push_back(
        {j.value("started_at", ""), std::move(d), pair_seconds, path, j.value("levels", nlohmann::json())});
  }
  if (found.empty()) return std::nullopt;
  std::sort(found.begin(), found.end(), [](const auto& x, const auto& y) { return x.started > y.started; });
  if (found.size() > keep) found.resize(keep);
  KnownSpread h;
  double ss = 0, df = 0;
  std::vector<double> seconds;
  for (const auto& e : found) {
    // Each record around its own mean: the records are of one comparison, but the machine drifts.
    const double sd = sample_sd(e.d);
    ss += sd * sd * static_cast<double>(e.d.size() - 1);
    df += static_cast<double>(e.d.size() - 1);
    h.pairs += e.d.size();
    if (e.pair_seconds > 0) seconds.push_back(e.pair_seconds);
  }
  h.sd = std::sqrt(ss / df);
  h.pair_seconds = seconds.empty() ? 0 : median(seconds);
  h.levels = found[0].levels;
  h.source = found.size() == 1
                 ? found[0].from
                 : fmt::format("{} experiments under {}, the latest {}", found.size(), where, found[0].from);
  return h;
}

SequentialExperiment::SequentialExperiment(SequentialDesign design, Direction direction,
                                           std::optional<KnownSpread> known)
    : design_(design),
      direction_(direction),
      target_(design.target_pct > 0 ? log_of_pct(design.target_pct) : 0),
      margin_lower_(log_of_pct(-design.margin_pct)),
      margin_upper_(log_of_pct(design.margin_pct)) {
  if (known) {
    make_plan(known->sd, fmt::format("{} pairs of {}", known->pairs, known->source), known->pair_seconds);
    if (known->pair_seconds > 0) known_pair_seconds_ = known->pair_seconds;
  }
}

void SequentialExperiment::make_plan(double sd, const std::string& source, double pair_seconds) {
  const std::size_t max_pairs = design_.max_pairs ? design_.max_pairs : 100000;
  const double s = usable_sd(sd);
  plan_ = stats::plan_sequential(s, target_, design_.alpha, design_.power, max_pairs);
  const std::size_t by_budget = design_.budget_s && pair_seconds > 0
                                    ? static_cast<std::size_t>(*design_.budget_s / pair_seconds)
                                    : max_pairs;
  const std::size_t affordable = std::min(max_pairs, by_budget);
  const double mde_at_budget =
      affordable >= 2 ? stats::sequence_detectable_shift(static_cast<double>(affordable), s, plan_->tuning,
                                                         design_.alpha, design_.power)
                      : INFINITY;
  plan_json_ = {
      {"sd_log_ratio", sd},
      {"sd_source", source},
      {"pairs", plan_->pairs},
      {"reachable_within_max_pairs", plan_->reachable},
      {"tuning_r", plan_->tuning},
      {"predicted_mde_pct", pct(plan_->detectable)},
      {"pair_seconds", pair_seconds},
      {"expected_seconds", pair_seconds * static_cast<double>(plan_->pairs)},
      {"affordable_pairs", affordable},
      {"predicted_mde_at_budget_pct",
       std::isfinite(mde_at_budget) ? nlohmann::json(pct(mde_at_budget)) : nlohmann::json(nullptr)}};
  plan_line_ = fmt::format(
      "plan: sd of ln(b/a) {:.2f}% ({}); {} pairs for an MDE of {:.1f}% (alpha {}, power {}), "
      "about {:.1f} min{}",
      sd * 100, source, plan_->pairs, pct(plan_->detectable), design_.alpha, design_.power,
      pair_seconds * static_cast<double>(plan_->pairs) / 60,
      affordable < plan_->pairs
          ? fmt::format("; the budget allows {} pairs: MDE {:.1f}% there", affordable, pct(mde_at_budget))
          : std::string());
}

std::vector<std::string> SequentialExperiment::add_pair(std::optional<double> a, std::optional<double> b,
                                                        bool b_first, double seconds, double elapsed_s) {
  std::vector<std::string> lines;
  pair_seconds_.push_back(seconds);
  if (!a || !b || !(*a > 0) || !(*b > 0)) {
    ++lost_;
    return lines;
  }
  const double x = std::log(*b / *a);
  d_.push_back(x);
  (b_first ? ba_d_ : ab_d_).push_back(x);
  if (decided_ || !sequential())
    return lines;  // a pair that completed after the decision (the daemon's other instance)
  const std::size_t n = d_.size();
  if (!plan_ && n >= design_.pilot_pairs) {
    make_plan(stats::look(d_, 1, design_.alpha, -1, 1).sd, fmt::format("pilot of {} pairs", n),
              median_pair_seconds());
    lines.push_back(plan_line_);
  }
  if (!plan_ || n < design_.pilot_pairs || (n - design_.pilot_pairs) % design_.look_every != 0) return lines;
  const auto l = stats::look(d_, plan_->tuning, design_.alpha, margin_lower_, margin_upper_);
  looks_.push_back({{"n", n},
                    {"elapsed_s", elapsed_s},
                    {"mean_ln_ratio", l.mean},
                    {"sd_ln_ratio", l.sd},
                    {"estimate_pct", pct(l.mean)},
                    {"interval_pct", {pct(l.lower), pct(l.upper)}},
                    {"boundary_pct", {pct(l.lower - l.mean), pct(l.upper - l.mean)}},
                    {"state", to_string(l.state)}});
  lines.push_back(fmt::format("look at {} pairs: {:+.2f}% {} {}", n, pct(l.mean),
                              interval_text(l.lower, l.upper),
                              l.state == stats::SequentialState::kContinue ? "continue" : verdict_text(l)));
  if (l.state != stats::SequentialState::kContinue) decided_ = l;
  return lines;
}

std::optional<std::string> SequentialExperiment::stop_reason(double elapsed_s) const {
  if (decided_)
    return decided_->state == stats::SequentialState::kEquivalent
               ? fmt::format("the sequence lies inside ±{:g}%", design_.margin_pct)
               : std::string("the sequence excludes 0");
  if (lost_ > std::max<std::size_t>(2, d_.size() / 10))
    return fmt::format("{} pairs lost to failed repetitions", lost_);
  const std::size_t pairs = d_.size() + lost_;
  if (design_.max_pairs && pairs >= design_.max_pairs)
    return sequential() ? fmt::format("max pairs ({}) reached", design_.max_pairs)
                        : std::string("the pairs asked for are done");
  if (design_.budget_s) {
    const double per_pair = pair_seconds_.empty() ? known_pair_seconds_.value_or(0) : median_pair_seconds();
    if (elapsed_s + per_pair > *design_.budget_s)
      return fmt::format("budget: {:.0f} s of {:.0f} s used, a pair takes {:.1f} s", elapsed_s,
                         *design_.budget_s, per_pair);
  }
  return std::nullopt;
}

std::size_t SequentialExperiment::planned_pairs() const {
  const std::size_t cap = design_.max_pairs ? design_.max_pairs : 100000;
  return std::min(plan_ ? plan_->pairs : design_.pilot_pairs, cap);
}

double SequentialExperiment::median_pair_seconds() const {
  return pair_seconds_.empty() ? 0 : median(pair_seconds_);
}

std::string SequentialExperiment::verdict_text(const stats::SequentialLook& l) const {
  if (l.state == stats::SequentialState::kEquivalent)
    return fmt::format("equivalent (±{:g}%)", design_.margin_pct);
  const bool up_is_worse = direction_ == Direction::kLowerIsBetter;
  const bool up = l.state == stats::SequentialState::kIncrease;
  const std::string word = up == up_is_worse ? "worse" : "better";
  return l.within_margin ? fmt::format("{} (not beyond ±{:g}%)", word, design_.margin_pct) : word;
}

SequentialExperiment::Verdict SequentialExperiment::finish(const std::string& reason,
                                                           double elapsed_s) const {
  Verdict v;
  v.stop = {{"reason", reason},
            {"pairs", d_.size() + lost_},
            {"pairs_used", d_.size()},
            {"pairs_lost", lost_},
            {"elapsed_s", elapsed_s}};
  if (!sequential()) {
    v.text = "fixed";
    v.stop["verdict"] = v.text;
    add_order_warning(v);
    return v;
  }
  std::optional<stats::SequentialLook> last = decided_;
  // A look at the end is one more look: the sequence is valid at any n, whether or not a block ended.
  if (!last && plan_ && d_.size() >= 2)
    last = stats::look(d_, plan_->tuning, design_.alpha, margin_lower_, margin_upper_);
  if (last && last->state != stats::SequentialState::kContinue) {
    v.text = verdict_text(*last);
  } else if (last) {
    const double mde = stats::sequence_detectable_shift(static_cast<double>(d_.size()), usable_sd(last->sd),
                                                        plan_->tuning, design_.alpha, design_.power);
    v.text = fmt::format("inconclusive (MDE {:.1f}%)", pct(mde));
    v.stop["achieved_mde_pct"] = pct(mde);
    v.stop["rules_out"] =
        fmt::format("changes below {:+.2f}% and above {:+.2f}%", pct(last->lower), pct(last->upper));
  } else {
    v.text = "inconclusive (too few pairs for a look)";
  }
  if (last) {
    v.stop["estimate_pct"] = pct(last->mean);
    v.stop["interval_pct"] = {pct(last->lower), pct(last->upper)};
  }
  if (plan_ && d_.size() >= 2) {
    const double sd = usable_sd(stats::look(d_, 1, design_.alpha, -1, 1).sd);
    v.stop["mde_at_planned_pairs_with_observed_sd_pct"] = pct(stats::sequence_detectable_shift(
        static_cast<double>(plan_->pairs), sd, plan_->tuning, design_.alpha, design_.power));
    if (!v.stop.contains("achieved_mde_pct"))
      v.stop["achieved_mde_pct"] = pct(stats::sequence_detectable_shift(
          static_cast<double>(d_.size()), sd, plan_->tuning, design_.alpha, design_.power));
  }
  v.stop["verdict"] = v.text;
  v.lines.push_back(fmt::format(
      "verdict: {}{} after {} pairs ({:.1f} min); stopped: {}", v.text,
      last ? fmt::format(": {:+.2f}% {}", pct(last->mean), interval_text(last->lower, last->upper))
           : std::string(),
      d_.size(), elapsed_s / 60, reason));
  if (v.stop.contains("rules_out"))
    v.lines.push_back("the sequence rules out " + v.stop["rules_out"].get<std::string>());
  add_order_warning(v);
  return v;
}

void SequentialExperiment::add_order_warning(Verdict& v) const {
  const auto order = order_effect_json();
  if (order.is_object() && order["flagged"].get<bool>())
    v.lines.push_back(
        fmt::format("warning: an order effect: ba pairs differ from ab pairs by {:+.2f}% (Welch p {:.3g})",
                    order["difference_pct"].get<double>(), order["welch_p"].get<double>()));
}

nlohmann::json SequentialExperiment::design_json() const {
  if (!sequential())
    return {
        {"kind", "fixed"}, {"pairs", design_.max_pairs}, {"order", "seeded coin flip per pair (ab or ba)"}};
  return {{"kind", "sequential"},
          {"procedure",
           "two-sided asymptotic confidence sequence (Waudby-Smith et al. 2024, Gaussian mixture, running "
           "variance) on the mean of ln(b/a) over pairs"},
          {"target_mde_pct", design_.target_pct},
          {"margin_pct", design_.margin_pct},
          {"alpha", design_.alpha},
          {"power", design_.power},
          {"max_pairs", design_.max_pairs ? nlohmann::json(design_.max_pairs) : nlohmann::json(nullptr)},
          {"budget_s", design_.budget_s ? nlohmann::json(*design_.budget_s) : nlohmann::json(nullptr)},
          {"pilot_pairs", design_.pilot_pairs},
          {"look_every", design_.look_every},
          {"order", "seeded coin flip per pair (ab or ba)"}};
}

nlohmann::json SequentialExperiment::observed_json() const {
  if (d_.size() < 2) return nullptr;
  const auto l = stats::look(d_, 1, design_.alpha, -1, 1);
  return {{"pairs", d_.size()},
          {"sd_log_ratio", l.sd},
          {"mean_ln_ratio", l.mean},
          {"median_pair_seconds", median_pair_seconds()}};
}

nlohmann::json SequentialExperiment::order_effect_json() const {
  if (ab_d_.size() < 2 || ba_d_.size() < 2) return nullptr;
  // The same comparison read in ab pairs against ba pairs (Welch on ln ratios).
  const auto t = stats::welch_t(ab_d_, ba_d_, 0.95);
  return {{"ab_pairs", ab_d_.size()},
          {"ba_pairs", ba_d_.size()},
          {"difference_pct", pct(t.mean_difference)},
          {"welch_p", t.p_value},
          {"flagged", t.p_value < 0.01}};
}

}  // namespace schedlab
