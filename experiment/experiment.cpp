#include "experiment/experiment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <regex>

#include "collector/runner/interrupt.hpp"
#include "collector/sysinfo/sysinfo.hpp"
#include "core/atomic_file.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/stats.hpp"
#include "experiment/covariate.hpp"
#include "experiment/cpu_probe.hpp"
#include "experiment/levels.hpp"
#include "experiment/sequential_experiment.hpp"
#include "stats/parametric.hpp"

namespace schedlab {
namespace {

constexpr const char* kSchema = "schedlab.experiment/1";
// Unstopped pairs (pilot, or a fixed design's) an earlier experiment must have for its spread to count:
// the smallest pilot allowed.
constexpr std::size_t kHistoryPairs = 4;

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

// What ran on each side and what is read, whatever the repetitions per trial.
std::string comparison_stem(const PreparedRun& a, const PreparedRun& b, const std::string& metric) {
  const auto& ia = a.instances().front();
  const auto& ib = b.instances().front();
  std::string stem = ia.workload->name() + "/" + canonical_hash(ia.params) + "/" + canonical_hash(ib.params);
  // Runtime configurations are part of what is compared: their spread is not a parameter change's.
  if (!a.plan().configuration_key.empty() || !b.plan().configuration_key.empty())
    stem += "/cfg:" + a.plan().configuration_key + ":" + b.plan().configuration_key;
  return stem + "/" + metric;
}

// The key under which this comparison's spread is remembered: the stem and the repetitions per trial.
std::string comparison_key(const PreparedRun& a, const PreparedRun& b, const std::string& metric) {
  return comparison_stem(a, b, metric) + "/r" + std::to_string(a.plan().repetitions);
}

// The experiment records under OUT taken on this hardware whose comparison key `wanted` accepts, as
// (path, record) pairs.
std::vector<std::pair<std::string, nlohmann::json>> records_under(
    const std::filesystem::path& out, const std::string& fingerprint,
    const std::function<bool(const std::string&)>& wanted) {
  std::vector<std::pair<std::string, nlohmann::json>> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const auto record = it->path() / "experiment.json";
    if (!std::filesystem::is_regular_file(record, ec)) continue;
    auto j = read_experiment_record(record);
    if (j.is_object() && j.value("schema", "") == kSchema && j.value("host_fingerprint", "") == fingerprint &&
        wanted(j.value("comparison_key", "")))
      found.emplace_back(record.string(), std::move(j));
  }
  return found;
}

// Earlier experiments under OUT on this hardware with the same comparison: their spread pooled.
std::optional<KnownSpread> find_history(const std::filesystem::path& out, const std::string& key,
                                        const std::string& fingerprint) {
  const auto found = records_under(out, fingerprint, [&](const std::string& k) { return k == key; });
  return pooled_spread(found, kHistoryPairs, kHistoryRecords, out.string());
}

}  // namespace

RepetitionsChoice choose_repetitions(const PreparedRun& a, const PreparedRun& b, const ExperimentOptions& o,
                                     int fallback) {
  const MetricDesc metric = chosen_metric(only_instance(a, "a"), o.metric);
  const std::string stem = comparison_stem(a, b, metric.name) + "/r";
  const std::string fingerprint = collect_sysinfo(a.paths()).host.value("fingerprint", std::string());
  std::string latest_started, latest_path;
  nlohmann::json latest_levels;
  for (const auto& [path, j] :
       records_under(o.out_dir, fingerprint, [&](const std::string& k) { return k.rfind(stem, 0) == 0; })) {
    const auto levels = j.value("levels", nlohmann::json());
    if (!levels.is_object() || !levels.contains("best_repetitions_per_trial")) continue;
    const auto started = j.value("started_at", "");
    if (started >= latest_started) {
      latest_started = started;
      latest_path = path;
      latest_levels = levels;
    }
  }
  if (latest_path.empty())
    return {
        fallback, nullptr,
        fmt::format("--repetitions auto: {} repetitions per trial, this host having no earlier experiment "
                    "of this comparison under {} whose levels could choose",
                    fallback, o.out_dir.string())};
  // Beyond this many a trial's start-up is not worth saving: one slow trial would hold a pair for long.
  constexpr double kMostRepetitions = 50;
  const int chosen = static_cast<int>(
      std::clamp(latest_levels["best_repetitions_per_trial"].get<double>(), 1.0, kMostRepetitions));
  return {
      chosen,
      {{"auto", true}, {"from", latest_path}, {"levels", latest_levels}},
      fmt::format("--repetitions auto: {} repetitions per trial, the most precision per second by the levels "
                  "of {} (sigma {:.2f}% between repetitions at {:.2f} s each, {:.2f}% between trials at "
                  "{:.2f} s of start-up each)",
                  chosen, latest_path, latest_levels["sigma_repetition"].get<double>() * 100,
                  latest_levels["repetition_seconds"].get<double>(),
                  latest_levels["sigma_trial"].get<double>() * 100,
                  latest_levels["trial_overhead_seconds"].get<double>())};
}

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
                                   *o.budget_s, h->pair_seconds, h->source));
  }
}

ExperimentOutcome run_experiment(PreparedRun& a, PreparedRun& b, const ExperimentOptions& o,
                                 Progress& progress) {
  const auto& ia = a.instances().front();
  const MetricDesc metric = chosen_metric(ia, o.metric);
  const bool sequential = o.target_pct.has_value();
  SequentialDesign design;
  design.target_pct = o.target_pct.value_or(0);
  design.margin_pct = o.margin_pct.value_or(o.target_pct.value_or(0));
  design.alpha = o.alpha;
  design.power = o.power;
  design.max_pairs = static_cast<std::size_t>(sequential ? o.max_pairs : o.fixed_pairs);
  design.budget_s = o.budget_s;
  design.pilot_pairs = static_cast<std::size_t>(o.pilot_pairs);
  design.look_every = static_cast<std::size_t>(o.look_every);

  const auto sys = collect_sysinfo(a.paths());
  const std::string fingerprint = sys.host.value("fingerprint", std::string());
  const std::string key = comparison_key(a, b, metric.name);
  const auto history = sequential ? find_history(o.out_dir, key, fingerprint) : std::nullopt;
  SequentialExperiment experiment(design, metric.direction, history);

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
      {"configurations", o.configurations},
      {"repetitions_per_trial", a.plan().repetitions},
      {"repetitions_choice", o.repetitions_choice},
      {"seed", a.plan().seed},
      {"design", experiment.design_json()},
      {"plan", experiment.plan_json()},
      {"looks", nlohmann::json::array()},
      {"pairs", nlohmann::json::array()},
      {"stop", nullptr}};
  auto save = [&] {
    record["plan"] = experiment.plan_json();
    record["looks"] = experiment.looks_json();
    write_file_atomic(out.record, record.dump(2) + "\n", /*replace=*/true);
  };
  save();

  std::vector<std::string> lines;
  auto say = [&](const std::string& text) {
    lines.push_back(text);
    progress.message(text);
  };
  const bool configured = o.configurations.is_object();
  say(fmt::format("experiment {}: {} {} ({}), a: {}, b: {}; {} repetitions per trial", id, ia.id, metric.name,
                  to_string(metric.direction),
                  configured ? "configuration " + o.configurations["a"].value("name", std::string("?"))
                             : std::string("as given"),
                  configured ? "configuration " + o.configurations["b"].value("name", std::string("?"))
                  : o.versus.empty() ? std::string("the same (A/A)")
                                     : fmt::format("{}", fmt::join(o.versus, " ")),
                  a.plan().repetitions));
  if (!o.repetitions_line.empty()) say(o.repetitions_line);
  if (!experiment.plan_line().empty()) say(experiment.plan_line());

  InterruptGuard interrupt(BrokenPipe::kInterrupts);
  TrialRunner run_a(a, progress, interrupt.flag(), id + "-a");
  TrialRunner run_b(b, progress, interrupt.flag(), id + "-b");
  std::mt19937_64 coin(a.plan().seed ^ 0x0a0bULL);
  const double start = monotonic_seconds();
  LevelEstimate levels;
  std::string stop_reason;
  std::vector<double> pair_d, pair_probe;  // the pairs with both values, for the covariate's record

  for (std::size_t pair = 0;; ++pair) {
    if (auto why = experiment.stop_reason(monotonic_seconds() - start)) {
      stop_reason = *why;
      break;
    }
    const bool b_first = (coin() & 1) != 0;
    const int planned = static_cast<int>(experiment.planned_pairs());
    // The first trial waits for a quiet machine; after it the experiment's own trials are the load.
    SettlePolicy settle = a.plan().settle;
    if (pair > 0) settle.max_wait_s = 0;
    nlohmann::json tag = {{"id", id}, {"pair", pair}, {"order", b_first ? "ba" : "ab"}};
    std::optional<double> value[2];
    CpuProbe probe[2];
    double switch_ms[2] = {0, 0};  // a runtime configuration's apply + restore around the trial
    double pair_start = monotonic_seconds();
    bool interrupted = false;
    for (int position = 0; position < 2 && !interrupted; ++position) {
      const int side = (position == 0) == b_first ? 1 : 0;
      auto& runner = side == 0 ? run_a : run_b;
      const char* name = side == 0 ? "a" : "b";
      tag["side"] = name;
      tag["position"] = position;
      probe[side] = run_cpu_probe();
      const double trial_start = monotonic_seconds();
      auto trial = runner.run_trial(
          static_cast<int>(pair), std::max(planned, static_cast<int>(pair) + 1),
          out.dir / name / fmt::format("{}-{}-trial{}.json", id, name, pair + 1),
          position == 0 ? settle : SettlePolicy{0, settle.max_load_per_cpu, settle.max_running},
          [&](Bundle& bundle) {
            bundle.experiment = tag;
            for (auto& in : bundle.instances) in.compared_as = compared_as;
          });
      out.failed_repetitions += trial.failed_repetitions;
      interrupted = trial.interrupted;
      value[side] = trial_value(trial.bundle, metric.name);
      if (const auto& sw = trial.bundle.environment.value("runtime_switch", nlohmann::json()); sw.is_object())
        switch_ms[side] = sw.value("apply_ms", 0.0) + sw.value("restore_ms", 0.0);
      levels.add(name, trial.bundle, metric.name, monotonic_seconds() - trial_start);
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
    row["probe_ns_per_step"] = {probe[0].ns_per_step, probe[1].ns_per_step};
    if (configured) row["switch_ms"] = {switch_ms[0], switch_ms[1]};
    if (value[0] && value[1]) {
      pair_d.push_back(std::log(*value[1] / *value[0]));
      row["ln_ratio"] = pair_d.back();
      pair_probe.push_back(std::log(probe[1].ns_per_step / probe[0].ns_per_step));
    } else
      row["lost"] = "no ok repetition on a side";
    record["pairs"].push_back(row);
    for (const auto& line :
         experiment.add_pair(value[0], value[1], b_first, seconds, monotonic_seconds() - start))
      say(line);
    save();
  }

  const double elapsed = monotonic_seconds() - start;
  auto verdict = experiment.finish(stop_reason, elapsed);
  record["order_effect"] = experiment.order_effect_json();
  record["observed"] = experiment.observed_json();
  record["levels"] = levels.estimate(a.plan().repetitions);
  record["covariate"] = covariate_json(pair_d, pair_probe, design.margin_pct, design.alpha);
  if (record["covariate"].is_object()) {
    const auto& c = record["covariate"];
    say(fmt::format(
        "covariate (CPU-speed probe, recorded, not used): correlation {:+.2f} with ln(b/a), "
        "{:.0f}% of the variance out of sample",
        c["correlation"].get<double>(), c["variance_reduction_out_of_sample"].get<double>() * 100));
  }
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
  out.verdict = out.interrupted ? "interrupted" : verdict.text;
  verdict.stop["verdict"] = out.verdict;
  if (out.interrupted) {
    for (const auto& line : verdict.lines)
      if (line.rfind("warning:", 0) == 0) say(line);
  } else if (!sequential) {
    for (const auto& line : verdict.lines) say(line);
    say(fmt::format("{} pairs done in {:.1f} min; compare with: schedlab diff {} {}", experiment.pairs_used(),
                    elapsed / 60, (out.dir / "a").string(), (out.dir / "b").string()));
  } else {
    for (const auto& line : verdict.lines) say(line);
    say(fmt::format("the trials: schedlab diff {} {}", (out.dir / "a").string(), (out.dir / "b").string()));
  }
  record["stop"] = verdict.stop;
  record["finished_at"] = utc_timestamp();
  save();
  progress.done();
  for (const auto& l : lines) out.summary += l + "\n";
  return out;
}

}  // namespace schedlab
