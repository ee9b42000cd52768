#include "experiment/experiment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <regex>

#include "collector/runner/interrupt.hpp"
#include "collector/sysinfo/sysinfo.hpp"
#include "core/atomic_file.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/stats.hpp"
#include "stats/parametric.hpp"
#include "stats/sequential.hpp"

namespace schedlab {
namespace {

constexpr const char* kSchema = "schedlab.experiment/1";
// Pairs an earlier experiment must have for its spread to plan a new one instead of a pilot: as many as
// the default pilot, whose spread it replaces.
constexpr std::size_t kHistoryPairs = 6;
constexpr std::size_t kHistoryRecords = 5;

double pct(double log_ratio) {
  return std::expm1(log_ratio) * 100;
}
double log_of_pct(double p) {
  return std::log1p(p / 100);
}

const PreparedInstance& only_instance(const PreparedRun& run, const char* side) {
  if (run.instances().size() != 1)
    throw InputError(
        fmt::format("--versus: an experiment compares one workload instance; side {} has {} "
                    "(give one --workload, and no list value)",
                    side, run.instances().size()));
  return run.instances().front();
}

MetricDesc chosen_metric(const PreparedInstance& in, const std::string& name) {
  const auto metrics = in.workload->metrics();
  for (const auto& m : metrics)
    if (name.empty() ? m.headline : m.name == name) return m;
  std::string known;
  for (const auto& m : metrics) known += (known.empty() ? "" : ", ") + m.name;
  if (name.empty()) throw InputError("--versus: workload " + in.workload->name() + " has no headline metric");
  throw InputError("--metric " + name + ": not a metric of " + in.workload->name() + " (known: " + known +
                   ")");
}

// The key under which this comparison's spread is remembered: what ran on each side and what is read.
std::string comparison_key(const PreparedRun& a, const PreparedRun& b, const std::string& metric) {
  const auto& ia = a.instances().front();
  const auto& ib = b.instances().front();
  return ia.workload->name() + "/" + canonical_hash(ia.params) + "/" + canonical_hash(ib.params) + "/" +
         metric + "/r" + std::to_string(a.plan().repetitions);
}

struct History {
  double sd = 0;            // of the pair log ratios
  double pair_seconds = 0;  // median
  std::size_t pairs = 0;
  std::string from;  // the record it came from
};

// Earlier experiments under OUT on this hardware with the same comparison, each with enough pairs: the
// latest few pooled (variances weighted by their degrees of freedom), so that one short experiment does
// not decide the next one's plan, and the machine's present state still does.
std::optional<History> find_history(const std::filesystem::path& out, const std::string& key,
                                    const std::string& fingerprint) {
  struct Earlier {
    std::string started;
    std::size_t pairs;
    double sd, pair_seconds;
    std::string from;
  };
  std::vector<Earlier> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const auto record = it->path() / "experiment.json";
    if (!std::filesystem::is_regular_file(record, ec)) continue;
    nlohmann::json j;
    try {
      std::ifstream in(record);
      j = nlohmann::json::parse(in);
    } catch (const std::exception&) {
      continue;  // a record being written, or not ours: it is not history
    }
    if (j.value("schema", "") != kSchema || j.value("comparison_key", "") != key ||
        j.value("host_fingerprint", "") != fingerprint)
      continue;
    const auto observed = j.value("observed", nlohmann::json::object());
    const auto pairs = observed.value("pairs", std::size_t{0});
    const double sd = observed.value("sd_log_ratio", 0.0);
    // An experiment that stopped `equivalent` stopped because its spread looked small: its spread is
    // biased low, and planning from it would make the next one stop early on a small spread too.
    const auto stop = j.value("stop", nlohmann::json());
    const auto verdict = stop.is_object() ? stop.value("verdict", std::string()) : std::string();
    if (pairs < kHistoryPairs || !(sd > 0) || verdict.rfind("equivalent", 0) == 0) continue;
    found.push_back(
        {j.value("started_at", ""), pairs, sd, observed.value("median_pair_seconds", 0.0), record.string()});
  }
  if (found.empty()) return std::nullopt;
  std::sort(found.begin(), found.end(), [](const auto& x, const auto& y) { return x.started > y.started; });
  if (found.size() > kHistoryRecords) found.resize(kHistoryRecords);
  History h;
  double ss = 0, df = 0;
  std::vector<double> seconds;
  for (const auto& e : found) {
    ss += e.sd * e.sd * static_cast<double>(e.pairs - 1);
    df += static_cast<double>(e.pairs - 1);
    h.pairs += e.pairs;
    seconds.push_back(e.pair_seconds);
  }
  h.sd = std::sqrt(ss / df);
  h.pair_seconds = median(seconds);
  h.from = found.size() == 1 ? found[0].from
                             : fmt::format("{} experiments under {}, the latest {}", found.size(),
                                           out.string(), found[0].from);
  return h;
}

double median_of(std::vector<double> v) {
  return v.empty() ? 0 : median(std::move(v));
}

// The trial's value: the median of its ok repetitions (the diff's trial statistic); none when none is ok.
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

// The variance at each level present on the running kernel (Kalibera and Jones, "Rigorous benchmarking
// in reasonable time"): repetitions within a trial, and trials beyond what their repetitions explain,
// on log values, with what each level costs here; from them the repetitions per trial that buy the most
// precision per second of machine time.
struct Levels {
  std::vector<std::vector<double>> trials;  // log values of each trial's ok repetitions
  std::vector<double> rep_seconds, trial_seconds;

  void add(const Bundle& b, const std::string& metric, double seconds) {
    std::vector<double> logs;
    for (const auto& in : b.instances)
      for (const auto& rep : in.repetitions) {
        rep_seconds.push_back(rep.duration_s);
        if (auto it = rep.metrics.find(metric); rep.ok() && it != rep.metrics.end() && it->second.value > 0)
          logs.push_back(std::log(it->second.value));
      }
    if (logs.size() >= 2) trials.push_back(std::move(logs));
    trial_seconds.push_back(seconds);
  }

  nlohmann::json estimate(int repetitions) const {
    if (trials.size() < 3) return nullptr;
    double within = 0, df = 0;
    std::vector<double> means;
    for (const auto& t : trials) {
      double m = 0;
      for (double x : t) m += x / static_cast<double>(t.size());
      for (double x : t) within += (x - m) * (x - m);
      df += static_cast<double>(t.size() - 1);
      means.push_back(m);
    }
    within /= df;
    double grand = 0, between = 0;
    for (double m : means) grand += m / static_cast<double>(means.size());
    for (double m : means) between += (m - grand) * (m - grand) / static_cast<double>(means.size() - 1);
    // E[variance of trial means] = sigma_trial^2 + sigma_repetition^2 / r
    const double trial_var = std::max(0.0, between - within / repetitions);
    const double c_rep = median(rep_seconds);
    const double c_trial = std::max(0.0, median(trial_seconds) - repetitions * c_rep);  // start-up, warm-up
    nlohmann::json j = {{"sigma_repetition", std::sqrt(within)},
                        {"sigma_trial", std::sqrt(trial_var)},
                        {"repetition_seconds", c_rep},
                        {"trial_overhead_seconds", c_trial},
                        {"trials", trials.size()}};
    // Precision per machine time is best at r = sqrt(c_trial / c_rep * sigma_rep^2 / sigma_trial^2).
    if (trial_var > 0 && c_rep > 0)
      j["best_repetitions_per_trial"] =
          std::max(1.0, std::round(std::sqrt(c_trial / c_rep * within / trial_var)));
    return j;
  }
};

std::string verdict_word(stats::SequentialState s, Direction d) {
  const bool up_is_worse = d == Direction::kLowerIsBetter;
  if (s == stats::SequentialState::kIncrease) return up_is_worse ? "worse" : "better";
  if (s == stats::SequentialState::kDecrease) return up_is_worse ? "better" : "worse";
  return to_string(s);
}

std::string interval_text(double lo, double hi) {
  return fmt::format("[{:+.2f}%, {:+.2f}%]", pct(lo), pct(hi));
}

}  // namespace

double parse_duration(const std::string& text, const std::string& option) {
  static const std::regex form(
      R"(^\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*$)");
  std::smatch m;
  if (text.empty() || !std::regex_match(text, m, form) || (!m[1].matched && !m[2].matched && !m[3].matched))
    throw InputError(option + " '" + text + "': expected a duration such as 90s, 20m, 1h30m or 2h");
  double s = 0;
  if (m[1].matched) s += std::stod(m[1].str()) * 3600;
  if (m[2].matched) s += std::stod(m[2].str()) * 60;
  if (m[3].matched) s += std::stod(m[3].str());
  return s;
}

void check_experiment(const PreparedRun& a, const PreparedRun& b, const ExperimentOptions& o) {
  const auto& ia = only_instance(a, "a");
  only_instance(b, "b");
  chosen_metric(ia, o.metric);
  if (!(o.alpha > 0 && o.alpha < 0.5))
    throw InputError(fmt::format("--alpha {}: must lie in (0, 0.5)", o.alpha));
  if (!o.target_pct) {
    if (o.margin_pct || o.budget_s || o.max_pairs)
      throw InputError(
          "--margin, --budget and --max-trials plan a sequential experiment: give --target-mde too");
    if (o.fixed_pairs < 1) throw InputError("--trials must be at least 1");
    return;
  }
  const double target = *o.target_pct;
  if (!(target > 0) || !std::isfinite(target))
    throw InputError(fmt::format("--target-mde {}: must be a positive percentage", target));
  if (target >= 100) throw InputError(fmt::format("--target-mde {}: must be below 100%", target));
  if (o.margin_pct) {
    if (!(*o.margin_pct > 0))
      throw InputError(fmt::format("--margin {}: must be a positive percentage", *o.margin_pct));
    if (*o.margin_pct > target)
      throw InputError(
          fmt::format("--margin {}: larger than --target-mde {}: an experiment sized to see {}% "
                      "cannot promise equivalence within {}%",
                      *o.margin_pct, target, target, *o.margin_pct));
  }
  if (!o.max_pairs && !o.budget_s)
    throw InputError("--target-mde: give --max-trials N, --budget DURATION or both");
  if (o.pilot_pairs < 4) throw InputError(fmt::format("--pilot {}: at least 4 pairs", o.pilot_pairs));
  if (o.look_every < 1) throw InputError(fmt::format("--look-every {}: at least 1 pair", o.look_every));
  if (o.max_pairs && o.max_pairs < o.pilot_pairs)
    throw InputError(fmt::format("--max-trials {}: below the pilot's {} pairs, the first look", o.max_pairs,
                                 o.pilot_pairs));
  if (o.budget_s) {
    if (!(*o.budget_s > 0)) throw InputError("--budget: must be a positive duration");
    const auto fingerprint = collect_sysinfo(a.paths()).host.value("fingerprint", std::string());
    if (auto h = find_history(o.out_dir, comparison_key(a, b, chosen_metric(ia, o.metric).name), fingerprint);
        h && h->pair_seconds > *o.budget_s)
      throw InputError(fmt::format("--budget {:g} s: below one pair, which took {:.1f} s here ({})",
                                   *o.budget_s, h->pair_seconds, h->from));
  }
}

ExperimentOutcome run_experiment(PreparedRun& a, PreparedRun& b, const ExperimentOptions& o,
                                 Progress& progress) {
  check_experiment(a, b, o);
  const auto& ia = a.instances().front();
  const MetricDesc metric = chosen_metric(ia, o.metric);
  const bool sequential = o.target_pct.has_value();
  const double target = sequential ? log_of_pct(*o.target_pct) : 0;
  const double margin_pct = o.margin_pct.value_or(o.target_pct.value_or(0));
  const double margin_upper = sequential ? log_of_pct(margin_pct) : 1,
               margin_lower = sequential ? log_of_pct(-margin_pct) : -1;
  const std::size_t max_pairs = sequential ? (o.max_pairs ? static_cast<std::size_t>(o.max_pairs) : 100000)
                                           : static_cast<std::size_t>(o.fixed_pairs);

  const auto sys = collect_sysinfo(a.paths());
  const std::string fingerprint = sys.host.value("fingerprint", std::string());
  const std::string key = comparison_key(a, b, metric.name);
  const auto history = sequential ? find_history(o.out_dir, key, fingerprint) : std::nullopt;

  const std::string id = new_run_id(a.plan().seed);
  ExperimentOutcome out;
  out.dir = o.out_dir / id;
  std::error_code ec;
  if (!std::filesystem::create_directory(out.dir, ec) || ec)
    throw Error("cannot create " + out.dir.string() + (ec ? ": " + ec.message() : ": it exists"));
  std::filesystem::create_directory(out.dir / "a");
  std::filesystem::create_directory(out.dir / "b");
  out.record = out.dir / "experiment.json";

  // Both sides' copies carry the same key, so `schedlab diff a b` pairs them though their parameters differ.
  const std::string compared_as = "experiment " + id + ": " + ia.id;
  nlohmann::json record = {
      {"schema", kSchema},
      {"id", id},
      {"started_at", utc_timestamp()},
      {"host_fingerprint", fingerprint},
      {"comparison_key", key},
      {"instance", ia.id},
      {"workload", ia.workload->name()},
      {"metric", {{"name", metric.name}, {"unit", metric.unit}, {"direction", to_string(metric.direction)}}},
      {"sides",
       {{"a", {{"params", ia.params}, {"dir", "a"}}},
        {"b", {{"params", b.instances().front().params}, {"dir", "b"}, {"versus", o.versus}}}}},
      {"repetitions_per_trial", a.plan().repetitions},
      {"seed", a.plan().seed},
      {"design", sequential ? nlohmann::json{{"kind", "sequential"},
                                             {"procedure",
                                              "two-sided asymptotic confidence sequence (Waudby-Smith et al. "
                                              "2024, Gaussian mixture, "
                                              "running variance) on the mean of ln(b/a) over pairs"},
                                             {"target_mde_pct", *o.target_pct},
                                             {"margin_pct", margin_pct},
                                             {"alpha", o.alpha},
                                             {"power", o.power},
                                             {"max_pairs", o.max_pairs ? nlohmann::json(o.max_pairs)
                                                                       : nlohmann::json(nullptr)},
                                             {"budget_s", o.budget_s ? nlohmann::json(*o.budget_s)
                                                                     : nlohmann::json(nullptr)},
                                             {"pilot_pairs", o.pilot_pairs},
                                             {"look_every", o.look_every},
                                             {"order", "seeded coin flip per pair (ab or ba)"}}
                            : nlohmann::json{{"kind", "fixed"},
                                             {"pairs", o.fixed_pairs},
                                             {"order", "seeded coin flip per pair (ab or ba)"}}},
      {"plan", nullptr},
      {"looks", nlohmann::json::array()},
      {"pairs", nlohmann::json::array()},
      {"stop", nullptr}};
  auto save = [&] { write_file_atomic(out.record, record.dump(2) + "\n", /*replace=*/true); };
  save();

  std::vector<std::string> lines;
  auto say = [&](const std::string& text) {
    lines.push_back(text);
    progress.message(text);
  };
  say(fmt::format(
      "experiment {}: {} {} ({}), a: as given, b: {}; {} repetitions per trial", id, ia.id, metric.name,
      to_string(metric.direction),
      o.versus.empty() ? std::string("the same (A/A)") : fmt::format("{}", fmt::join(o.versus, " ")),
      a.plan().repetitions));

  std::optional<stats::SequentialPlan> plan;
  auto make_plan = [&](double sd, const std::string& source, double pair_seconds) {
    // A spread of exactly 0 (identical values) would plan 2 pairs; the smallest spread a clock gives instead.
    const double s = std::max(sd, 1e-6);
    plan = stats::plan_sequential(s, target, o.alpha, o.power, max_pairs);
    const std::size_t by_budget =
        o.budget_s && pair_seconds > 0 ? static_cast<std::size_t>(*o.budget_s / pair_seconds) : max_pairs;
    const std::size_t affordable = std::min(max_pairs, by_budget);
    const double mde_at_budget = affordable >= 2
                                     ? stats::sequence_detectable_shift(static_cast<double>(affordable), s,
                                                                        plan->tuning, o.alpha, o.power)
                                     : INFINITY;
    record["plan"] = {
        {"sd_log_ratio", sd},
        {"sd_source", source},
        {"pairs", plan->pairs},
        {"reachable_within_max_pairs", plan->reachable},
        {"tuning_r", plan->tuning},
        {"predicted_mde_pct", pct(plan->detectable)},
        {"pair_seconds", pair_seconds},
        {"expected_seconds", pair_seconds * static_cast<double>(plan->pairs)},
        {"affordable_pairs", affordable},
        {"predicted_mde_at_budget_pct",
         std::isfinite(mde_at_budget) ? nlohmann::json(pct(mde_at_budget)) : nlohmann::json(nullptr)}};
    say(fmt::format(
        "plan: sd of ln(b/a) {:.2f}% ({}); {} pairs for an MDE of {:.1f}% (alpha {}, power {}), "
        "about {:.1f} min{}",
        sd * 100, source, plan->pairs, pct(plan->detectable), o.alpha, o.power,
        pair_seconds * static_cast<double>(plan->pairs) / 60,
        affordable < plan->pairs
            ? fmt::format("; the budget allows {} pairs: MDE {:.1f}% there", affordable, pct(mde_at_budget))
            : std::string()));
  };
  if (history)
    make_plan(history->sd, fmt::format("{} pairs of {}", history->pairs, history->from),
              history->pair_seconds);

  InterruptGuard interrupt(BrokenPipe::kInterrupts);
  TrialRunner run_a(a, progress, interrupt.flag(), id + "-a");
  TrialRunner run_b(b, progress, interrupt.flag(), id + "-b");
  std::mt19937_64 coin(a.plan().seed ^ 0x0a0bULL);
  const double start = monotonic_seconds();
  std::vector<double> d;  // ln(b/a) of the pairs with both values
  std::vector<double> pair_seconds;
  std::vector<double> ab_d, ba_d;
  Levels levels;
  std::size_t lost = 0;
  std::string stop_reason;
  std::optional<stats::SequentialLook> decided;

  for (std::size_t pair = 0;; ++pair) {
    const double elapsed = monotonic_seconds() - start;
    const double per_pair =
        pair_seconds.empty() ? (history ? history->pair_seconds : 0) : median_of(pair_seconds);
    if (pair >= max_pairs) {
      stop_reason =
          sequential ? fmt::format("max pairs ({}) reached", max_pairs) : "the pairs asked for are done";
      break;
    }
    if (o.budget_s && elapsed + per_pair > *o.budget_s) {
      stop_reason = fmt::format("budget: {:.0f} s of {:.0f} s used, a pair takes {:.1f} s", elapsed,
                                *o.budget_s, per_pair);
      break;
    }
    const bool b_first = (coin() & 1) != 0;
    // For the progress line: the plan's pairs once there is a plan, the pilot's before.
    const int planned =
        static_cast<int>(!sequential ? max_pairs
                         : plan      ? std::min<std::size_t>(plan->pairs, max_pairs)
                                : std::min<std::size_t>(max_pairs, static_cast<std::size_t>(o.pilot_pairs)));
    // The first trial waits for a quiet machine; after it the experiment's own trials are the load.
    SettlePolicy settle = a.plan().settle;
    if (pair > 0) settle.max_wait_s = 0;
    nlohmann::json experiment = {{"id", id}, {"pair", pair}, {"order", b_first ? "ba" : "ab"}};
    std::optional<double> value[2];
    double pair_start = monotonic_seconds();
    bool interrupted = false;
    for (int position = 0; position < 2 && !interrupted; ++position) {
      const int side = (position == 0) == b_first ? 1 : 0;
      auto& runner = side == 0 ? run_a : run_b;
      const char* name = side == 0 ? "a" : "b";
      experiment["side"] = name;
      experiment["position"] = position;
      const double trial_start = monotonic_seconds();
      auto trial = runner.run_trial(
          static_cast<int>(pair), std::max(planned, static_cast<int>(pair) + 1),
          out.dir / name / fmt::format("{}-{}-trial{}.json", id, name, pair + 1),
          position == 0 ? settle : SettlePolicy{0, settle.max_load_per_cpu, settle.max_running},
          [&](Bundle& bundle) {
            bundle.experiment = experiment;
            for (auto& in : bundle.instances) in.compared_as = compared_as;
          });
      out.failed_repetitions += trial.failed_repetitions;
      interrupted = trial.interrupted;
      value[side] = trial_value(trial.bundle, metric.name);
      levels.add(trial.bundle, metric.name, monotonic_seconds() - trial_start);
      settle.max_wait_s = 0;
    }
    const double seconds = monotonic_seconds() - pair_start;
    nlohmann::json row = {{"pair", pair},
                          {"order", b_first ? "ba" : "ab"},
                          {"a", value[0] ? nlohmann::json(*value[0]) : nlohmann::json(nullptr)},
                          {"b", value[1] ? nlohmann::json(*value[1]) : nlohmann::json(nullptr)},
                          {"seconds", seconds}};
    if (interrupted) {
      out.interrupted = true;
      stop_reason = "interrupted";
      row["interrupted"] = true;
      record["pairs"].push_back(row);
      break;
    }
    pair_seconds.push_back(seconds);
    if (value[0] && value[1]) {
      const double x = std::log(*value[1] / *value[0]);
      row["ln_ratio"] = x;
      d.push_back(x);
      (b_first ? ba_d : ab_d).push_back(x);
    } else {
      ++lost;
      row["lost"] = "no ok repetition on a side";
    }
    record["pairs"].push_back(row);
    if (lost > std::max<std::size_t>(2, d.size() / 10)) {
      stop_reason = fmt::format("{} pairs lost to failed repetitions", lost);
      save();
      break;
    }
    if (!sequential) {
      save();
      continue;
    }
    if (!plan && d.size() >= static_cast<std::size_t>(o.pilot_pairs)) {
      std::vector<double> pilot(d.begin(), d.end());
      make_plan(stats::look(pilot, 1, o.alpha, -1, 1).sd, fmt::format("pilot of {} pairs", d.size()),
                median_of(pair_seconds));
    }
    const auto n = d.size();
    if (plan && n >= static_cast<std::size_t>(o.pilot_pairs) &&
        (n - static_cast<std::size_t>(o.pilot_pairs)) % static_cast<std::size_t>(o.look_every) == 0) {
      const auto l = stats::look(d, plan->tuning, o.alpha, margin_lower, margin_upper);
      record["looks"].push_back({{"n", n},
                                 {"elapsed_s", monotonic_seconds() - start},
                                 {"mean_ln_ratio", l.mean},
                                 {"sd_ln_ratio", l.sd},
                                 {"estimate_pct", pct(l.mean)},
                                 {"interval_pct", {pct(l.lower), pct(l.upper)}},
                                 {"boundary_pct", {pct(l.lower - l.mean), pct(l.upper - l.mean)}},
                                 {"state", to_string(l.state)}});
      say(fmt::format("look at {} pairs: {:+.2f}% {} {}", n, pct(l.mean), interval_text(l.lower, l.upper),
                      l.state == stats::SequentialState::kContinue
                          ? "continue"
                          : verdict_word(l.state, metric.direction)));
      if (l.state != stats::SequentialState::kContinue) {
        decided = l;
        stop_reason = l.state == stats::SequentialState::kEquivalent
                          ? fmt::format("the sequence lies inside ±{}%", margin_pct)
                          : "the sequence excludes 0";
        save();
        break;
      }
    }
    save();
  }

  const double elapsed = monotonic_seconds() - start;
  nlohmann::json stop = {{"reason", stop_reason},
                         {"pairs", record["pairs"].size()},
                         {"pairs_used", d.size()},
                         {"pairs_lost", lost},
                         {"elapsed_s", elapsed}};
  // The order effect: the same comparison read in ab pairs against ba pairs (Welch on ln ratios).
  if (ab_d.size() >= 2 && ba_d.size() >= 2) {
    const auto t = stats::welch_t(ab_d, ba_d, 0.95);
    record["order_effect"] = {{"ab_pairs", ab_d.size()},
                              {"ba_pairs", ba_d.size()},
                              {"difference_pct", pct(t.mean_difference)},
                              {"welch_p", t.p_value},
                              {"flagged", t.p_value < 0.01}};
    if (t.p_value < 0.01)
      say(fmt::format("warning: an order effect: ba pairs differ from ab pairs by {:+.2f}% (Welch p {:.3g})",
                      pct(t.mean_difference), t.p_value));
  }
  if (d.size() >= 2) {
    const auto l = stats::look(d, 1, o.alpha, -1, 1);
    record["observed"] = {{"pairs", d.size()},
                          {"sd_log_ratio", l.sd},
                          {"mean_ln_ratio", l.mean},
                          {"median_pair_seconds", median_of(pair_seconds)}};
  }
  record["levels"] = levels.estimate(a.plan().repetitions);
  if (record["levels"].is_object() && record["levels"].contains("best_repetitions_per_trial")) {
    const auto& lv = record["levels"];
    say(fmt::format(
        "levels: sigma {:.2f}% between repetitions ({:.2f} s each), {:.2f}% between trials ({:.2f} s "
        "of start-up and warm-up each): {} repetitions per trial would buy the most precision per "
        "second here ({} given)",
        lv["sigma_repetition"].get<double>() * 100, lv["repetition_seconds"].get<double>(),
        lv["sigma_trial"].get<double>() * 100, lv["trial_overhead_seconds"].get<double>(),
        lv["best_repetitions_per_trial"].get<double>(), a.plan().repetitions));
  }
  if (!sequential) {
    out.verdict = "fixed";
    say(fmt::format("{} pairs done in {:.1f} min; compare with: schedlab diff {} {}", d.size(), elapsed / 60,
                    (out.dir / "a").string(), (out.dir / "b").string()));
  } else if (out.interrupted) {
    out.verdict = "interrupted";
  } else {
    std::optional<stats::SequentialLook> last = decided;
    // A look at the end is one more look: the sequence is valid at any n, whether or not a block ended.
    if (!last && plan && d.size() >= 2)
      last = stats::look(d, plan->tuning, o.alpha, margin_lower, margin_upper);
    if (decided) {
      const auto word = verdict_word(decided->state, metric.direction);
      out.verdict = decided->state == stats::SequentialState::kEquivalent
                        ? fmt::format("equivalent (±{:g}%)", margin_pct)
                    : decided->within_margin ? fmt::format("{} (not beyond ±{:g}%)", word, margin_pct)
                                             : word;
    } else if (last && last->state != stats::SequentialState::kContinue) {
      decided = last;
      const auto word = verdict_word(last->state, metric.direction);
      out.verdict = last->state == stats::SequentialState::kEquivalent
                        ? fmt::format("equivalent (±{:g}%)", margin_pct)
                    : last->within_margin ? fmt::format("{} (not beyond ±{:g}%)", word, margin_pct)
                                          : word;
    } else if (last && plan) {
      const double mde = stats::sequence_detectable_shift(
          static_cast<double>(d.size()), std::max(last->sd, 1e-6), plan->tuning, o.alpha, o.power);
      out.verdict = fmt::format("inconclusive (MDE {:.1f}%)", pct(mde));
      stop["achieved_mde_pct"] = pct(mde);
      stop["rules_out"] =
          fmt::format("changes below {:+.2f}% and above {:+.2f}%", pct(last->lower), pct(last->upper));
    } else {
      out.verdict = "inconclusive (too few pairs for a look)";
    }
    if (last) {
      stop["estimate_pct"] = pct(last->mean);
      stop["interval_pct"] = {pct(last->lower), pct(last->upper)};
    }
    if (plan && d.size() >= 2) {
      const double sd = std::max(stats::look(d, 1, o.alpha, -1, 1).sd, 1e-6);
      stop["mde_at_planned_pairs_with_observed_sd_pct"] = pct(stats::sequence_detectable_shift(
          static_cast<double>(plan->pairs), sd, plan->tuning, o.alpha, o.power));
      if (!stop.contains("achieved_mde_pct"))
        stop["achieved_mde_pct"] = pct(stats::sequence_detectable_shift(static_cast<double>(d.size()), sd,
                                                                        plan->tuning, o.alpha, o.power));
    }
    say(fmt::format(
        "verdict: {}{} after {} pairs ({:.1f} min); stopped: {}", out.verdict,
        last ? fmt::format(": {:+.2f}% {}", pct(last->mean), interval_text(last->lower, last->upper))
             : std::string(),
        d.size(), elapsed / 60, stop_reason));
    if (stop.contains("rules_out")) say("the sequence rules out " + stop["rules_out"].get<std::string>());
    say(fmt::format("the trials: schedlab diff {} {}", (out.dir / "a").string(), (out.dir / "b").string()));
  }
  stop["verdict"] = out.verdict;
  record["stop"] = stop;
  record["finished_at"] = utc_timestamp();
  save();
  progress.done();
  for (const auto& l : lines) out.summary += l + "\n";
  return out;
}

}  // namespace schedlab
