#pragma once
// The variance at each level an experiment has (Kalibera and Jones, "Rigorous benchmarking in reasonable
// time", 2013): between repetitions within a trial, and between trials beyond what their repetitions
// explain (a trial being a process start on the running kernel, or a boot in a kernel campaign), on log
// values, with what each level costs here; from them the repetitions per trial that buy the most
// precision per second of machine time.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace schedlab {

// A trial's ok values of `metric`, as logs, and every timed repetition's duration.
struct TrialLevels {
  std::vector<double> logs, rep_seconds;
};
TrialLevels trial_levels(const Bundle& bundle, const std::string& metric);

class LevelEstimate {
 public:
  // One trial of side `side` ("a", "b"): its bundle's repetitions of `metric`, and the trial's machine
  // time (start-up, warm-up and boot included).
  void add(const std::string& side, const Bundle& bundle, const std::string& metric, double trial_seconds);
  // The same from what a bundle gave: the logs of its ok values and every repetition's duration.
  void add(const std::string& side, std::vector<double> logs, const std::vector<double>& rep_seconds,
           double trial_seconds);

  // Null below 3 trials with 2+ ok repetitions. Else sigma_repetition, sigma_trial (pooled within each
  // side, so that a difference between the sides is no trial-to-trial noise), repetition_seconds,
  // trial_overhead_seconds, trials and, where both costs and sigmas allow,
  // best_repetitions_per_trial = sqrt(trial overhead / repetition cost x sigma_rep^2 / sigma_trial^2).
  nlohmann::json estimate(int repetitions) const;

 private:
  std::map<std::string, std::vector<std::vector<double>>> trials_;  // per side, each trial's log values
  std::vector<double> rep_seconds_, trial_seconds_;
};

}  // namespace schedlab
