#include "collector/runner/runner.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <set>

#include "collector/perf/perf_source.hpp"
#include "collector/runner/interrupt.hpp"
#include "collector/runner/memory_limit.hpp"
#include "collector/runner/repetition.hpp"
#include "collector/sysinfo/sysinfo.hpp"
#include "collector/sysstats/schedstat_source.hpp"
#include "collector/sysstats/system_stats_source.hpp"
#include "collector/trace/trace_source.hpp"
#include "core/bundle_io.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "workloads/common/task_setup.hpp"
#include "workloads/registry.hpp"

namespace schedlab {
namespace {

std::string make_run_id(std::uint64_t entropy) {
  std::string ts = utc_timestamp();  // 2026-11-30T16:18:24.123Z
  std::string compact;
  for (char c : ts.substr(0, 19))
    if (c != '-' && c != ':') compact += c;
  return compact + "Z-" +
         hex64(fnv1a64(std::to_string(entropy) + ts + std::to_string(::getpid()))).substr(0, 6);
}

void check_output_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("--out " + dir.string() + ": cannot create the directory: " + ec.message());
  if (::access(dir.c_str(), W_OK) != 0) throw InputError("--out " + dir.string() + ": not writable");
}

std::string headline_of(const Workload& w) {
  for (const auto& m : w.metrics())
    if (m.headline) return m.name;
  return "";
}

}  // namespace

// Fisher-Yates with our own draw, so a seed gives the same order with any standard library.
std::vector<std::size_t> shuffled_order(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  return order;
}

std::vector<InstancePlan> quick_suite() {
  std::vector<InstancePlan> out;
  for (const auto& entry : builtin_workloads()) {
    auto w = entry.make();
    for (const auto& [id, params] : w->quick_instances()) out.push_back({id, entry.name, params});
  }
  return out;
}

std::vector<InstancePlan> expand_sweeps(const std::vector<InstancePlan>& instances) {
  std::vector<InstancePlan> out;
  for (const auto& in : instances) {
    std::vector<InstancePlan> expanded{in};
    for (const auto& [key, value] : in.params) {
      if (value.size() < 2 || value.front() != '[' || value.back() != ']') continue;
      std::vector<std::string> values;
      std::string inner = value.substr(1, value.size() - 2);
      for (std::size_t start = 0;;) {
        auto comma = inner.find(',', start);
        values.push_back(trim(inner.substr(start, comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      if (values.size() == 1 && values[0].empty())
        throw InputError(in.workload + "." + key + ": an empty list sweeps nothing");
      std::vector<InstancePlan> next;
      for (const auto& partial : expanded)
        for (const auto& v : values) {
          InstancePlan p = partial;
          p.params[key] = v;
          p.id += (p.id == in.id ? "." : ",") + key + "=" + v;
          next.push_back(std::move(p));
        }
      expanded = std::move(next);
    }
    out.insert(out.end(), expanded.begin(), expanded.end());
  }
  return out;
}

std::vector<InstancePlan> with_default_sweeps(std::vector<InstancePlan> instances) {
  for (auto& in : instances) {
    const auto workload = make_workload(in.workload);
    for (const auto& spec : workload->params()) {
      if (in.params.count(spec.key) || !spec.default_value.is_string()) continue;
      const auto& text = spec.default_value.get_ref<const std::string&>();
      if (text.size() >= 2 && text.front() == '[' && text.back() == ']') in.params[spec.key] = text;
    }
  }
  return instances;
}

PreparedRun::PreparedRun(RunPlan plan, HostPaths paths) : plan_(std::move(plan)), paths_(std::move(paths)) {
  plan_.instances = expand_sweeps(with_default_sweeps(std::move(plan_.instances)));
  if (plan_.instances.empty()) throw InputError("nothing to run: no workload instance");
  if (plan_.repetitions < 1) throw InputError("--repetitions must be at least 1");
  if (plan_.trials < 1) throw InputError("--trials must be at least 1");
  if (!(plan_.timeout_s > 0)) throw InputError("--timeout must be a positive number of seconds");
  // Not root: the workload runs as we do, which is already unprivileged.
  if (!plan_.workload_user.empty() && ::geteuid() == 0)
    workload_user_ = resolve_workload_user(plan_.workload_user, "--workload-user");
  if (plan_.memory_limit_bytes) {
    std::string why;
    if (!find_memory_controller(paths_, why)) throw Error("--memory-limit cannot be set here: " + why);
  }
  context_.topology = read_topology(paths_);
  context_.allowed_cpus = current_affinity();
  context_.cache_dir = plan_.cache_dir;
  std::set<std::string> ids;
  for (const auto& ip : plan_.instances) {
    if (!ids.insert(ip.id).second) throw InputError("workload instance '" + ip.id + "' is given twice");
    PreparedInstance pi;
    pi.id = ip.id;
    pi.workload = make_workload(ip.workload);
    pi.params = resolve_params(ip.workload, pi.workload->params(), ip.params);
    pi.workload->validate(pi.params, context_);
    instances_.push_back(std::move(pi));
  }
  if (plan_.counters) {
    if (plan_.events.empty()) plan_.events = default_events();
    for (const auto& e : plan_.events) {
      auto enc = encode_event(e);
      if (enc.unknown) throw InputError("--event " + e + ": unknown event (see `schedlab events`)");
      if (enc.rejected) throw InputError("--event " + e + ": " + enc.reason + " (see `schedlab events`)");
    }
  } else {
    plan_.events.clear();
  }
  const auto& diag = plan_.diagnostics;
  if (diag.profile) {
    if (diag.repetitions < 1) throw InputError("--profile-repetitions must be at least 1");
    if (diag.profile_options.frequency_hz < 1 || diag.profile_options.frequency_hz > 100000)
      throw InputError("--profile-frequency must be within 1..100000 Hz");
    const auto profile_event = encode_event(libpfm_event_name(diag.profile_options.event));
    if (profile_event.unknown)
      throw InputError("--profile-event " + diag.profile_options.event +
                       ": unknown event (see `schedlab events`)");
    if (profile_event.rejected)
      throw InputError("--profile-event " + diag.profile_options.event + ": " + profile_event.reason +
                       " (see `schedlab events`)");
  }
  check_output_dir(plan_.out_dir);
}

namespace {

// Per-CPU counters need events x CPUs descriptors: take the hard limit, as perf does.
void raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

// Says which repetitions carried which perturbing instrumentation, so a diff never compares a
// profiled repetition with a timed one.
nlohmann::json instrumentation_record(const DiagnosticsPlan& d, const RunPlan& plan) {
  return {
      {"timed",
       {{"profile", false},
        {"schedstats", "read as found (kernel.sched_schedstats unchanged)"},
        {"counter_scope", plan.counters ? to_string(plan.counter_scope) : "off"}}},
      {"diagnostic",
       {{"repetitions", d.count()},
        {"profile", d.profile},
        {"profile_repetitions", d.profile ? d.repetitions : 0},
        {"trace", d.trace},
        {"trace_repetitions", d.trace ? 1 : 0},
        {"attribution", d.attribution ? to_string(*d.attribution) : "none"},
        {"attribution_repetitions", d.attribution ? 1 : 0},
        {"profile_event", d.profile_options.event},
        {"profile_frequency_hz", d.profile_options.frequency_hz},
        {"schedstats", "switched on for each diagnostic repetition where kernel.sched_schedstats was 0"}}}};
}

// What a diagnostic repetition carries, by its index among the instance's diagnostic ones: the profiled
// repetitions first, then the traced one, then the attributed (counted on the workload alone) one.
enum class DiagnosticKind { kNone, kProfile, kTrace, kAttribution };
DiagnosticKind diagnostic_kind(const DiagnosticsPlan& d, int index) {
  const int profiled = d.profile ? d.repetitions : 0;
  if (index < profiled) return DiagnosticKind::kProfile;
  if (d.trace && index == profiled) return DiagnosticKind::kTrace;
  return DiagnosticKind::kAttribution;
}

// The trial's summary of what the kernel did while it ran (bundle.kernel.during_trial): whether a
// repetition tainted it (a WARN, an Oops the kernel survived: the results after it come from a kernel
// in trouble) and which clocksources the repetitions ran on (6.1 under qemu falls back to hpet).
void note_clocksource(nlohmann::json& trial_kernel, const nlohmann::json& clocksource) {
  if (!clocksource.is_string()) return;
  auto& seen = trial_kernel["clocksources"];
  if (std::find(seen.begin(), seen.end(), clocksource) == seen.end()) seen.push_back(clocksource);
  trial_kernel["clocksource_changed"] = seen.size() > 1;
}

void note_kernel_change(nlohmann::json& trial_kernel, const nlohmann::json& change) {
  auto taint_of = [&](const char* when) {
    const auto state = change.value(when, nlohmann::json());
    return state.is_object() && state.contains("taint") && state["taint"].is_object()
               ? state["taint"].value("value", 0UL)
               : 0UL;
  };
  if (change.value("tainted", false)) {
    const unsigned long added =
        trial_kernel.value("new_taint_value", 0UL) | (taint_of("after") & ~taint_of("before"));
    trial_kernel["tainted"] = true;
    trial_kernel["new_taint_value"] = added;
    trial_kernel["new_taint_flags"] = taint_letters(added);
  }
  for (const char* when : {"before", "after"})
    if (change.contains(when) && change[when].is_object())
      note_clocksource(trial_kernel, change[when].value("clocksource", nlohmann::json()));
}

}  // namespace

TrialRunner::TrialRunner(PreparedRun& run, Progress& progress, const volatile std::sig_atomic_t* interrupted,
                         std::string run_id)
    : run_(run), progress_(progress), interrupted_(interrupted), run_id_(std::move(run_id)) {
  raise_fd_limit();
  start_s_ = monotonic_seconds();
}

TrialRunner::Trial TrialRunner::run_trial(int trial, int planned_trials, const std::filesystem::path& path,
                                          const SettlePolicy& settle_policy,
                                          const std::function<void(Bundle&)>& annotate) {
  const auto& plan = run_.plan();
  const int diagnostic = plan.diagnostics.count();
  const int per_instance = plan.repetitions + 1 + diagnostic;
  const int total = planned_trials * static_cast<int>(run_.instances().size()) * per_instance;
  Trial out;

  Bundle bundle;
  bundle.run_id = run_id_;
  bundle.trial = trial;
  bundle.trials = planned_trials;
  bundle.label = plan.label;
  bundle.smoke = plan.smoke;
  bundle.seed = plan.seed;
  bundle.events = plan.events;
  bundle.started_at = utc_timestamp();
  // Applied before sysinfo reads the machine, so that the bundle's scheduler, features and tunables are
  // read back as the trial ran under them. A configuration that cannot be applied fails every repetition
  // of this trial with the reason; the run goes on.
  std::unique_ptr<TrialEnvironment> env;
  std::string env_lost;
  if (plan.environment) {
    try {
      env = plan.environment();
    } catch (const std::exception& e) {
      env_lost = std::string("the runtime configuration could not be applied: ") + e.what();
    }
  }
  auto sys = collect_sysinfo(run_.paths());
  if (env) {
    sys.configuration.erase("hash");
    sys.configuration["runtime"] = env->settings();
    sys.configuration["hash"] = canonical_hash(sys.configuration);
  } else if (!env_lost.empty()) {
    sys.configuration["runtime"] = {{"error", env_lost}};
  }
  bundle.boot_id = sys.boot_id;
  bundle.host = sys.host;
  if (!plan.host_label.empty()) bundle.host["label"] = plan.host_label;
  bundle.kernel = sys.kernel;
  bundle.configuration = sys.configuration;
  bundle.environment = sys.environment;
  bundle.provenance = sys.provenance;
  bundle.provenance["seed"] = plan.seed;
  nlohmann::json trial_kernel = {{"tainted", false},
                                 {"new_taint_value", 0},
                                 {"new_taint_flags", ""},
                                 {"clocksources", nlohmann::json::array()},
                                 {"clocksource_changed", false}};
  note_clocksource(trial_kernel, sys.kernel["clocksource"].value("current", nlohmann::json()));

  const auto order = shuffled_order(run_.instances().size(), plan.seed + static_cast<std::uint64_t>(trial));
  for (std::size_t pos = 0; pos < order.size() && !out.interrupted; ++pos) {
    const auto& pi = run_.instances()[order[pos]];
    Instance inst;
    inst.id = pi.id;
    inst.workload = pi.workload->name();
    inst.workload_version = pi.workload->version();
    inst.params = pi.params;
    inst.params_hash = canonical_hash(pi.params);
    for (const auto& m : pi.workload->metrics())
      inst.metric_info[m.name] = {m.unit, m.direction, m.headline, m.help};
    inst.run_order = static_cast<int>(pos);
    inst.settle = settle(settle_policy, static_cast<int>(run_.context().topology.cpus.size()), run_.paths());
    if (!inst.settle.value("settled", false) && settle_policy.max_wait_s > 0)
      progress_.message(
          fmt::format("{}: machine not quiet after {:.0f} s (load1 {}, {} running); starting anyway", pi.id,
                      settle_policy.max_wait_s, inst.settle.value("load1", -1.0),
                      inst.settle.value("procs_running", -1)));
    for (int r = 0; r < per_instance && !out.interrupted; ++r) {
      ProgressState ps{pi.id,
                       trial,
                       planned_trials,
                       r,
                       plan.repetitions,
                       monotonic_seconds() - start_s_,
                       done_ ? work_s_ / done_ * std::max(0, total - done_) : -1.0,
                       headline_of(*pi.workload)};
      // Read before the progress line is out: what the kernel does from here on is this repetition's.
      const auto kernel_before = kernel_state(run_.paths());
      progress_.started(ps);
      const bool is_diagnostic = r > plan.repetitions;
      RepetitionRequest req;
      req.workload = pi.workload.get();
      req.params = &pi.params;
      req.context = &run_.context();
      const int diagnostic_index = r - plan.repetitions - 1;
      const auto kind =
          is_diagnostic ? diagnostic_kind(plan.diagnostics, diagnostic_index) : DiagnosticKind::kNone;
      if (kind == DiagnosticKind::kAttribution)
        req.sources.push_back(std::make_unique<PerfSource>(
            plan.events.empty() ? default_events() : plan.events, *plan.diagnostics.attribution));
      else if (plan.counters)
        req.sources.push_back(std::make_unique<PerfSource>(plan.events, plan.counter_scope));
      req.sources.push_back(std::make_unique<SystemStatsSource>());
      req.sources.push_back(std::make_unique<SchedstatSource>(
          run_.paths(), is_diagnostic ? SchedstatsSwitch::kOnForRepetition : SchedstatsSwitch::kAsFound));
      if (kind == DiagnosticKind::kProfile)
        req.sources.push_back(std::make_unique<ProfileSource>(plan.diagnostics.profile_options));
      else if (kind == DiagnosticKind::kTrace)
        req.sources.push_back(std::make_unique<TraceSource>(run_.paths()));
      req.timeout_s = plan.timeout_s;
      req.isolation = plan.isolation;
      req.memory_limit_bytes = plan.memory_limit_bytes;
      if (run_.workload_user()) {
        req.why_root = pi.workload->needs_root(pi.params, run_.context());
        if (req.why_root.empty()) req.run_as = run_.workload_user();
      }
      // The run id keeps an experiment's two sides, which share trial indices, in leaves of their own.
      req.leaf_name = fmt::format("schedlab-{}-{}-t{}-{}-{}", ::getpid(), run_id_, trial, pi.id, r);
      req.interrupted = interrupted_;
      if (env) {
        req.cgroup2_parent = env->cgroup2_parent();
        req.extra_cgroups_v1 = env->cgroups_v1();
      }
      Repetition rep;
      if (!env_lost.empty()) {
        // Not run: under the built-in scheduler (an ejected sched_ext one) it would measure another side.
        rep.started_at = utc_timestamp();
        rep.status = status::kFailed;
        rep.reason = "not run: " + env_lost;
      } else {
        try {
          rep = run_repetition(req);
        } catch (
            const std::exception& e) {  // the harness itself failed (fork, pipe, cgroup): record it, go on
          rep.started_at = utc_timestamp();
          rep.status = status::kFailed;
          rep.reason = std::string("the runner could not run this repetition: ") + e.what();
        }
        if (env) {
          if (auto why = env->lost()) {
            rep.status = status::kFailed;
            rep.reason = "the runtime configuration did not hold: " + *why;
            env_lost = "the runtime configuration was lost in an earlier repetition: " + *why;
          }
        }
      }
      rep.kernel = kernel_state_change(kernel_before, kernel_state(run_.paths()));
      note_kernel_change(trial_kernel, rep.kernel);
      rep.warmup = r == 0;
      rep.index = r == 0 ? 0 : is_diagnostic ? diagnostic_index : r - 1;
      work_s_ += rep.duration_s;
      ++done_;
      progress_.finished(ps, rep);
      if (!rep.ok()) ++out.failed_repetitions;
      if (*interrupted_) out.interrupted = true;
      if (rep.warmup)
        inst.warmup = std::move(rep);
      else if (is_diagnostic)
        inst.diagnostics.push_back(std::move(rep));
      else
        inst.repetitions.push_back(std::move(rep));
    }
    if (diagnostic > 0) inst.instrumentation = instrumentation_record(plan.diagnostics, plan);
    bundle.instances.push_back(std::move(inst));
  }
  bundle.finished_at = utc_timestamp();
  // Between repetitions too (settling, writing): what the trial started with against what it ended with.
  trial_kernel["taint_at_end"] = taint_state(run_.paths());
  note_kernel_change(trial_kernel, kernel_state_change({{"taint", bundle.kernel["taint"]}},
                                                       {{"taint", trial_kernel["taint_at_end"]}}));
  bundle.kernel["during_trial"] = std::move(trial_kernel);
  if (env) {
    try {
      bundle.environment["runtime_switch"] = env->finish();
    } catch (const std::exception& e) {
      bundle.environment["runtime_switch"] = {{"restore_error", e.what()}};
      progress_.message(std::string("the runtime configuration was not restored: ") + e.what());
    }
  }
  if (annotate) annotate(bundle);
  write_bundle(path, bundle);
  progress_.message("wrote " + path.string());
  out.path = path;
  out.bundle = std::move(bundle);
  return out;
}

std::string new_run_id(std::uint64_t entropy) {
  return make_run_id(entropy);
}

RunOutcome execute(PreparedRun& run, Progress& progress) {
  // A closed output (`run ... 2>&1 | head`) stops the run as SIGINT does, and the bundle keeps what was
  // measured.
  InterruptGuard interrupt(BrokenPipe::kInterrupts);
  const auto& plan = run.plan();
  RunOutcome outcome;
  const std::string run_id = make_run_id(plan.seed);
  TrialRunner runner(run, progress, interrupt.flag(), run_id);
  for (int trial = 0; trial < plan.trials && !outcome.interrupted; ++trial) {
    // Named as people count, as `show` and the progress lines do ("trial 1/3"); the bundle's `trial`
    // field stays the 0-based index that the diff and the store order trials by.
    auto t = runner.run_trial(trial, plan.trials,
                              plan.out_dir / fmt::format("{}-trial{}.json", run_id, trial + 1), plan.settle);
    outcome.failed_repetitions += t.failed_repetitions;
    outcome.interrupted = t.interrupted;
    outcome.bundles.push_back(t.path);
  }
  progress.done();
  return outcome;
}

}  // namespace schedlab
