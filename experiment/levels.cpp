#include "experiment/levels.hpp"

#include <algorithm>
#include <cmath>

#include "core/stats.hpp"

namespace schedlab {

TrialLevels trial_levels(const Bundle& bundle, const std::string& metric) {
  TrialLevels t;
  for (const auto& in : bundle.instances)
    for (const auto& rep : in.repetitions) {
      t.rep_seconds.push_back(rep.duration_s);
      if (auto it = rep.metrics.find(metric); rep.ok() && it != rep.metrics.end() && it->second.value > 0)
        t.logs.push_back(std::log(it->second.value));
    }
  return t;
}

void LevelEstimate::add(const std::string& side, const Bundle& bundle, const std::string& metric,
                        double trial_seconds) {
  auto t = trial_levels(bundle, metric);
  add(side, std::move(t.logs), t.rep_seconds, trial_seconds);
}

void LevelEstimate::add(const std::string& side, std::vector<double> logs,
                        const std::vector<double>& rep_seconds, double trial_seconds) {
  rep_seconds_.insert(rep_seconds_.end(), rep_seconds.begin(), rep_seconds.end());
  if (logs.size() >= 2) trials_[side].push_back(std::move(logs));
  trial_seconds_.push_back(trial_seconds);
}

nlohmann::json LevelEstimate::estimate(int repetitions) const {
  double within = 0, within_df = 0, between = 0, between_df = 0;
  std::size_t trials = 0;
  for (const auto& [side, side_trials] : trials_) {
    std::vector<double> means;
    for (const auto& t : side_trials) {
      double m = 0;
      for (double x : t) m += x / static_cast<double>(t.size());
      for (double x : t) within += (x - m) * (x - m);
      within_df += static_cast<double>(t.size() - 1);
      means.push_back(m);
    }
    trials += side_trials.size();
    if (means.size() < 2) continue;
    double grand = 0;
    for (double m : means) grand += m / static_cast<double>(means.size());
    for (double m : means) between += (m - grand) * (m - grand);
    between_df += static_cast<double>(means.size() - 1);
  }
  if (trials < 3 || within_df == 0 || between_df == 0) return nullptr;
  within /= within_df;
  between /= between_df;
  // E[variance of trial means] = sigma_trial^2 + sigma_repetition^2 / r
  const double trial_var = std::max(0.0, between - within / repetitions);
  const double c_rep = rep_seconds_.empty() ? 0 : median(rep_seconds_);
  const double c_trial =
      std::max(0.0, (trial_seconds_.empty() ? 0 : median(trial_seconds_)) - repetitions * c_rep);
  nlohmann::json j = {{"sigma_repetition", std::sqrt(within)},
                      {"sigma_trial", std::sqrt(trial_var)},
                      {"repetition_seconds", c_rep},
                      {"trial_overhead_seconds", c_trial},
                      {"trials", trials}};
  if (trial_var > 0 && c_rep > 0)
    j["best_repetitions_per_trial"] =
        std::max(1.0, std::round(std::sqrt(c_trial / c_rep * within / trial_var)));
  return j;
}

}  // namespace schedlab
