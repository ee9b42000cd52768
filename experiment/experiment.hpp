#pragma once
// An experiment: two sides (a, and b = a with some parameters changed) run by `schedlab run --versus`
// in pairs whose order is a seeded coin flip, on the running kernel. With a target effect it plans the
// number of pairs, looks after each block and stops as soon as a confidence sequence answers (worse,
// better, equivalent within the margin) or at the budget (inconclusive, with what it could rule out);
// without one it runs a fixed number of pairs for `schedlab diff`. README.md in this folder has the
// design and the statistics.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "collector/runner/progress.hpp"
#include "collector/runner/runner.hpp"

namespace schedlab {

struct ExperimentOptions {
  std::optional<double> target_pct;  // --target-mde: the smallest change that matters; none: fixed pairs
  std::optional<double> margin_pct;  // --margin: equivalence margin (default: the target)
  double alpha = 0.05;
  double power = 0.8;
  int max_pairs = 0;                  // --max-trials (pairs = trials per side); 0: not given
  std::optional<double> budget_s;     // --budget
  int fixed_pairs = 1;                // --trials, without a target
  int pilot_pairs = 6;                // --pilot: pairs before the first look and the plan
  int look_every = 2;                 // --look-every: pairs between looks
  std::string metric;                 // --metric: empty = the instance's first headline metric
  std::vector<std::string> versus;    // the --versus texts, for the record
  std::filesystem::path out_dir;      // the experiment writes OUT/<id>/{a,b}/ and OUT/<id>/experiment.json
  nlohmann::json repetitions_choice;  // --repetitions auto: where the choice came from; null otherwise
  std::string repetitions_line;       // and what to print about it
  // Two runtime configurations as the sides ({"a": {...}, "b": {...}} as given); null: --versus params.
  nlohmann::json configurations;
};

// --repetitions auto: the repetitions per trial that buy the most precision per second of machine time
// (Kalibera and Jones: sqrt(trial start-up / repetition cost · repetition variance / trial variance)),
// by the levels of the latest earlier experiment of this comparison under OUT on this host, whatever its
// repetitions; `fallback` when there is none. `a` and `b` are the sides prepared with any repetitions.
struct RepetitionsChoice {
  int repetitions = 0;
  nlohmann::json record;  // for experiment.json's repetitions_choice; null when no history chose
  std::string line;
};
RepetitionsChoice choose_repetitions(const PreparedRun& a, const PreparedRun& b,
                                     const ExperimentOptions& options, int fallback);

// Checks everything that needs no run: a target <= 0, a margin above the target, a budget below one
// pair (by this host's earlier experiments under OUT), a pilot or maximum too small, one instance and a
// known metric. Throws InputError naming the option.
void check_experiment(const PreparedRun& a, const PreparedRun& b, const ExperimentOptions& options);

struct ExperimentOutcome {
  std::filesystem::path dir;     // OUT/<id>
  std::filesystem::path record;  // OUT/<id>/experiment.json
  std::string verdict;           // "worse", "equivalent (±3%)", "inconclusive (MDE 4.1%)", ...
  std::string summary;           // the lines printed at the end
  int failed_repetitions = 0;
  bool interrupted = false;
};

// Runs it; check_experiment first (the CLI does, before anything is written).
ExperimentOutcome run_experiment(PreparedRun& a, PreparedRun& b, const ExperimentOptions& options,
                                 Progress& progress);

// "90", "90s", "20m", "1h30m", "2h" -> seconds; InputError naming `option` otherwise.
double parse_duration(const std::string& text, const std::string& option);

}  // namespace schedlab
