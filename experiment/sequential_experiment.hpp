#pragma once
// The statistics of one sequential experiment, whoever runs its trials: `schedlab run --versus` (two
// parameter values on the running kernel) and the daemon's target campaigns (two kernels, boot by
// boot) feed it pairs in the order they complete; it plans from a known spread or its pilot, looks after
// each block, and says when to stop and what the verdict is. Its JSON is the experiment record's
// design, plan, looks and stop (schema schedlab.experiment/1).
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metric.hpp"
#include "core/result.hpp"
#include "stats/sequential.hpp"

namespace schedlab {

struct SequentialDesign {
  double target_pct = 0;  // > 0: the smallest change that matters; 0: a fixed design of max_pairs pairs
  double margin_pct = 0;  // equivalence margin, 0 < margin <= target
  double alpha = 0.05;
  double power = 0.8;
  std::size_t max_pairs = 0;       // 0: no limit but the budget
  std::optional<double> budget_s;  // machine time
  std::size_t pilot_pairs = 6;     // pairs before the plan (when no spread is known) and the first look
  std::size_t look_every = 2;      // pairs between looks
};

// The spread of ln(b/a) over pairs known before the experiment (from this host's earlier runs).
struct KnownSpread {
  double sd = 0;
  double pair_seconds = 0;  // 0: unknown
  std::size_t pairs = 0;
  std::string source;
  nlohmann::json levels;  // the latest record's variance by level (levels.hpp), null when it had none
};

// A trial's value: the median of its ok repetitions of `metric` (the diff's trial statistic); none when
// none is ok.
std::optional<double> trial_value(const Bundle& b, const std::string& metric);

// An experiment record file, parsed; null when it cannot be read or parsed (one being written, say).
nlohmann::json read_experiment_record(const std::filesystem::path& file);

// How many earlier records plan a new experiment: the latest few, so that one short experiment does not
// decide the next one's plan, and the machine's present state still does. Their pilots being short, a
// few records' worth pool to a spread known within about ±15%.
inline constexpr std::size_t kHistoryRecords = 8;

// The ln(b/a) of a record's pairs whose number did not depend on the data: all of a fixed design's, the
// pilot of a sequential one. A sequential experiment's later pairs are no sample of the spread: it
// stops early when its spread looks small and runs long when it looks large, so the spread of all
// its pairs is biased (low for the stops that answered, high for those the budget ended).
std::vector<double> unstopped_ln_ratios(const nlohmann::json& record);

// The spread of earlier experiments of the same comparison ((path, record) pairs, the caller having
// matched them): the latest `keep` by started_at with at least `min_pairs` unstopped pairs, each
// record's squared deviations around its own mean pooled. `where` names them in the source. nullopt when
// none qualifies.
std::optional<KnownSpread> pooled_spread(const std::vector<std::pair<std::string, nlohmann::json>>& records,
                                         std::size_t min_pairs, std::size_t keep, const std::string& where);

class SequentialExperiment {
 public:
  SequentialExperiment(SequentialDesign design, Direction direction, std::optional<KnownSpread> known);

  // A completed pair: either value may be missing (no ok repetition on that side), which loses it.
  // Returns the lines worth printing (the plan when it is made, a look).
  // `seconds`: the pair's machine time; `elapsed_s`: the experiment's so far, for the look's record.
  std::vector<std::string> add_pair(std::optional<double> a, std::optional<double> b, bool b_first,
                                    double seconds, double elapsed_s);

  // Why no further pair should start after `elapsed_s` of machine time; nullopt: go on.
  std::optional<std::string> stop_reason(double elapsed_s) const;
  bool decided() const { return decided_.has_value(); }
  bool sequential() const { return design_.target_pct > 0; }
  // The plan's line for the log ("plan: sd of ln(b/a) ..."); "" before there is a plan.
  const std::string& plan_line() const { return plan_line_; }
  // Pairs to show as planned: the plan's once there is one, the pilot's before.
  std::size_t planned_pairs() const;
  std::size_t pairs_used() const { return d_.size(); }
  double median_pair_seconds() const;

  struct Verdict {
    std::string text;  // "worse", "equivalent (±3%)", "inconclusive (MDE 4.1%)", ...
    nlohmann::json stop;
    std::vector<std::string> lines;  // the verdict and what it rules out; an order-effect warning
  };
  // The verdict after the last pair, stopped for `reason`.
  Verdict finish(const std::string& reason, double elapsed_s) const;

  nlohmann::json design_json() const;
  const nlohmann::json& plan_json() const { return plan_json_; }
  const nlohmann::json& looks_json() const { return looks_; }
  nlohmann::json observed_json() const;
  nlohmann::json order_effect_json() const;  // null below 2 pairs of each order

 private:
  std::string verdict_text(const stats::SequentialLook& l) const;
  void make_plan(double sd, const std::string& source, double pair_seconds);
  void add_order_warning(Verdict& v) const;

  SequentialDesign design_;
  Direction direction_;
  double target_, margin_lower_, margin_upper_;  // log units
  std::optional<stats::SequentialPlan> plan_;
  nlohmann::json plan_json_;  // null before there is a plan
  std::string plan_line_;
  nlohmann::json looks_ = nlohmann::json::array();
  std::vector<double> d_, ab_d_, ba_d_, pair_seconds_;
  std::size_t lost_ = 0;
  std::optional<stats::SequentialLook> decided_;
  std::optional<double> known_pair_seconds_;
};

}  // namespace schedlab
