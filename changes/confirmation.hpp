#pragma once
// Confirmation of a suspected change point by a paired rerun: the two configurations either side of it,
// when both can still run here, alternate as a sequential experiment (`schedlab run --configuration A
// --configuration B --target-mde`); its verdict decides the status. A level shift of the machine, a
// kernel that is not the running one, a configuration that cannot be applied again: unconfirmable, and
// the reason says which.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "changes/series_changes.hpp"
#include "runtime/configuration.hpp"

namespace schedlab {

inline constexpr const char* kSuspected = "suspected";
inline constexpr const char* kConfirmed = "confirmed";
inline constexpr const char* kNotReproduced = "not reproduced";
inline constexpr const char* kUnconfirmable = "unconfirmable";

struct RerunOptions {
  double budget_s = 180;      // machine time of the experiment
  int max_pairs = 60;         // pairs at most
  int repetitions = 3;        // per trial
  double min_target_pct = 2;  // the experiment is planned for the change's size, never below this
  std::uint64_t seed = 1;
  // Kernel reruns: how the campaign boots recipes ("qemu" only: a lab box would reboot itself per
  // trial), where their kernels are cached ("" the default), where recipes are ("" the built-in ones),
  // and the campaign's per-repetition timeout and settle wait.
  std::string boot = "qemu";
  std::filesystem::path kernel_cache, recipes_dir;
  double timeout_s = 120, settle_timeout_s = 10;
};

struct RerunPlan {
  std::string unconfirmable;  // why no rerun can be made; empty when one can
  std::string workload, instance_id;
  std::vector<std::pair<std::string, std::string>> params;  // the instance's resolved parameters
  runtime::RuntimeConfiguration before, after;              // named "before" and "after"
  std::string before_recipe, after_recipe;                  // set: the kernels differ, booted by recipe
};

// What the runs either side of `change` ran on, against what runs here now (`running_release`, this
// boot's kernel release, on `running_host`): a rerun when they differ only in their runtime
// configuration on this kernel and machine, or when they ran two kernel recipes (booted under qemu).
RerunPlan plan_rerun(const SeriesChange& change, const std::string& running_release,
                     const std::string& running_host, const RerunOptions& options = {});

// A kernel rerun's campaign file (a once target campaign of the two recipes, its store and output under
// `dir`), run by a nested `schedlab daemon --isolation session`.
std::string kernel_rerun_campaign(const RerunPlan& plan, const SeriesChange& change,
                                  const RerunOptions& options, const std::filesystem::path& dir);

// `schedlab run` arguments (without the binary) of the rerun, its record under `out_dir`.
std::vector<std::string> rerun_arguments(const RerunPlan& plan, const SeriesChange& change,
                                         const RerunOptions& options, const std::filesystem::path& out_dir);

struct RerunOutcome {
  std::string status;  // confirmed | not reproduced
  std::string reason;  // the verdict, with its estimate and interval
  std::filesystem::path record;
};

// The status a rerun's verdict gives a change in `direction` (worse | better): confirmed when the
// experiment finds a change the same way (also one smaller than planned: it is real); not reproduced when
// it finds the opposite, equivalence, or cannot tell within its budget.
std::string status_from_verdict(const std::string& verdict, const std::string& direction);

// Reads the experiment record the rerun wrote under `out_dir` (experiment.json of `run`, or a target
// campaign's experiment-INSTANCE.json); nullopt when there is none or it did not stop (the rerun failed
// or was stopped before its verdict).
std::optional<RerunOutcome> read_rerun(const std::filesystem::path& out_dir, const SeriesChange& change);

}  // namespace schedlab
