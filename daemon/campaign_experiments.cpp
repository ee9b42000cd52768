#include "daemon/campaign_experiments.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/atomic_file.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "daemon/schedule.hpp"
#include "workloads/registry.hpp"

namespace schedlab {
namespace {

bool done(const StepRecord* r) {
  return r && (r->status == StepStatus::kFinished || r->status == StepStatus::kFailed);
}

// The machine time of a step's latest attempt, boot included; 0 when its timestamps do not say.
double step_seconds(const StepRecord& r) {
  try {
    return std::chrono::duration<double>(parse_utc_timestamp(r.finished_at) -
                                         parse_utc_timestamp(r.started_at))
        .count();
  } catch (const Error&) {
    return 0;
  }
}

}  // namespace

std::string experiment_file_name(const std::string& instance_id) {
  return "experiment-" + file_safe_name(instance_id) + ".json";
}

MetricDesc campaign_metric(const std::string& workload) {
  for (const auto& m : make_workload(workload)->metrics())
    if (m.headline) return m;
  throw InputError("workload " + workload + " has no headline metric to compare on");
}

SequentialDesign campaign_design(const Campaign& c) {
  const auto& t = c.target.value();
  SequentialDesign d;
  d.target_pct = t.mde_pct;
  d.margin_pct = t.margin_pct.value_or(t.mde_pct);
  d.alpha = t.alpha;
  d.max_pairs = static_cast<std::size_t>(c.trials);
  d.budget_s = t.budget_s;
  d.pilot_pairs = static_cast<std::size_t>(t.pilot);
  d.look_every = static_cast<std::size_t>(t.look_every);
  return d;
}

std::string campaign_comparison_key(const Campaign& c, const CampaignStep& step, const std::string& metric) {
  return c.configurations.at(0) + "/" + c.configurations.at(1) + "/" + step.instance_id + "/" +
         step_estimate_key(step) + "/" + metric + "/r" + std::to_string(step.repetitions);
}

std::optional<KnownSpread> campaign_history(const std::filesystem::path& campaign_dir, const std::string& key,
                                            const std::string& this_run) {
  std::vector<std::pair<std::string, nlohmann::json>> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(campaign_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec) || it->path().filename() == this_run) continue;
    for (std::filesystem::directory_iterator f(it->path(), ec), fend; !ec && f != fend; f.increment(ec)) {
      const auto name = f->path().filename().string();
      if (name.rfind("experiment-", 0) != 0 || f->path().extension() != ".json") continue;
      auto j = read_experiment_record(f->path());
      if (j.is_object() && j.value("comparison_key", "") == key)
        found.emplace_back(f->path().string(), std::move(j));
    }
    ec.clear();
  }
  // As many pairs as a pilot would take, like `run --versus`'s history; fewer would plan worse than a pilot.
  return pooled_spread(found, 4, kHistoryRecords, campaign_dir.string());
}

CampaignExperiments::CampaignExperiments(const Campaign& campaign, const std::vector<CampaignStep>& plan,
                                         std::filesystem::path run_dir, std::string run_started_at)
    : campaign_(campaign), run_dir_(std::move(run_dir)), run_started_at_(std::move(run_started_at)) {
  if (!campaign.target) throw Error("CampaignExperiments: the campaign has no target_mde");
  design_ = campaign_design(campaign);
  std::map<std::string, std::size_t> index;
  for (const auto& step : plan) {
    auto [it, added] = index.emplace(step.instance_id, instances_.size());
    if (added) {
      Instance in;
      in.id = step.instance_id;
      in.workload = step.workload;
      in.metric = campaign_metric(step.workload);
      in.repetitions = step.repetitions;
      in.comparison_key = campaign_comparison_key(campaign, step, in.metric.name);
      in.known = campaign_history(run_dir_.parent_path(), in.comparison_key, run_dir_.filename().string());
      instances_.push_back(std::move(in));
    }
    auto& in = instances_[it->second];
    if (in.pair_keys.size() < static_cast<std::size_t>(step.trial)) in.pair_keys.resize(step.trial);
    auto& keys = in.pair_keys[static_cast<std::size_t>(step.trial - 1)];
    (step.configuration == campaign.configurations[0] ? keys.first : keys.second) = step.key;
  }
}

const CampaignExperiments::TrialData& CampaignExperiments::trial_data(const StepRecord& r,
                                                                      const std::string& metric) {
  const std::string key = r.bundle_path + "|" + metric;
  if (auto cached = trials_.find(key); cached != trials_.end()) return cached->second;
  TrialData data;
  if (r.status == StepStatus::kFinished && !r.bundle_path.empty()) try {
      const auto bundle = load_bundle(r.bundle_path);
      data.value = trial_value(bundle, metric);
      data.levels = trial_levels(bundle, metric);
    } catch (const Error&) {  // a bundle gone from disk: the pair is lost, as a failed step's
    }
  return trials_.emplace(key, std::move(data)).first->second;
}

std::vector<std::string> CampaignExperiments::update(const std::map<std::string, StepRecord>& records,
                                                     double elapsed_s) {
  std::vector<std::string> fresh;
  auto record_of = [&](const std::string& key) -> const StepRecord* {
    auto it = records.find(key);
    return it == records.end() ? nullptr : &it->second;
  };
  for (auto& in : instances_) {
    SequentialExperiment experiment(design_, in.metric.direction, in.known);
    LevelEstimate levels;  // a trial is a boot of its kernel here (a process start on "running")
    std::vector<std::string> lines;
    if (!experiment.plan_line().empty())
      lines.push_back(fmt::format("{}: {}", in.id, experiment.plan_line()));
    nlohmann::json pairs = nlohmann::json::array();
    double seconds_so_far = 0;
    bool pair_begun = false;  // the next pair has a step begun: it runs to its end before any stop
    int complete = 0;
    for (const auto& [a_key, b_key] : in.pair_keys) {
      const StepRecord *ra = record_of(a_key), *rb = record_of(b_key);
      if (!done(ra) || !done(rb)) {
        pair_begun = ra || rb;
        break;
      }
      const auto& da = trial_data(*ra, in.metric.name);
      const auto& db = trial_data(*rb, in.metric.name);
      const auto a = da.value, b = db.value;
      levels.add("a", da.levels.logs, da.levels.rep_seconds, step_seconds(*ra));
      levels.add("b", db.levels.logs, db.levels.rep_seconds, step_seconds(*rb));
      const double seconds = step_seconds(*ra) + step_seconds(*rb);
      seconds_so_far += seconds;
      const int trial = complete + 1;
      const bool b_first = pair_b_first(campaign_, trial);
      nlohmann::json row = {{"pair", complete},
                            {"trial", trial},
                            {"order", b_first ? "ba" : "ab"},
                            {"a", a ? nlohmann::json(*a) : nlohmann::json(nullptr)},
                            {"b", b ? nlohmann::json(*b) : nlohmann::json(nullptr)},
                            {"seconds", seconds},
                            {"a_bundle", ra->bundle_path},
                            {"b_bundle", rb->bundle_path}};
      if (a && b)
        row["ln_ratio"] = std::log(*b / *a);
      else
        row["lost"] = ra->status == StepStatus::kFailed || rb->status == StepStatus::kFailed
                          ? "a step failed"
                          : "no ok repetition on a side";
      pairs.push_back(row);
      for (auto& line : experiment.add_pair(a, b, b_first, seconds, seconds_so_far))
        lines.push_back(fmt::format("{}: {}", in.id, line));
      ++complete;
    }
    // A decision stops at once; a limit (pairs, budget) only between pairs, so no trial stays unpaired.
    std::optional<std::string> why;
    if (experiment.decided() || !pair_begun) why = experiment.stop_reason(elapsed_s);
    nlohmann::json record = {
        {"schema", "schedlab.experiment/1"},
        {"campaign", campaign_.name},
        {"campaign_file", campaign_.file.string()},
        {"content_hash", campaign_.content_hash},
        {"run", run_dir_.filename().string()},
        {"started_at", run_started_at_},
        {"comparison_key", in.comparison_key},
        {"repetitions_per_trial", in.repetitions},
        {"instance", in.id},
        {"workload", in.workload},
        {"metric",
         {{"name", in.metric.name}, {"unit", in.metric.unit}, {"direction", to_string(in.metric.direction)}}},
        {"sides",
         {{"a", {{"configuration", campaign_.configurations[0]}}},
          {"b", {{"configuration", campaign_.configurations[1]}}}}},
        {"seed", campaign_.seed},
        {"design", experiment.design_json()},
        {"plan", experiment.plan_json()},
        {"looks", experiment.looks_json()},
        {"pairs", pairs},
        {"observed", experiment.observed_json()},
        {"order_effect", experiment.order_effect_json()},
        {"stop", nullptr}};
    in.stopped_after.reset();
    if (why) {
      in.stopped_after = complete;
      auto verdict = experiment.finish(*why, seconds_so_far);
      record["stop"] = verdict.stop;
      for (auto& line : verdict.lines) lines.push_back(fmt::format("{}: {}", in.id, line));
    }
    records_[in.id] = std::move(record);
    for (std::size_t i = in.lines_logged; i < lines.size(); ++i) fresh.push_back(lines[i]);
    in.lines_logged = std::max(in.lines_logged, lines.size());
  }
  return fresh;
}

std::optional<std::string> CampaignExperiments::skip_reason(const CampaignStep& step) const {
  for (const auto& in : instances_) {
    if (in.id != step.instance_id || !in.stopped_after || step.trial <= *in.stopped_after) continue;
    const auto& stop = records_.at(in.id)["stop"];
    return fmt::format("its comparison stopped after {} pairs: {} ({})", *in.stopped_after,
                       stop.value("verdict", std::string()), stop.value("reason", std::string()));
  }
  return std::nullopt;
}

void CampaignExperiments::write() const {
  std::filesystem::create_directories(run_dir_);
  for (const auto& [id, record] : records_)
    write_file_atomic(run_dir_ / experiment_file_name(id), record.dump(2) + "\n", /*replace=*/true);
}

}  // namespace schedlab
