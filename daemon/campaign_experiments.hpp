#pragma once
// A target campaign's comparisons (`[campaign] target_mde`): for each workload instance, the pairs of
// its two configurations' trials read from the run's finished steps, fed to a SequentialExperiment in
// trial order, and the verdict that stops the instance's remaining steps. Everything is derived again
// from the store and the bundles at each update, so a daemon that restarts (after a kexec, say) reaches
// the same looks and decisions as one that never stopped.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/campaign/campaign.hpp"
#include "daemon/store/store.hpp"
#include "experiment/levels.hpp"
#include "experiment/sequential_experiment.hpp"

namespace schedlab {

class CampaignExperiments {
 public:
  // `run_dir`: this run's directory (OUTPUT/CAMPAIGN/run-ID-STAMP), where the records go; earlier runs'
  // records beside it that compared the same thing plan the comparison instead of its pilot.
  CampaignExperiments(const Campaign& campaign, const std::vector<CampaignStep>& plan,
                      std::filesystem::path run_dir, std::string run_started_at);

  // Re-derives every instance's comparison from the run's step records, `elapsed_s` of machine time
  // after the run began. Returns the lines to log that no earlier update returned (plans, looks, verdicts).
  std::vector<std::string> update(const std::map<std::string, StepRecord>& records, double elapsed_s);

  // Why `step` is not to run (its instance's comparison has stopped); nullopt: it runs.
  std::optional<std::string> skip_reason(const CampaignStep& step) const;

  // The record of each instance's comparison (schema schedlab.experiment/1), keyed by instance id.
  const std::map<std::string, nlohmann::json>& records() const { return records_; }
  // experiment-ID.json for each instance in the run's directory, replacing earlier copies atomically.
  void write() const;

 private:
  struct Instance {
    std::string id, workload, comparison_key;
    int repetitions = 0;
    MetricDesc metric;
    std::optional<KnownSpread> known;                            // from earlier runs
    std::vector<std::pair<std::string, std::string>> pair_keys;  // per trial: (a's step key, b's)
    std::optional<int> stopped_after;                            // pairs, once the comparison stopped
    std::size_t lines_logged = 0;
  };

  struct TrialData {
    std::optional<double> value;  // the trial's median; none: no ok repetition, or no bundle
    TrialLevels levels;
  };
  const TrialData& trial_data(const StepRecord& r, const std::string& metric);

  const Campaign& campaign_;
  std::filesystem::path run_dir_;
  std::string run_started_at_;
  SequentialDesign design_;
  std::vector<Instance> instances_;
  std::map<std::string, TrialData> trials_;  // by "BUNDLE|METRIC": each bundle read once
  std::map<std::string, nlohmann::json> records_;
};

// The experiment file of one instance: "experiment-yield.threads=2.json".
std::string experiment_file_name(const std::string& instance_id);

// The sequential design a target campaign's [campaign] keys describe.
SequentialDesign campaign_design(const Campaign& c);

// What an instance's comparison is remembered by across runs: the two configurations, the instance's
// resolved parameters, the metric and the repetitions per trial.
std::string campaign_comparison_key(const Campaign& c, const CampaignStep& step, const std::string& metric);

// The metric a target campaign compares a workload on: its first headline metric. InputError when it
// has none.
MetricDesc campaign_metric(const std::string& workload);

// The spread that plans `step`'s instance from earlier runs' records under `campaign_dir`, leaving out
// `this_run` (a directory name); nullopt: the pilot plans it.
std::optional<KnownSpread> campaign_history(const std::filesystem::path& campaign_dir, const std::string& key,
                                            const std::string& this_run);

}  // namespace schedlab
