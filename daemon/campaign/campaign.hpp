#pragma once
// A campaign file (TOML, DESIGN.md's contract) and the plan it expands into: configuration x trial x
// workload instance, each a step the daemon runs once and records in the store.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collector/sysinfo/host_class.hpp"
#include "core/host_paths.hpp"
#include "daemon/campaign/calendar.hpp"

namespace schedlab {

enum class CampaignOrder { kInterleaved, kBlocked };

// [campaign] on_disk_full: what the daemon does when a write is refused because its disk is full (a
// step's bundle, the store, the daemon's own files): wait and try again every disk_full_retry, or stop
// (exit kExitDiskFull, core/disk_full.hpp, which the unit does not restart on).
enum class OnDiskFull { kWait, kStop };

struct ExporterSettings {
  std::string listen = "127.0.0.1:9464";  // "" turns the exposer off
  std::string pushgateway;                // "" : no push
  double push_timeout_s = 10;             // a push waits at most this long (connect + answer)
  int configurations_per_host = 3;        // headline series kept per host: the newest N configurations
  std::string host;                       // label value; default: the machine's hostname
  // The `class` label beside `host` (its name()) and schedlab_daemon_info's shape: filled by the daemon
  // (this_host_class with [campaign] host_label); an empty shape: this machine's, without a label.
  HostClass host_class;
};

struct CampaignWorkload {
  std::string id;        // "yield" unless given; unique within the campaign
  std::string workload;  // registered workload name
  int repetitions = 9;
  // KEY -> VALUE as `--param` takes it; a TOML array becomes "[a,b,c]" (a sweep, expanded per value).
  std::map<std::string, std::string> params;
  int line = 0;  // of its [[workload]] table, for errors found later
};

// [campaign] target_mde and its companions: a comparison of exactly two configurations planned to a
// target effect instead of a fixed number of trials, and stopped by the sequential looks
// (experiment/sequential_experiment.hpp), instance by instance.
struct CampaignTarget {
  double mde_pct = 0;                // target_mde
  std::optional<double> margin_pct;  // margin (default: the target)
  double alpha = 0.05;
  int max_trials = 0;              // pairs, one trial of each configuration each; 0: the budget's cap
  std::optional<double> budget_s;  // budget: machine time of the run, boots included
  int pilot = 4;                   // pairs before the plan and the first look
  int look_every = 2;
};

// A target campaign with a budget and no max_trials expands this many pairs; the budget ends it first.
inline constexpr int kBudgetOnlyMaxTrials = 500;

// "running" or "running:NAME": a step on the booted kernel, no boot.
bool on_running_kernel(const std::string& configuration);
// NAME of "running:NAME", "" otherwise.
std::string runtime_configuration_of(const std::string& configuration);

// [changes]: change points of the campaign's series after each run, and their confirmation by rerun.
struct ChangeSettings {
  bool detect = true;         // change points after each run, published on /metrics
  bool confirm = true;        // each suspected one rerun as a paired experiment (changes/)
  double budget_s = 180;      // machine time of one rerun
  double alpha = 0.05;        // of each split's permutation test
  double min_effect_pct = 2;  // smaller changes of the median are not change points
};

struct Campaign {
  std::filesystem::path file;
  std::string name;
  std::optional<CalendarSpec> schedule;  // nullopt: "once"
  std::string store_url;                 // "sqlite:///path"
  std::filesystem::path output;          // bundles land under output/
  std::filesystem::path
      kernel_cache;  // `schedlab kernel --cache-dir` for recipe configurations; "": its default
  std::filesystem::path
      recipes;  // `schedlab kernel --recipes` for recipe configurations; "": the suite's own
  // How a recipe configuration is booted: "qemu" (a guest per step, the suite inside it), or on a lab
  // box "kexec" / "grub" (the machine itself reboots into the recipe's kernel for each step, and the
  // daemon, started again by its unit, resumes the step in that kernel).
  std::string boot = "qemu";
  // "running" (the kernel as found), "running:NAME" (a runtime configuration of it: NAME from
  // runtime_configurations, or eevdf / cfs / scx:NAME; no reboot between them), or a recipe name.
  std::vector<std::string> configurations = {"running"};
  std::filesystem::path runtime_configurations;  // [campaign] runtime_configurations: `run --configurations`
  int trials = 1;                                // with a target: the pairs expanded (max_trials)
  std::optional<CampaignTarget> target;          // a sequential comparison of the two configurations
  CampaignOrder order = CampaignOrder::kInterleaved;
  std::uint64_t seed = 1;
  std::vector<std::string> events;  // [campaign] events = [...]; empty: the default set
  bool counters = true;             // [campaign] counters = false: no perf counters
  bool profile = false;
  double timeout_s = 120;        // per repetition
  double settle_timeout_s = 10;  // longest wait for a quiet machine before each step (`run --settle-timeout`)
  // When the daemon runs as root, what workloads that need no privilege run as (`run --workload-user`).
  std::string workload_user = "nobody";
  std::optional<std::uint64_t>
      memory_limit_bytes;  // each repetition's (`run --memory-limit`); none: unlimited
  OnDiskFull on_disk_full = OnDiskFull::kWait;
  double disk_full_retry_s = 60;  // [campaign] disk_full_retry: "60s", "5m" or a number of seconds
  // [campaign] host_label: names this box's class for the exporter's `class` label and in each bundle's
  // host.label, which a store's --host selects (one word, checked by check_host_label); "": the class is
  // the host's shape, from its sysinfo facts.
  std::string host_label;
  ExporterSettings exporter;
  ChangeSettings changes;
  std::vector<CampaignWorkload> workloads;
  std::string content_hash;  // of the file's bytes: a changed file is a new campaign
};

// Parses and validates; throws InputError "FILE:LINE: key: why" for every problem (unknown keys
// included, so a typo never silently falls back to a default).
Campaign load_campaign(const std::filesystem::path& file);
// The same, checking configuration names against the kernel recipes in `recipes_dir` (the one-argument
// form uses the built-in recipes).
Campaign load_campaign(const std::filesystem::path& file, const std::filesystem::path& recipes_dir);

// Checks every instance's parameters against this machine as the runner will before it starts one
// (a placement level the topology lacks, say), so that `campaign check` finds it rather than the
// first night's run. Throws InputError "FILE:LINE: [[workload]] ID: why", LINE of its [[workload]].
// `cache_dir` is where the daemon keeps workload inputs (the unit's CacheDirectory=); nothing is written.
void check_on_host(const Campaign& c, const HostPaths& paths = HostPaths::live(),
                   const std::filesystem::path& cache_dir = "/var/cache/schedlab");

// One unit of work: an instance's repetitions in one trial of one configuration.
struct CampaignStep {
  int index = 0;    // position in the plan, 0-based
  std::string key;  // stable across restarts: "t1/running/yield.threads=2"
  std::string configuration;
  int trial = 1;            // 1-based
  std::string instance_id;  // sweep values spelt into it: "yield.threads=2"
  std::string workload;
  std::map<std::string, std::string> params;  // single values only
  int repetitions = 9;
  std::uint64_t seed = 0;  // derived from the campaign seed and the step
};

// configurations x trials in the campaign's order (interleaved: t1 A, t1 B, t2 A...; blocked: A t1,
// A t2, B t1...), within each the instances (sweeps expanded) in an order shuffled by seed and trial.
// A target campaign's pairs are interleaved in a seeded random order (A B or B A, see pair_b_first).
std::vector<CampaignStep> expand_plan(const Campaign& c);

struct PlanTotals {
  int steps = 0;
  int repetitions = 0;  // timed ones, without the warm-ups
  int boots = 0;        // steps that boot a kernel: every one but "running"
};
// Whether trial `trial`'s pair of a target campaign runs its second configuration first: a coin flip
// from the seed, so that B does not always follow A.
bool pair_b_first(const Campaign& c, int trial);

// A name made safe for one path component: letters, digits, '.', '=' and '-' kept, the rest '_', and a
// leading '.' too, so that a campaign named ".." cannot put its runs beside the output directory.
std::string file_safe_name(const std::string& name);
// Where the daemon puts a campaign's runs: OUTPUT/NAME (made safe), one run-ID-STAMP directory per run.
std::filesystem::path campaign_runs_directory(const Campaign& c);

PlanTotals plan_totals(const std::vector<CampaignStep>& plan);

// What past runs of a step's instance are looked up by: "WORKLOAD/PARAMS_HASH", the hash of its
// resolved parameters in canonical form, as bundles record it (params_hash) and the diff pairs them.
std::string step_estimate_key(const CampaignStep& step);

struct PlanEstimate {
  std::optional<double> seconds;  // nullopt: some step has no past run, so the total is unknown
  int steps_known = 0;
  int steps_unknown = 0;
};

// The plan's duration from seconds per repetition of past runs (keyed by step_estimate_key). One
// discarded warm-up runs before each step's repetitions, so it counts as one more repetition.
PlanEstimate estimate_duration(const std::vector<CampaignStep>& plan,
                               const std::map<std::string, double>& seconds_per_repetition);

}  // namespace schedlab
