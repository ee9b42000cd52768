#include "workloads/fairness/fairness.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <exception>
#include <fstream>
#include <latch>
#include <optional>
#include <sstream>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "workloads/common/placement.hpp"
#include "workloads/common/task_sched.hpp"
#include "workloads/common/task_setup.hpp"
#include "workloads/fairness/spinner.hpp"
#include "workloads/fairness/weights.hpp"

namespace schedlab {
namespace {

struct FairnessOptions {
  std::vector<int> nices;
  double duration_s, warmup_s;
  Placement placement;
  SchedPolicy policy;
};

FairnessOptions fairness_options(const ParamValues& p) {
  return {fairness::parse_nices(p.at("nices").get<std::string>(), "fairness.nices"),
          p.at("duration_s").get<double>(), p.at("warmup_s").get<double>(),
          parse_placement(p.at("placement").get<std::string>()),
          parse_policy(p.at("policy").get<std::string>())};
}

std::vector<int> task_cpus(const FairnessOptions& o, const WorkloadContext& ctx) {
  return assign_cpus(o.placement, static_cast<int>(o.nices.size()), ctx.topology, ctx.allowed_cpus);
}

bool has_cap_sys_nice() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("CapEff:", 0) == 0) {
      constexpr unsigned long long kCapSysNice = 1ULL << 23;
      return (std::stoull(line.substr(7), nullptr, 16) & kCapSysNice) != 0;
    }
  return false;
}

// Lowering a nice value below the process's own needs CAP_SYS_NICE or an RLIMIT_NICE that allows it;
// found out here, not as a failed setpriority() in a task thread after the run started.
void check_nice_allowed(int nice) {
  errno = 0;
  const int current = ::getpriority(PRIO_PROCESS, 0);
  if (errno != 0 || nice >= current) return;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NICE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
      nice >= 20 - static_cast<int>(lim.rlim_cur))
    return;
  if (lim.rlim_cur == RLIM_INFINITY || has_cap_sys_nice()) return;
  throw InputError("fairness.nices: nice " + std::to_string(nice) + " is below this process's nice " +
                   std::to_string(current) + ", which needs CAP_SYS_NICE or a higher RLIMIT_NICE");
}

double ns_of(clockid_t clock) {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) throw SystemError("clock_gettime(a task's CPU clock)", errno);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

void sleep_until_ns(std::int64_t t) {
  timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

struct Task {
  fairness::SpinStats spin;
  long involuntary = 0;
  std::optional<TaskSched> sched;
};

}  // namespace

std::string FairnessWorkload::summary() const {
  return "N CPU-bound threads with given nice values on one CPU: each one's share of CPU time against "
         "its weight's share, Jain's index, and the lightest task's longest time off the CPU";
}

std::string FairnessWorkload::experiment() const {
  return "Fairness between tasks of different weight, as CFS and EEVDF patches are judged: CPU-bound "
         "tasks at nice 0 and nice 5 on one CPU split it 1024:335 by the kernel's nice-to-weight table, "
         "and the niced task is never starved for long (the 2003 complaint: a niced task waited >7 s).";
}

std::vector<ParamSpec> FairnessWorkload::params() const {
  std::vector<ParamSpec> p;
  p.push_back({"nices",
               ParamKind::kText,
               "0,5",
               "",
               "one CPU-bound task per entry, with that nice value (comma list, each -20..19, 2 to 64 "
               "entries)",
               std::nullopt,
               std::nullopt,
               {}});
  p.push_back({"duration_s", ParamKind::kNumber, 5.0, "s", "the measuring window", 0.05, 3600.0, {}});
  p.push_back({"warmup_s",
               ParamKind::kNumber,
               0.2,
               "s",
               "spinning before the window opens, so that it sees the steady state and not the tasks' "
               "start",
               0.0,
               60.0,
               {}});
  auto placement = placement_param(
      "where the tasks run: same-cpu (all on one CPU, where weights decide everything), spread (dealt "
      "round-robin over the allowed CPUs) or another pinned level; weights are compared among the tasks "
      "of each CPU");
  placement.default_value = "same-cpu";
  p.push_back(placement);
  p.push_back(policy_param("the tasks: other or batch (both weigh by nice)"));
  return p;
}

std::vector<MetricDesc> FairnessWorkload::metrics() const {
  return {
      {"share_error_pct", "pct", Direction::kLowerIsBetter, true,
       "largest |share / entitled share - 1| x 100 over the tasks (share: its CPU time / its CPU's tasks' "
       "CPU "
       "time in the window; entitled: its nice weight / the weights on its CPU)"},
      {"jain_index", "pct", Direction::kHigherIsBetter, true,
       "Jain's fairness index over share / entitled share, as a percentage: 100 = every task got its "
       "weight's "
       "share, 100/N = one got all"},
      {"lightest_max_gap_ms", "ms", Direction::kLowerIsBetter, false,
       "the longest interval the lightest-weight task was kept off the CPU in the window (two consecutive "
       "clock reads of its spin loop >= 20 us apart; 0: never)"},
      {"lightest_p99_gap_ms", "ms", Direction::kLowerIsBetter, false,
       "99th percentile of the lightest-weight task's off-CPU intervals (>= 20 us) in the window"},
      {"tasks_cpu_pct", "pct", Direction::kHigherIsBetter, false,
       "the tasks' CPU time / (window x CPUs they were placed on) x 100: below 100, something else ran "
       "there"},
      {"operations", "count", Direction::kHigherIsBetter, false,
       "clock reads of all tasks' spin loops over the whole run: what per-operation counters divide by"},
  };
}

std::map<std::string, std::map<std::string, std::string>> FairnessWorkload::quick_instances() const {
  return {{"fairness", {{"nices", "0,5"}, {"duration_s", "1"}}}};
}

std::string FairnessWorkload::needs_root(const ParamValues& params, const WorkloadContext& ctx) const {
  const auto text = params.at("nices").get<std::string>();
  for (const int nice : fairness::parse_nices(text, "fairness.nices"))
    if (nice < 0) return "nices=" + text + ": a negative nice value needs CAP_SYS_NICE";
  return Workload::needs_root(params, ctx);
}

void FairnessWorkload::validate(const ParamValues& params, const WorkloadContext& ctx) const {
  const auto o = fairness_options(params);
  if (o.placement == Placement::kSameThread || o.placement == Placement::kUnpinned)
    throw InputError("fairness.placement: " + to_string(o.placement) +
                     " does not say which tasks share a CPU, so their entitled shares are undefined; use "
                     "same-cpu, spread or another pinned level");
  if (o.policy.policy != SCHED_OTHER && o.policy.policy != SCHED_BATCH)
    throw InputError("fairness.policy: " + params.at("policy").get<std::string>() +
                     " does not weigh tasks by nice (idle gives all the same weight, fifo none); use "
                     "other or batch");
  for (int n : o.nices) check_nice_allowed(n);
  task_cpus(o, ctx);
}

std::vector<int> FairnessWorkload::cpus(const ParamValues& params, const WorkloadContext& ctx) const {
  return cpus_in_use(task_cpus(fairness_options(params), ctx), ctx.allowed_cpus);
}

WorkloadResult FairnessWorkload::run(const ParamValues& params, const WorkloadContext& ctx) {
  const auto o = fairness_options(params);
  const auto cpus = task_cpus(o, ctx);
  const std::size_t n = o.nices.size();

  std::vector<Task> tasks(n);
  std::vector<std::exception_ptr> errors(n);
  fairness::Window window;
  std::latch ready(static_cast<std::ptrdiff_t>(n + 1));
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        setup_current_thread({"schedlab-fair", cpus[i], &o.policy, o.nices[i]});
      } catch (...) {
        errors[i] = std::current_exception();
      }
      ready.arrive_and_wait();
      if (errors[i]) return;
      rusage r0{}, r1{};
      getrusage(RUSAGE_THREAD, &r0);
      const auto sched0 = read_own_task_sched();
      fairness::spin_until_stopped(window, tasks[i].spin);
      getrusage(RUSAGE_THREAD, &r1);
      const auto sched1 = read_own_task_sched();
      tasks[i].involuntary = r1.ru_nivcsw - r0.ru_nivcsw;
      if (sched0 && sched1) tasks[i].sched = task_sched_delta(*sched0, *sched1);
    });

  // Every task's CPU clock is read from here at the same instant at both edges of the window; a task
  // cannot read its own clock at an instant it is not running.
  std::vector<clockid_t> clocks(n);
  std::vector<double> cpu0(n), cpu1(n);
  std::int64_t start = 0, end = 0;
  std::exception_ptr sampling_error;
  ready.arrive_and_wait();
  try {
    for (std::size_t i = 0; i < n; ++i)
      if (int rc = ::pthread_getcpuclockid(threads[i].native_handle(), &clocks[i]); rc != 0)
        throw SystemError("pthread_getcpuclockid(task " + std::to_string(i) + ")", rc);
    if (std::none_of(errors.begin(), errors.end(), [](const auto& e) { return e != nullptr; })) {
      sleep_until_ns(monotonic_ns() + static_cast<std::int64_t>(o.warmup_s * 1e9));
      start = monotonic_ns();
      for (std::size_t i = 0; i < n; ++i) cpu0[i] = ns_of(clocks[i]);
      window.start_ns.store(start, std::memory_order_release);
      sleep_until_ns(start + static_cast<std::int64_t>(o.duration_s * 1e9));
      end = monotonic_ns();
      for (std::size_t i = 0; i < n; ++i) cpu1[i] = ns_of(clocks[i]);
      window.end_ns.store(end, std::memory_order_release);
    }
  } catch (...) {
    sampling_error = std::current_exception();
  }
  window.stop = true;
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  if (sampling_error) std::rethrow_exception(sampling_error);

  std::vector<double> used(n);
  for (std::size_t i = 0; i < n; ++i) used[i] = cpu1[i] - cpu0[i];
  const auto shares = fairness::shares(cpus, o.nices, used);
  const int lightest = std::min_element(shares.begin(), shares.end(), [](const auto& a, const auto& b) {
                         return a.weight < b.weight;
                       })->weight;

  WorkloadResult result;
  LatencyHistogram lightest_gaps;
  std::int64_t lightest_longest = 0;
  double total_cpu = 0;
  std::uint64_t iterations = 0;
  nlohmann::json per_task = nlohmann::json::array();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& s = shares[i];
    const auto& spin = tasks[i].spin;
    total_cpu += s.cpu_ns;
    iterations += spin.iterations;
    if (s.weight == lightest) {
      lightest_gaps.merge(spin.off_cpu);
      lightest_longest = std::max(lightest_longest, spin.longest_ns);
    }
    per_task.push_back({{"cpu", s.cpu},
                        {"nice", s.nice},
                        {"weight", s.weight},
                        {"cpu_ms", s.cpu_ns * 1e-6},
                        {"share", s.share},
                        {"entitled_share", s.entitled},
                        {"share_error_pct", s.error() * 100},
                        {"off_cpu_intervals", spin.off_cpu.count()},
                        {"max_gap_ms", static_cast<double>(spin.longest_ns) * 1e-6},
                        {"p99_gap_ms", spin.off_cpu.percentile_us(0.99) * 1e-3},
                        {"involuntary_switches", tasks[i].involuntary}});
    if (tasks[i].sched) per_task.back()["sched"] = *tasks[i].sched;
  }
  const double window_ns = static_cast<double>(end - start);
  const auto cpus_used = cpus_in_use(cpus, ctx.allowed_cpus);
  auto& m = result.metrics;
  m["share_error_pct"] = {fairness::max_share_error(shares) * 100, "pct"};
  m["jain_index"] = {fairness::jain_index(shares) * 100, "pct"};
  m["lightest_max_gap_ms"] = {static_cast<double>(lightest_longest) * 1e-6, "ms"};
  m["lightest_p99_gap_ms"] = {lightest_gaps.percentile_us(0.99) * 1e-3, "ms"};
  m["tasks_cpu_pct"] = {total_cpu / (window_ns * static_cast<double>(cpus_used.size())) * 100, "pct"};
  m["operations"] = {static_cast<double>(iterations), "count"};
  result.details = {{"tasks", per_task},
                    {"window_s", window_ns * 1e-9},
                    {"lightest_weight", lightest},
                    {"lightest_off_cpu", lightest_gaps.to_json()},
                    {"off_cpu_threshold_us", fairness::kOffCpuNs / 1000}};
  return result;
}

}  // namespace schedlab
