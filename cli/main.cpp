// schedlab: argument parsing only; the work happens in the libraries.
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <random>

#include "cli/campaign_command.hpp"
#include "cli/changes_command.hpp"
#include "cli/daemon_command.hpp"
#include "cli/diff_command.hpp"
#include "cli/kernel_command.hpp"
#include "cli/queue_command.hpp"
#include "cli/report_command.hpp"
#include "cli/store_command.hpp"
#include "cli/workload_table.hpp"
#include "collector/perf/perf_source.hpp"
#include "collector/runner/memory_limit.hpp"
#include "collector/runner/runner.hpp"
#include "collector/sysinfo/host_class.hpp"
#include "collector/sysinfo/sysinfo.hpp"
#include "core/atomic_file.hpp"
#include "core/bundle_io.hpp"
#include "core/disk_full.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/summary.hpp"
#include "diff/sides.hpp"
#include "experiment/experiment.hpp"
#include "experiment/rounds.hpp"
#include "export/gbench.hpp"
#include "kernels/package_cache.hpp"
#include "runtime/applied_configuration.hpp"
#include "runtime/restore_journal.hpp"
#include "workloads/registry.hpp"

namespace schedlab {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

struct RunArgs {
  std::vector<std::string> workloads;
  std::vector<std::string> params;
  std::vector<std::string> events;
  int repetitions = 9;  // unless given: 9, or 3 for the quick suite
  bool repetitions_given = false;
  bool repetitions_auto = false;  // --repetitions auto: an experiment chooses from its levels
  int trials = 1;
  double timeout_s = 120;
  double settle_timeout_s = 10;
  std::uint64_t seed = 0;
  bool seed_given = false;
  bool no_counters = false;
  std::string label;
  std::string instance_id;
  std::string out = "results";
  std::string isolation = "auto";
  std::string memory_limit;   // "" : none
  std::string workload_user;  // "": as schedlab runs
  std::string host_label;     // "": none
  std::string counter_scope = "auto";
  std::string attribution;
  std::string cache_dir;
  bool profile = false;
  std::string profile_event = "cpu-clock";
  int profile_frequency_hz = 1000;
  std::string profile_scope = "workload";
  int profile_repetitions = 1;
  bool trace = false;
  // An experiment (experiment/): side b is the run with these parameters replaced.
  std::vector<std::string> versus;
  std::optional<double> target_mde_pct;
  std::optional<double> margin_pct;
  int max_trials = 0;
  std::string budget;
  int pilot = 6;
  int look_every = 2;
  std::string metric;
  double alpha = 0.05;
  bool trials_given = false;
  // Runtime configurations (runtime/): the sides, alternated trial by trial inside this boot.
  std::vector<std::string> configurations;
  std::string configurations_file;
  std::string schedulers_dir;
  TrialEnvironmentFactory environment;  // this side's configuration, applied around every trial
  std::string configuration_key;        // and its content hash, for the experiment's comparison key
};

// "yield.threads=2" -> (yield, threads, 2)
std::tuple<std::string, std::string, std::string> split_param(const std::string& text) {
  auto eq = text.find('=');
  auto dot = text.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot > eq || dot == 0 || eq == dot + 1)
    throw InputError("--param '" + text + "': expected WORKLOAD.KEY=VALUE");
  return {text.substr(0, dot), text.substr(dot + 1, eq - dot - 1), text.substr(eq + 1)};
}

RunPlan make_plan(const RunArgs& a) {
  RunPlan plan;
  if (a.workloads.empty()) {
    plan.instances = quick_suite();
    plan.repetitions = a.repetitions_given ? a.repetitions : 3;
    plan.smoke = true;
  } else {
    for (const auto& w : a.workloads) plan.instances.push_back({w, w, {}});
    plan.repetitions = a.repetitions_given ? a.repetitions : 9;
    plan.smoke = plan.repetitions < 5;
  }
  if (!a.instance_id.empty()) {
    if (a.workloads.size() != 1)
      throw InputError("--instance-id " + a.instance_id + ": names one instance; give one --workload");
    plan.instances[0].id = a.instance_id;
  }
  std::map<std::string, std::string> given;  // WORKLOAD.KEY -> the --param that set it
  for (const auto& text : a.params) {
    auto [workload, key, value] = split_param(text);
    // A second value would silently replace the first; a list value is how to run both.
    if (auto [it, fresh] = given.emplace(workload + "." + key, text); !fresh)
      throw InputError("--param " + text + ": " + workload + "." + key + " is already given (--param " +
                       it->second + "); give it once, or a list such as " + workload + "." + key +
                       "=[A,B] to sweep");
    bool applied = false;
    for (auto& in : plan.instances)
      if (in.workload == workload) {
        in.params[key] = value;
        applied = true;
      }
    if (!applied)
      throw InputError("--param " + text + ": workload '" + workload + "' is not part of this run");
  }
  plan.trials = a.trials;
  plan.events = a.events;
  plan.counters = !a.no_counters;
  if (a.no_counters && !a.events.empty()) throw InputError("--event and --no-counters contradict each other");
  plan.timeout_s = a.timeout_s;
  plan.seed = a.seed_given ? a.seed : std::random_device{}();
  plan.label = a.label;
  plan.out_dir = a.out;
  plan.isolation = parse_isolation_mode(a.isolation);
  if (!a.memory_limit.empty()) plan.memory_limit_bytes = parse_memory_size(a.memory_limit, "--memory-limit");
  plan.workload_user = a.workload_user == "root" ? "" : a.workload_user;
  try {
    check_host_label(a.host_label);
  } catch (const InputError& e) {
    throw InputError(std::string("--host-label ") + e.what());
  }
  plan.host_label = a.host_label;
  plan.counter_scope = parse_counter_scope(a.counter_scope);
  plan.cache_dir = a.cache_dir.empty() ? kernels::default_cache_dir().string() : a.cache_dir;
  plan.settle.max_wait_s = a.settle_timeout_s;
  plan.diagnostics.profile = a.profile;
  plan.diagnostics.repetitions = a.profile_repetitions;
  plan.diagnostics.profile_options.event = a.profile_event;
  plan.diagnostics.profile_options.frequency_hz = a.profile_frequency_hz;
  plan.diagnostics.profile_options.scope = parse_profile_scope(a.profile_scope);
  plan.diagnostics.trace = a.trace;
  if (!a.attribution.empty()) {
    const auto scope = parse_counter_scope(a.attribution);
    if (scope != CounterScope::kCgroup && scope != CounterScope::kTaskTree)
      throw InputError("--attribution " + a.attribution +
                       ": the workload alone is counted per cgroup or per task "
                       "(cgroup | task)");
    plan.diagnostics.attribution = scope;
  }
  plan.environment = a.environment;
  plan.configuration_key = a.configuration_key;
  return plan;
}

// "3", "3%", "2.5 %" -> 3, 3, 2.5
double parse_percent(std::string text, const std::string& option) {
  while (!text.empty() && (text.back() == '%' || text.back() == ' ')) text.pop_back();
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v))
    throw InputError(option + " '" + text + "': expected a percentage such as 3 or 3%");
  return v;
}

int parse_count(const std::string& text, const std::string& option) {
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size())
    throw InputError(option + " '" + text + "': expected a whole number or auto");
  return v;
}

// Side b of an experiment: the run's parameters with the --versus ones in their place.
RunArgs versus_side(const RunArgs& a) {
  RunArgs b = a;
  for (const auto& text : a.versus) {
    auto [workload, key, value] = split_param(text);
    if (value.size() >= 2 && value.front() == '[')
      throw InputError("--versus " + text +
                       ": one value per side (a list sweeps; an experiment compares two)");
    const std::string name = workload + "." + key + "=";
    std::erase_if(b.params, [&](const std::string& p) { return p.rfind(name, 0) == 0; });
    b.params.push_back(text);
  }
  return b;
}

// An experiment's or a set of rounds' outcome, told the same way: the summary and the record's path on
// stdout, what was lost on stderr, exit 1 when anything was.
template <typename Outcome>
int report_outcome(const Outcome& outcome, const char* kind) {
  std::signal(SIGPIPE, SIG_IGN);
  std::cout << outcome.summary << kind << ": " << outcome.record.string() << "\n";
  if (outcome.interrupted)
    std::cerr << "schedlab: interrupted; what was measured is in " << outcome.dir << "\n";
  if (outcome.failed_repetitions > 0)
    std::cerr << "schedlab: " << outcome.failed_repetitions << " repetition(s) did not succeed\n";
  return outcome.interrupted || outcome.failed_repetitions > 0 ? kExitFailed : 0;
}

// `b_args`: side b when it is not a's parameters with --versus in place (two runtime configurations).
int cmd_experiment(const RunArgs& args, const std::optional<RunArgs>& b_args = std::nullopt,
                   const nlohmann::json& configurations = nullptr) {
  if (args.target_mde_pct && args.trials_given)
    throw InputError("--trials and --target-mde: give one (a target plans the number of trials)");
  if (args.workloads.empty()) throw InputError("--versus: name the workload (--workload NAME)");
  if (args.profile || args.trace || !args.attribution.empty())
    throw InputError(
        "--versus: --profile, --trace and --attribution are not part of experiments yet; run them on each "
        "side");
  RunArgs a = args;
  if (!a.repetitions_given || a.repetitions_auto) {
    // Trials, not repetitions, are what an experiment replicates: a few repetitions each.
    a.repetitions = 3;
    a.repetitions_given = true;
  }
  // Trials, not repetitions, replicate an experiment: few repetitions are not a smoke run here.
  auto prepare = [](const RunArgs& side) {
    auto plan = make_plan(side);
    plan.smoke = false;
    return std::make_unique<PreparedRun>(std::move(plan), HostPaths::live());
  };
  auto make_b = [&](const RunArgs& side_a_args) {
    if (!b_args) return versus_side(side_a_args);
    RunArgs b = *b_args;
    b.repetitions = side_a_args.repetitions;
    b.repetitions_given = side_a_args.repetitions_given;
    b.seed = side_a_args.seed;
    b.seed_given = side_a_args.seed_given;
    return b;
  };
  auto side_a = prepare(a), side_b = prepare(make_b(a));
  ExperimentOptions o;
  o.configurations = configurations;
  o.target_pct = args.target_mde_pct;
  o.margin_pct = args.margin_pct;
  o.alpha = args.alpha;
  o.max_pairs = args.max_trials;
  if (!args.budget.empty()) o.budget_s = parse_duration(args.budget, "--budget");
  o.fixed_pairs = args.trials;
  o.pilot_pairs = args.pilot;
  o.look_every = args.look_every;
  o.metric = args.metric;
  o.versus = args.versus;
  o.out_dir = args.out;
  if (args.repetitions_auto) {
    auto choice = choose_repetitions(*side_a, *side_b, o, a.repetitions);
    o.repetitions_choice = std::move(choice.record);
    o.repetitions_line = std::move(choice.line);
    if (choice.repetitions != a.repetitions) {
      a.repetitions = choice.repetitions;
      side_a = prepare(a);
      side_b = prepare(make_b(a));
    }
  }
  check_experiment(*side_a, *side_b, o);
  auto progress = make_progress(stderr);
  auto outcome = run_experiment(*side_a, *side_b, o, *progress);
  return report_outcome(outcome, "experiment");
}

int cmd_plain_run(const RunArgs& args);

// --configuration A --configuration B ...: the sides are runtime configurations of this boot. Each is
// applied and restored once before anything runs (a refusal is an error naming it), then two of them
// with one workload are an experiment (pairs, sequential with a target), any other number rounds.
int cmd_configurations(const RunArgs& args) {
  if (!args.versus.empty())
    throw InputError("--versus and --configuration: give one kind of side (parameters or configurations)");
  std::vector<runtime::RuntimeConfiguration> defined;
  if (!args.configurations_file.empty()) defined = runtime::load_configurations(args.configurations_file);
  std::vector<runtime::RuntimeConfiguration> chosen;
  for (const auto& spec : args.configurations) {
    auto c = runtime::resolve_configuration(spec, defined);
    for (const auto& earlier : chosen)
      if (earlier.name == c.name)
        throw InputError("--configuration " + spec + ": the name " + c.name + " is given twice");
    chosen.push_back(std::move(c));
  }
  runtime::RuntimeContext ctx;
  ctx.journal_dir =
      (args.cache_dir.empty() ? kernels::default_cache_dir() : std::filesystem::path(args.cache_dir)) /
      "runtime";
  ctx.schedulers_dir = args.schedulers_dir.empty() ? runtime::default_schedulers_dir()
                                                   : std::filesystem::path(args.schedulers_dir);
  ctx.isolation = parse_isolation_mode(args.isolation);
  auto side_args = [&](const runtime::RuntimeConfiguration& c) {
    RunArgs side = args;
    side.configurations.clear();
    side.environment = runtime::environment_factory(c, ctx);
    side.configuration_key = canonical_hash(c.to_json());
    // A booted recipe passes its label (6.12-scx): the side is that kernel under this configuration.
    side.label = side.label.empty() ? c.name : side.label + "+" + c.name;
    return side;
  };
  (void)make_plan(side_args(chosen.front()));  // the workloads and parameters, before any setting changes
  auto rehearsal = runtime::rehearse_configurations(chosen, ctx);
  for (const auto& r : rehearsal)
    std::cerr << fmt::format("configuration {}: applied in {:.0f} ms and restored in {:.0f} ms (rehearsal)\n",
                             r.value("configuration", "?"), r.value("apply_ms", 0.0),
                             r.value("restore_ms", 0.0));
  const bool one_instance = args.workloads.size() == 1;
  if (chosen.size() == 1) {
    if (args.target_mde_pct)
      throw InputError("--target-mde: compare two configurations (give --configuration twice)");
    return cmd_plain_run(side_args(chosen.front()));
  }
  if (chosen.size() == 2 && one_instance)
    return cmd_experiment(side_args(chosen[0]), side_args(chosen[1]),
                          {{"a", chosen[0].to_json()}, {"b", chosen[1].to_json()}});
  if (args.target_mde_pct)
    throw InputError("--target-mde: a sequential experiment compares two configurations on one --workload");
  RunArgs common = args;
  if (!common.repetitions_given) {
    common.repetitions = args.workloads.empty() ? 3 : 9;
    common.repetitions_given = true;
  }
  std::vector<std::unique_ptr<PreparedRun>> runs;
  std::vector<RoundSide> sides;
  const std::uint64_t seed = args.seed_given ? args.seed : std::random_device{}();
  for (const auto& c : chosen) {
    RunArgs side = side_args(c);
    side.repetitions = common.repetitions;
    side.repetitions_given = true;
    side.seed = seed;
    side.seed_given = true;
    runs.push_back(std::make_unique<PreparedRun>(make_plan(side), HostPaths::live()));
    sides.push_back({c.name, runs.back().get(), c.to_json()});
  }
  auto progress = make_progress(stderr);
  auto outcome = run_rounds(sides, args.trials, args.out, seed, *progress);
  return report_outcome(outcome, "rounds");
}

int cmd_run(const RunArgs& args) {
  // Whatever a killed schedlab left changed goes back before this run measures anything.
  for (const auto& line : runtime::restore_leftovers(
           (args.cache_dir.empty() ? kernels::default_cache_dir() : std::filesystem::path(args.cache_dir)) /
               "runtime",
           boot_id()))
    std::cerr << "schedlab: " << line << "\n";
  if (!args.configurations.empty()) return cmd_configurations(args);
  if (!args.configurations_file.empty())
    throw InputError("--configurations: name the sides with --configuration NAME");
  if (!args.versus.empty() || args.target_mde_pct) {
    if (args.versus.empty())
      throw InputError("--target-mde: give the other side with --versus WORKLOAD.KEY=VALUE");
    return cmd_experiment(args);
  }
  for (const auto& [given, name] :
       {std::pair{args.margin_pct.has_value(), "--margin"}, std::pair{args.max_trials != 0, "--max-trials"},
        std::pair{!args.budget.empty(), "--budget"}, std::pair{!args.metric.empty(), "--metric"}})
    if (given) throw InputError(std::string(name) + ": belongs to an experiment (--versus)");
  if (args.repetitions_auto)
    throw InputError("--repetitions auto: an experiment (--versus) chooses it from its levels; give a count");
  return cmd_plain_run(args);
}

int cmd_plain_run(const RunArgs& args) {
  PreparedRun run(make_plan(args), HostPaths::live());
  auto progress = make_progress(stderr);
  auto outcome = execute(run, *progress);
  // The bundles are written: a reader that went away (`| head`) loses text, and the exit code still
  // says how the work went.
  std::signal(SIGPIPE, SIG_IGN);
  for (const auto& path : outcome.bundles) {
    auto bundle = load_bundle(path);
    std::cout << format_summary(bundle, path.string(), noise_warnings(bundle.environment, bundle.host))
              << "\n";
  }
  for (const auto& path : outcome.bundles) std::cout << "bundle: " << path.string() << "\n";
  if (outcome.interrupted) std::cerr << "schedlab: interrupted; what was measured is in the bundle\n";
  if (outcome.failed_repetitions > 0)
    std::cerr << "schedlab: " << outcome.failed_repetitions << " repetition(s) did not succeed\n";
  return outcome.interrupted || outcome.failed_repetitions > 0 ? kExitFailed : 0;
}

// A bundle, or a directory of them (a run's trials, as `diff` takes it): each trial's summary in the
// order the trials started.
int cmd_show(const std::string& path, bool counters) {
  const SummaryOptions options{counters};
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const auto side = load_side(path, path);
    std::cout << fmt::format("directory {}: {} bundle(s)\n", path, side.bundles.size());
    for (const auto& [file, bundle] : side.bundles)
      std::cout << "\n"
                << format_summary(bundle, file.string(), noise_warnings(bundle.environment, bundle.host),
                                  options);
    return 0;
  }
  auto bundle = load_bundle(path);
  std::cout << format_summary(bundle, path, noise_warnings(bundle.environment, bundle.host), options);
  return 0;
}

struct ExportArgs {
  std::string format;
  std::string bundle;
  std::string out;  // empty: standard output
};

int cmd_export(const ExportArgs& a) {
  if (a.format != "gbench")
    throw InputError("--format '" + a.format + "': unknown export format (known: gbench)");
  const auto text = gbench_json(load_bundle(a.bundle), a.bundle).dump(2) + "\n";
  if (a.out.empty())
    std::cout << text;
  else
    write_file_atomic(a.out, text);  // refuses an existing file
  return 0;
}

std::string range_text(const ParamSpec& p) {
  if (p.kind == ParamKind::kChoice) {
    std::string out;
    for (const auto& c : p.choices) out += (out.empty() ? "" : "|") + c;  // "hogs:N": a value after "hogs:"
    return out;
  }
  if (!p.min && !p.max) return "";
  return fmt::format("{}..{}", p.min ? fmt::format("{:g}", *p.min) : "",
                     p.max ? fmt::format("{:g}", *p.max) : "");
}

int cmd_workloads(bool json) {
  if (json) {
    fmt::print("{}\n", workload_table().dump(2));
    return 0;
  }
  for (const auto& entry : builtin_workloads()) {
    auto w = entry.make();
    fmt::print("{} {} — {}\n  reproduces: {}\n  parameters (--param {}.KEY=VALUE):\n", w->name(),
               w->version(), w->summary(), w->experiment(), w->name());
    for (const auto& p : w->params())
      fmt::print("    {:<22} {:<8} default {:<10} {:<6} {:<28} {}\n", w->name() + "." + p.key, p.kind_name(),
                 p.default_value.is_string() ? p.default_value.get<std::string>() : p.default_value.dump(),
                 p.unit.empty() ? "" : p.unit, range_text(p), p.help);
    fmt::print("  metrics (* headline):\n");
    for (const auto& m : w->metrics())
      fmt::print("    {:<22} {:<6} {:<17} {}\n", m.name + (m.headline ? " *" : ""), m.unit,
                 to_string(m.direction), m.help);
    fmt::print("  quick suite instances:");
    for (const auto& [id, _] : w->quick_instances()) fmt::print(" {}", id);
    fmt::print("\n\n");
  }
  return 0;
}

int cmd_events(bool all) {
  fmt::print("PMUs present (libpfm4):\n");
  std::vector<std::string> names = default_events();
  for (const auto& pmu : present_pmus()) {
    fmt::print("  {:<12} {} ({} events)\n", pmu.name, pmu.description, pmu.events);
    if (all)
      for (const auto& e : pmu_event_names(pmu.name)) names.push_back(e);
  }
  fmt::print("\n{:<34} {:<7} {}\n", "event", "opens", "encoding / why not");
  for (const auto& name : names) {
    auto p = probe_event(name);
    if (p.opens)
      fmt::print("{:<34} {:<7} {}\n", name, "yes", p.encoded.canonical);
    else
      fmt::print("{:<34} {:<7} {}: {}\n", name, "no", errno_name(p.error_number), p.reason);
  }
  if (!all) fmt::print("\n(the default event set; --all lists every event of the PMUs present)\n");
  return 0;
}

int run_cli(int argc, char** argv) {
  CLI::App app{
      "schedlab: what did this scheduler change do? Benchmarks and counters for Linux CPU schedulers."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "schedlab 0.1.0");

  RunArgs run_args;
  std::string target_mde_value, margin_value;
  auto* run =
      app.add_subcommand("run", "Run workloads under the collector and write a result bundle per trial");
  run->add_option("--workload", run_args.workloads,
                  "Workloads to run (NAME[,NAME...]); default: the quick suite")
      ->delimiter(',');
  run->add_option("--param", run_args.params, "WORKLOAD.KEY=VALUE (repeatable; see `schedlab workloads`)");
  std::string repetitions_text;
  auto* repetitions = run->add_option(
      "--repetitions", repetitions_text,
      "Timed repetitions per instance after one discarded warm-up (default 9; quick suite 3; experiments 3, "
      "or auto: chosen from this comparison's earlier levels)");
  auto* trials = run->add_option("--trials", run_args.trials,
                                 "Trials (one bundle each) on the running kernel; with --versus, pairs")
                     ->default_val(1);
  run->add_option("--event", run_args.events,
                  "Counter event, libpfm4 syntax (repeatable; replaces the default set; commas are literal)");
  run->add_flag("--no-counters", run_args.no_counters, "Attach no perf counters");
  run->add_option("--timeout", run_args.timeout_s, "Time limit of one repetition, seconds")->default_val(120);
  run->add_option("--settle-timeout", run_args.settle_timeout_s,
                  "Longest wait for a quiet machine before each instance, seconds")
      ->default_val(10);
  auto* seed =
      run->add_option("--seed", run_args.seed, "Seed of the workload-order shuffle (default: random)");
  run->add_option("--label", run_args.label, "Free text stored in the bundle");
  run->add_option("--instance-id", run_args.instance_id,
                  "The instance's id in the bundle (one --workload; default: the workload's name; a sweep "
                  "appends its values). The daemon passes its campaign's, so a sweep's steps stay apart");
  run->add_option("--out", run_args.out, "Directory for the bundles")->default_val("results");
  run->add_option("--versus", run_args.versus,
                  "WORKLOAD.KEY=VALUE (repeatable): an experiment; side b is the run with these parameters, "
                  "alternated with side a in pairs of seeded order (experiment/README.md)");
  auto* target_mde = run->add_option(
      "--target-mde", target_mde_value,
      "Percent: the smallest change that matters; the experiment plans its pairs and stops when it "
      "can answer");
  auto* margin =
      run->add_option("--margin", margin_value, "Percent: equivalence margin (default: the target)");
  run->add_option("--max-trials", run_args.max_trials,
                  "Most pairs (trials per side) a target experiment runs");
  run->add_option("--budget", run_args.budget, "Most machine time of a target experiment: 90s, 20m, 1h30m");
  run->add_option("--pilot", run_args.pilot, "Pairs before the plan and the first look")->default_val(6);
  run->add_option("--look-every", run_args.look_every, "Pairs between looks")->default_val(2);
  run->add_option("--metric", run_args.metric, "The metric an experiment decides on (default: the headline)");
  run->add_option("--alpha", run_args.alpha, "An experiment's error rate, kept over all its looks")
      ->default_val(0.05);
  run->add_flag(
      "--profile", run_args.profile,
      "Sample a kernel profile (and switch schedstats on) in diagnostic repetitions after the timed ones");
  run->add_option("--profile-event", run_args.profile_event, "Sampling event (libpfm4 name)")
      ->default_val("cpu-clock");
  run->add_option("--profile-frequency", run_args.profile_frequency_hz, "Samples per second per CPU")
      ->default_val(1000);
  run->add_option("--profile-scope", run_args.profile_scope, "workload (its cgroup or process tree) | system")
      ->default_val("workload");
  run->add_option("--profile-repetitions", run_args.profile_repetitions,
                  "Diagnostic repetitions per instance and trial with --profile")
      ->default_val(1);
  run->add_flag("--trace", run_args.trace,
                "Trace sched_switch/wakeup/migrate in one more diagnostic repetition; per-task summary");
  run->add_option(
      "--configuration", run_args.configurations,
      "A runtime configuration as a side (repeatable): a name from --configurations, eevdf, "
      "scx:NAME, or inline name=N,scheduler=...,cpu.max=50000/100000; two with one --workload are "
      "an experiment, more are rounds (runtime/README.md)");
  run->add_option(
      "--configurations", run_args.configurations_file,
      "TOML file of [configuration.NAME] tables (scheduler, features, tunables, sysctls, cpu_weight, "
      "cpu_max)");
  run->add_option(
      "--schedulers-dir", run_args.schedulers_dir,
      "Where schedlab-scx and the NAME.bpf.o sched_ext schedulers are (default: BUILD/schedulers)");
  run->add_option("--isolation", run_args.isolation, "auto | cgroup | process-group")->default_val("auto");
  run->add_option(
      "--workload-user", run_args.workload_user,
      "When schedlab runs as root: the user the workloads that need no privilege run as (the runner "
      "keeps root for counters, cgroups and tunables; a workload whose parameters need root, e.g. "
      "policy=fifo:N or a negative nice, stays root and its repetitions say why); root: all as root "
      "(default: root; the daemon's default is nobody)");
  run->add_option("--host-label", run_args.host_label,
                  "This box's class label, kept in each bundle (host.label): a store's --host selects it "
                  "(the daemon passes its [campaign] host_label or --host-label)");
  run->add_option(
      "--memory-limit", run_args.memory_limit,
      "Memory limit of one repetition (its memory cgroup; 512M, 2G): a workload past it is killed by "
      "the kernel's OOM killer, with everything it started, and recorded as failed (default: none)");
  run->add_option("--counter-scope", run_args.counter_scope,
                  "Where timed repetitions are counted: system (per CPU on the workload's CPUs, every task "
                  "there: no cost at context switches; what else ran is measured and flagged), cgroup (per "
                  "CPU on the repetition's cgroup), task (per task, inherited: what perf stat does); auto: "
                  "system, or task where counting on CPUs is not permitted")
      ->default_val("auto");
  run->add_option("--attribution", run_args.attribution,
                  "cgroup | task: one more diagnostic repetition per instance and trial, counted on the "
                  "workload alone, for exact per-workload counts (never a timed repetition)");
  run->add_option(
      "--cache-dir", run_args.cache_dir,
      "Where workloads keep generated trees and extracted sources (default /var/cache/schedlab as root, "
      "else ~/.cache/schedlab)");

  std::string show_path;
  bool show_counters = false;
  auto* show =
      app.add_subcommand("show", "Summarise a bundle, or each bundle of a directory (a run's trials)");
  show->add_option("BUNDLE", show_path, "A bundle file, or a directory of bundles")->required();
  show->add_flag("--counters", show_counters,
                 "Every counter per instance (per operation where the workload counts operations)");

  auto* workloads = app.add_subcommand("workloads", "List workloads, their parameters and metrics");
  bool workloads_json = false;
  workloads->add_flag("--json", workloads_json,
                      "Each workload's metrics and exported families as JSON (dashboards/workloads.json)");
  bool all_events = false;
  auto* events = app.add_subcommand("events", "What libpfm4 encodes and what opens on this machine");
  events->add_flag("--all", all_events, "Every event of the PMUs present, not only the default set");

  ExportArgs export_args;
  auto* export_cmd = app.add_subcommand("export", "Write a bundle in another tool's format");
  export_cmd
      ->add_option("--format", export_args.format,
                   "gbench: Google Benchmark's JSON, as its tools/compare.py reads it")
      ->required();
  export_cmd->add_option("BUNDLE", export_args.bundle, "A bundle file")->required();
  export_cmd->add_option("-o,--out", export_args.out,
                         "Write to FILE instead of standard output; an existing FILE is never replaced");

  DiffCommand diff(app);
  ReportCommand report(app);
  KernelCommand kernel(app);
  StoreCommand store(app);
  QueueCommand queue(app);
  DaemonCommand daemon(app);
  CampaignCommand campaign(app);
  ChangesCommand changes(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitBadInput;
  }
  run_args.seed_given = seed->count() > 0;
  run_args.repetitions_given = repetitions->count() > 0;
  run_args.trials_given = trials->count() > 0;
  try {
    if (run_args.repetitions_given) {
      run_args.repetitions_auto = repetitions_text == "auto";
      if (!run_args.repetitions_auto) run_args.repetitions = parse_count(repetitions_text, "--repetitions");
    }
    if (target_mde->count() > 0) run_args.target_mde_pct = parse_percent(target_mde_value, "--target-mde");
    if (margin->count() > 0) run_args.margin_pct = parse_percent(margin_value, "--margin");
  } catch (const InputError& e) {
    std::cerr << "schedlab: " << e.what() << "\n";
    return kExitBadInput;
  }
  try {
    if (*run) return cmd_run(run_args);
    if (*show) return cmd_show(show_path, show_counters);
    if (*workloads) return cmd_workloads(workloads_json);
    if (*events) return cmd_events(all_events);
    if (diff.chosen()) return diff.run();
    if (report.chosen()) return report.run();
    if (kernel.chosen()) return kernel.run();
    if (store.chosen()) return store.run();
    if (queue.chosen()) return queue.run();
    if (daemon.chosen()) return daemon.run();
    if (campaign.chosen()) return campaign.run();
    if (changes.chosen()) return changes.run();
    if (*export_cmd) return cmd_export(export_args);
  } catch (const InputError& e) {
    std::cerr << "schedlab: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const SystemError& e) {
    // A full disk has its own status: the daemon waits for space (or stops) instead of recording a
    // step that could not write its bundle as failed.
    std::cerr << "schedlab: " << e.what() << "\n";
    return is_disk_full(e.code()) ? kExitDiskFull : kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << "schedlab: " << e.what() << "\n";
    return kExitFailed;
  }
  return kExitBadInput;
}

}  // namespace
}  // namespace schedlab

int main(int argc, char** argv) {
  return schedlab::run_cli(argc, argv);
}
