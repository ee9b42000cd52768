#include "workloads/yield/yield.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <latch>
#include <mutex>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "workloads/common/placement.hpp"
#include "workloads/common/task_sched.hpp"
#include "workloads/common/task_setup.hpp"

namespace schedlab {
namespace {

struct YieldOptions {
  int threads, competitors, nice;
  long long yields;
  double duration_s;
  Placement placement;
  SchedPolicy policy;
  double spin_ns;
};

YieldOptions yield_options(const ParamValues& p) {
  return {p.at("threads").get<int>(),
          p.at("competitors").get<int>(),
          p.at("nice").get<int>(),
          p.at("yields").get<long long>(),
          p.at("duration_s").get<double>(),
          parse_placement(p.at("placement").get<std::string>()),
          parse_policy(p.at("policy").get<std::string>()),
          p.value("spin_ns", 0.0)};
}

// The injected work: a dependent multiply-add chain, the same instructions every time (a fixed amount
// of work, not a wait on the clock, so that it costs what work costs on the kernel under test). The
// empty asm keeps the compiler from folding or vectorising the chain.
std::uint64_t spin(std::uint64_t loops, std::uint64_t x) {
  for (std::uint64_t i = 0; i < loops; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));
  }
#if defined(__x86_64__) || defined(__i386__)
  // Without it the chain retires in the shadow of the next system call: out-of-order execution hid
  // 60% of a 17.9 ns spin here (a +1.2% slowdown measured for +3% asked). lfence waits for it to finish.
  asm volatile("lfence" ::: "memory");
#endif
  return x;
}

// The cost of a spin call: a fixed part (the call and its fence) and nanoseconds per loop, each the fastest
// of several timed runs (the least disturbed), so that spin_ns converts to a loop count that varies
// little from one repetition to the next.
struct SpinCost {
  double fixed_ns = 0, ns_per_loop = 0;
};

SpinCost spin_cost() {
  constexpr std::uint64_t kLoops = 200000, kCalls = 20000;
  SpinCost c;
  std::uint64_t sink = 1;
  for (int i = 0; i < 9; ++i) {
    auto t0 = monotonic_ns();
    for (std::uint64_t k = 0; k < kCalls; ++k) sink = spin(0, sink);
    const double fixed = static_cast<double>(monotonic_ns() - t0) / static_cast<double>(kCalls);
    t0 = monotonic_ns();
    sink = spin(kLoops, sink);
    const double per_loop = static_cast<double>(monotonic_ns() - t0) / static_cast<double>(kLoops);
    if (i == 0 || fixed < c.fixed_ns) c.fixed_ns = fixed;
    if (i == 0 || per_loop < c.ns_per_loop) c.ns_per_loop = per_loop;
  }
  asm volatile("" : : "r"(sink));
  return c;
}

struct YielderStats {
  int cpu = -1;
  long long yields = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  long voluntary = 0, involuntary = 0;
  long long migrations = -1;
  std::optional<TaskSched> sched;  // /proc/thread-self/sched over the loop
};

}  // namespace

std::string YieldWorkload::summary() const {
  return "T threads each doing Y raw sched_yield() calls, alone or against K spinning competitors";
}

std::string YieldWorkload::experiment() const {
  return "The million-yield loop: on a 2-way SMP box a yield-heavy task spent 3x more cycles in the "
         "scheduler than running, because every yield recalculated priorities.";
}

std::vector<ParamSpec> YieldWorkload::params() const {
  std::vector<ParamSpec> p;
  p.push_back({"threads", ParamKind::kInteger, 1, "", "yielding threads", 1.0, 1024.0, {}});
  p.push_back(
      {"yields", ParamKind::kInteger, 1000000, "", "sched_yield() calls per thread", 1.0, std::nullopt, {}});
  p.push_back({"duration_s",
               ParamKind::kNumber,
               60.0,
               "s",
               "time cap: the threads stop here and metrics cover the yields done (a yield against a "
               "competitor on its CPU can cost a whole tick)",
               0.001,
               86400.0,
               {}});
  p.push_back(
      {"competitors", ParamKind::kInteger, 0, "", "CPU-spinning competitor threads", 0.0, 1024.0, {}});
  p.push_back(
      placement_param("where the threads run: yielders first, then competitors, alternating between an "
                      "anchor CPU and its partner "
                      "at the level named"));
  p.push_back(policy_param("the yielding threads"));
  p.push_back(nice_param("the yielding threads"));
  ParamSpec spin{"spin_ns",
                 ParamKind::kNumber,
                 0.0,
                 "ns",
                 "injected work: a fixed busy loop before every yield, calibrated at the start of each "
                 "repetition to this many ns (a known slowdown for testing experiments; 0: none)",
                 0.0,
                 1e9,
                 {}};
  spin.omitted_at_default = true;
  p.push_back(spin);
  return p;
}

std::vector<MetricDesc> YieldWorkload::metrics() const {
  return {
      {"ns_per_yield", "ns", Direction::kLowerIsBetter, true,
       "mean wall time of one sched_yield() as seen by a yielding thread (thread time / yields done)"},
      {"elapsed_s", "s", Direction::kLowerIsBetter, false, "first yield started to last yield finished"},
      {"yields", "count", Direction::kHigherIsBetter, false,
       "sched_yield() calls done by all yielding threads"},
      {"operations", "count", Direction::kHigherIsBetter, false,
       "= yields: what per-operation counters (EVENT/op) and profiles divide by"},
      {"voluntary_switches", "count", Direction::kLowerIsBetter, false,
       "voluntary context switches of the yielding threads (getrusage RUSAGE_THREAD)"},
      {"involuntary_switches", "count", Direction::kLowerIsBetter, false,
       "involuntary context switches of the yielding threads; a yield that switches counts here"},
      {"migrations", "count", Direction::kLowerIsBetter, false,
       "CPU migrations of the yielding threads (se.nr_migrations; absent without /proc/<tid>/sched)"},
  };
}

std::map<std::string, std::map<std::string, std::string>> YieldWorkload::quick_instances() const {
  return {{"yield", {}},
          {"yield-contended", {{"competitors", "1"}, {"placement", "same-cpu"}, {"duration_s", "2"}}}};
}

void YieldWorkload::validate(const ParamValues& params, const WorkloadContext& ctx) const {
  auto o = yield_options(params);
  if (o.placement == Placement::kSameThread)
    throw InputError("yield.placement: same-thread applies to tbench only");
  assign_cpus(o.placement, o.threads + o.competitors, ctx.topology, ctx.allowed_cpus);
}

std::vector<int> YieldWorkload::cpus(const ParamValues& params, const WorkloadContext& ctx) const {
  const auto o = yield_options(params);
  return cpus_in_use(assign_cpus(o.placement, o.threads + o.competitors, ctx.topology, ctx.allowed_cpus),
                     ctx.allowed_cpus);
}

WorkloadResult YieldWorkload::run(const ParamValues& params, const WorkloadContext& ctx) {
  const auto o = yield_options(params);
  const auto cpus = assign_cpus(o.placement, o.threads + o.competitors, ctx.topology, ctx.allowed_cpus);
  const auto n_yielders = static_cast<std::size_t>(o.threads);

  std::vector<YielderStats> stats(n_yielders);
  std::vector<std::exception_ptr> errors(cpus.size());
  std::atomic<bool> stop_yielding{false}, stop_spinning{false};
  std::latch ready(static_cast<std::ptrdiff_t>(cpus.size() + 1));
  std::mutex mu;
  std::condition_variable done_cv;
  std::size_t done = 0;
  const SpinCost cost = o.spin_ns > 0 ? spin_cost() : SpinCost{};
  const auto spin_loops = o.spin_ns > 0 ? static_cast<std::uint64_t>(std::llround(
                                              std::max(0.0, o.spin_ns - cost.fixed_ns) / cost.ns_per_loop))
                                        : std::uint64_t{0};

  auto setup = [&](std::size_t i, const char* comm, bool yielder) {
    try {
      setup_current_thread({comm, cpus[i], yielder ? &o.policy : nullptr, o.nice});
    } catch (...) {
      errors[i] = std::current_exception();
    }
    ready.arrive_and_wait();
    return errors[i] == nullptr;
  };

  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n_yielders; ++i) {
    threads.emplace_back([&, i] {
      auto& s = stats[i];
      s.cpu = cpus[i];
      if (setup(i, "schedlab-yield", true)) {
        rusage r0{}, r1{};
        getrusage(RUSAGE_THREAD, &r0);
        const auto sched0 = read_own_task_sched();
        const long long n = o.yields;
        s.start_ns = monotonic_ns();
        long long k = 0;
        std::uint64_t sink = 1;
        for (; k < n && !stop_yielding.load(std::memory_order_relaxed); ++k) {
          if (o.spin_ns > 0) sink = spin(spin_loops, sink);
          syscall(SYS_sched_yield);
        }
        s.end_ns = monotonic_ns();
        asm volatile("" : : "r"(sink));
        getrusage(RUSAGE_THREAD, &r1);
        const auto sched1 = read_own_task_sched();
        s.yields = k;
        s.voluntary = r1.ru_nvcsw - r0.ru_nvcsw;
        s.involuntary = r1.ru_nivcsw - r0.ru_nivcsw;
        if (sched0 && sched1) {
          s.sched = task_sched_delta(*sched0, *sched1);
          if (auto it = s.sched->find("se.nr_migrations"); it != s.sched->end())
            s.migrations = static_cast<long long>(it->second);
        }
      }
      std::lock_guard lock(mu);
      ++done;
      done_cv.notify_one();
    });
  }
  for (std::size_t i = n_yielders; i < cpus.size(); ++i) {
    threads.emplace_back([&, i] {
      if (!setup(i, "schedlab-spin", false)) return;
      volatile unsigned long spins = 0;
      while (!stop_spinning.load(std::memory_order_relaxed)) spins = spins + 1;
    });
  }

  ready.arrive_and_wait();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.duration_s);
  bool capped = false;
  {
    std::unique_lock lock(mu);
    if (!done_cv.wait_until(lock, deadline, [&] { return done == n_yielders; })) {
      capped = true;
      stop_yielding = true;
      done_cv.wait(lock, [&] { return done == n_yielders; });
    }
  }
  stop_spinning = true;
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);

  WorkloadResult result;
  long long yields = 0, vol = 0, invol = 0, migrations = 0;
  std::int64_t thread_ns = 0, first = INT64_MAX, last = 0;
  bool have_migrations = true;
  nlohmann::json per_thread = nlohmann::json::array();
  for (const auto& s : stats) {
    yields += s.yields;
    vol += s.voluntary;
    invol += s.involuntary;
    thread_ns += s.end_ns - s.start_ns;
    first = std::min(first, s.start_ns);
    last = std::max(last, s.end_ns);
    if (s.migrations < 0) have_migrations = false;
    migrations += std::max(0LL, s.migrations);
    per_thread.push_back({{"cpu", s.cpu},
                          {"yields", s.yields},
                          {"ns", s.end_ns - s.start_ns},
                          {"voluntary_switches", s.voluntary},
                          {"involuntary_switches", s.involuntary},
                          {"migrations", s.migrations}});
    if (s.sched) per_thread.back()["sched"] = *s.sched;
  }
  if (yields == 0)
    throw Error("no yield completed before the time cap of " + std::to_string(o.duration_s) + " s");
  auto& m = result.metrics;
  m["ns_per_yield"] = {static_cast<double>(thread_ns) / static_cast<double>(yields), "ns"};
  m["elapsed_s"] = {static_cast<double>(last - first) * 1e-9, "s"};
  m["yields"] = {static_cast<double>(yields), "count"};
  m["operations"] = m["yields"];
  m["voluntary_switches"] = {static_cast<double>(vol), "count"};
  m["involuntary_switches"] = {static_cast<double>(invol), "count"};
  if (have_migrations) m["migrations"] = {static_cast<double>(migrations), "count"};
  nlohmann::json cpu_list = nlohmann::json::array();
  for (int c : cpus) cpu_list.push_back(c);
  result.details = {{"threads", per_thread}, {"capped_by_duration", capped}, {"cpus", cpu_list}};
  if (o.spin_ns > 0)
    result.details["spin"] = {{"ns", o.spin_ns},
                              {"loops", spin_loops},
                              {"ns_per_loop", cost.ns_per_loop},
                              {"fixed_ns", cost.fixed_ns}};
  return result;
}

}  // namespace schedlab
