#include "workloads/wakeup/wakeup.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <exception>
#include <latch>
#include <memory>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/histogram.hpp"
#include "workloads/common/placement.hpp"
#include "workloads/common/task_sched.hpp"
#include "workloads/common/task_setup.hpp"
#include "workloads/wakeup/kernbench_load.hpp"

namespace schedlab {
namespace {

constexpr std::uint64_t kMinSamplesForP999 = 10000;

struct Options {
  int threads, nice, hogs, load_nice;
  long long period_ns, timer_slack_ns;
  double duration_s;
  Placement placement;
  SchedPolicy policy;
  bool hold_dma_latency;
  bool kernbench_load;
};

int parse_hogs(const std::string& load) {
  if (load == "none" || load == "kernbench") return 0;
  int n = 0;
  const char* b = load.data() + 5;
  const char* e = load.data() + load.size();
  auto [p, ec] = std::from_chars(b, e, n);
  if (load.rfind("hogs:", 0) != 0 || ec != std::errc() || p != e || n < 1 || n > 1024)
    throw InputError("wakeup.load: '" + load + "' must be none, kernbench, or hogs:N with N from 1 to 1024");
  return n;
}

Options options_from(const ParamValues& p) {
  return {p.at("threads").get<int>(),
          p.at("nice").get<int>(),
          parse_hogs(p.at("load").get<std::string>()),
          p.value("load_nice", 0),
          p.at("period_us").get<long long>() * 1000,
          p.at("timer_slack_ns").get<long long>(),
          p.at("duration_s").get<double>(),
          parse_placement(p.at("placement").get<std::string>()),
          parse_policy(p.at("policy").get<std::string>()),
          p.at("cpu_dma_latency").get<std::string>() == "hold",
          p.at("load").get<std::string>() == "kernbench"};
}

timespec from_ns(std::int64_t ns) {
  return {static_cast<time_t>(ns / 1000000000LL), static_cast<long>(ns % 1000000000LL)};
}

// On real hardware, leaving deep C-states dominates wakeup latency: a PM QoS request of 0 us,
// held while the file stays open, keeps the CPUs out of them (what cyclictest does too).
class DmaLatencyRequest {
 public:
  explicit DmaLatencyRequest(bool wanted) {
    if (!wanted) {
      state_ = {{"held", false}, {"reason", "not requested (wakeup.cpu_dma_latency=off)"}};
      return;
    }
    fd_ = ::open("/dev/cpu_dma_latency", O_RDWR | O_CLOEXEC);
    std::int32_t zero = 0;
    if (fd_ < 0 || ::write(fd_, &zero, sizeof zero) != sizeof zero) {
      state_ = {{"held", false}, {"reason", "/dev/cpu_dma_latency: " + errno_text(errno)}};
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      return;
    }
    state_ = {{"held", true}, {"value_us", 0}};
  }
  ~DmaLatencyRequest() {
    if (fd_ >= 0) ::close(fd_);
  }
  DmaLatencyRequest(const DmaLatencyRequest&) = delete;
  DmaLatencyRequest& operator=(const DmaLatencyRequest&) = delete;
  const nlohmann::json& state() const { return state_; }

 private:
  int fd_ = -1;
  nlohmann::json state_;
};

struct ThreadStats {
  LatencyHistogram histogram;
  std::uint64_t wakeups = 0;
  // The window's deadlines this thread never slept to: those that passed while it was late (an overrun),
  // and those before it began (a late start beside a load). wakeups + missed_periods = the window's periods.
  std::uint64_t missed_periods = 0;
  long timer_slack_ns = -1;  // as the kernel reports it after set-up
  int cpu = -1;
  std::optional<TaskSched> sched;  // /proc/thread-self/sched over the wake loop
};

// Sleeps to absolute deadlines like cyclictest's clock_nanosleep mode: after an overrun, the
// next deadline is the first one still in the future. Each thread's deadlines count from its own start
// (as cyclictest's threads, they are not all aligned on the window's).
void wake_loop(ThreadStats& s, std::int64_t period_ns, std::int64_t window_start_ns, std::int64_t end_ns) {
  const std::int64_t start = monotonic_ns();
  s.missed_periods =
      static_cast<std::uint64_t>(std::max<std::int64_t>(0, start - window_start_ns) / period_ns);
  std::int64_t next = start + period_ns;
  while (next <= end_ns) {
    const timespec deadline = from_ns(next);
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr)) == EINTR) {
    }
    if (rc != 0) throw SystemError("clock_nanosleep", rc);  // it returns the error, not errno
    const std::int64_t now = monotonic_ns();
    s.histogram.add(now - next);
    ++s.wakeups;
    next += period_ns;
    for (; next <= now; next += period_ns) ++s.missed_periods;
  }
}

}  // namespace

std::string WakeupWorkload::summary() const {
  return "T threads each waking every P us to an absolute deadline, recording how late they ran";
}

std::string WakeupWorkload::experiment() const {
  return "The wakeup-latency test that showed CFS's place_entity() letting worst-case wakeup latency reach "
         "60 ms "
         "under an X workload (12 ms after the fix).";
}

std::vector<ParamSpec> WakeupWorkload::params() const {
  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<ParamSpec> p;
  p.push_back({"threads",
               ParamKind::kInteger,
               cpus,
               "",
               "waking threads (default: one per online CPU)",
               1.0,
               1024.0,
               {}});
  p.push_back(
      {"period_us", ParamKind::kInteger, 10000, "us", "period of the absolute deadlines", 50.0, 1e7, {}});
  p.push_back(
      {"duration_s", ParamKind::kNumber, 10.0, "s", "how long each thread keeps waking", 0.01, 86400.0, {}});
  p.push_back(
      {"load",
       ParamKind::kChoice,
       "none",
       "",
       "background load: none, hogs:N CPU-bound spinners, or kernbench (its default tree rebuilt in a loop)",
       std::nullopt,
       std::nullopt,
       {"none", "hogs:N", "kernbench"}});
  ParamSpec load_nice{"load_nice",
                      ParamKind::kInteger,
                      0,
                      "",
                      "nice value of the background load (the hogs, or make and every compiler it starts); "
                      "the 2003 starvation test ran `nice make -j`: 10",
                      -20.0,
                      19.0,
                      {}};
  load_nice.omitted_at_default = true;
  p.push_back(load_nice);
  p.push_back(policy_param("the waking threads"));
  p.push_back(nice_param("the waking threads"));
  p.push_back({"timer_slack_ns",
               ParamKind::kInteger,
               1,
               "ns",
               "timer slack of the waking threads (a normal task gets 50 us by default; SCHED_FIFO has none)",
               1.0,
               1e9,
               {}});
  p.push_back(placement_param("where the waking threads run"));
  p.push_back({"cpu_dma_latency",
               ParamKind::kChoice,
               "hold",
               "",
               "hold a 0 us /dev/cpu_dma_latency request during the run (keeps CPUs out of deep C-states)",
               std::nullopt,
               std::nullopt,
               {"hold", "off"}});
  return p;
}

std::vector<MetricDesc> WakeupWorkload::metrics() const {
  const auto d = Direction::kLowerIsBetter;
  return {
      {"latency_p50_us", "us", d, true,
       "median lateness of a wakeup (bucket floor, 1 us resolution below 1 ms)"},
      {"latency_p90_us", "us", d, false, "90th percentile of lateness"},
      {"latency_p99_us", "us", d, true, "99th percentile of lateness"},
      {"latency_p999_us", "us", d, false, "99.9th percentile; only from >= 10,000 wakeups in the repetition"},
      {"latency_max_us", "us", d, false, "largest lateness seen (exact)"},
      {"wakeups", "count", Direction::kHigherIsBetter, false, "wakeups recorded by all threads"},
      {"operations", "count", Direction::kHigherIsBetter, false,
       "= wakeups: what per-operation counters (EVENT/op) and profiles divide by"},
  };
}

std::map<std::string, std::map<std::string, std::string>> WakeupWorkload::quick_instances() const {
  // wakeup-starvation: the 2003 experiment, a nice 19 task waking beside a niced make -j. One second:
  // a longer build keeps load1 above the runner's settle threshold for the next instances (2 s cost the
  // quick suite ~40 s of settle waits here).
  return {{"wakeup", {{"duration_s", "2"}}},
          {"wakeup-hogs", {{"duration_s", "2"}, {"load", "hogs:2"}}},
          {"wakeup-starvation",
           {{"duration_s", "1"}, {"nice", "19"}, {"load", "kernbench"}, {"load_nice", "10"}}}};
}

std::string WakeupWorkload::needs_root(const ParamValues& params, const WorkloadContext& ctx) const {
  // A latency measured with the CPUs free to enter deep C-states is another measurement, not a lesser one.
  if (params.at("cpu_dma_latency").get<std::string>() == "hold")
    return "cpu_dma_latency=hold: /dev/cpu_dma_latency is root's";
  return Workload::needs_root(params, ctx);
}

void WakeupWorkload::validate(const ParamValues& params, const WorkloadContext& ctx) const {
  auto o = options_from(params);
  if (o.placement == Placement::kSameThread)
    throw InputError("wakeup.placement: same-thread applies to tbench only");
  if (o.load_nice != 0 && o.hogs == 0 && !o.kernbench_load)
    throw InputError("wakeup.load_nice: there is no load to nice (wakeup.load is none)");
  assign_cpus(o.placement, o.threads, ctx.topology, ctx.allowed_cpus);
}

// The background load runs on every CPU: only an unloaded run is confined to its sleepers' CPUs.
std::vector<int> WakeupWorkload::cpus(const ParamValues& params, const WorkloadContext& ctx) const {
  const auto o = options_from(params);
  if (o.hogs > 0 || o.kernbench_load) return ctx.allowed_cpus;
  return cpus_in_use(assign_cpus(o.placement, o.threads, ctx.topology, ctx.allowed_cpus), ctx.allowed_cpus);
}

WorkloadResult WakeupWorkload::run(const ParamValues& params, const WorkloadContext& ctx) {
  const auto o = options_from(params);
  const auto cpus = assign_cpus(o.placement, o.threads, ctx.topology, ctx.allowed_cpus);
  // Page faults in the measuring loop would show up as latency.
  const bool locked = ::mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
  const int mlock_errno = locked ? 0 : errno;
  DmaLatencyRequest dma(o.hold_dma_latency);
  // Forks: before any thread exists.
  std::unique_ptr<KernbenchLoad> kernbench_load;
  if (o.kernbench_load) kernbench_load = std::make_unique<KernbenchLoad>(ctx, o.load_nice);

  std::vector<ThreadStats> stats(static_cast<std::size_t>(o.threads));
  std::vector<std::exception_ptr> errors(stats.size() + static_cast<std::size_t>(o.hogs));
  const SchedPolicy hog_policy;  // SCHED_OTHER at wakeup.load_nice
  std::atomic<bool> stop_hogs{false};
  std::latch ready(static_cast<std::ptrdiff_t>(stats.size() + static_cast<std::size_t>(o.hogs) + 1));
  std::atomic<std::int64_t> end_ns{0};
  const auto window_ns = static_cast<std::int64_t>(o.duration_s * 1e9);

  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    threads.emplace_back([&, i] {
      auto& s = stats[i];
      s.cpu = cpus[i];
      try {
        setup_current_thread({"schedlab-wake", cpus[i], &o.policy, o.nice});
        // After the policy: switching to SCHED_OTHER resets the slack to the default.
        if (::prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(o.timer_slack_ns)) != 0)
          throw SystemError("prctl(PR_SET_TIMERSLACK)", errno);
        s.timer_slack_ns = ::prctl(PR_GET_TIMERSLACK);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      ready.arrive_and_wait();
      if (errors[i]) return;
      try {
        const auto sched0 = read_own_task_sched();
        const std::int64_t end = end_ns.load();
        wake_loop(s, o.period_ns, end - window_ns, end);
        const auto sched1 = read_own_task_sched();
        if (sched0 && sched1) s.sched = task_sched_delta(*sched0, *sched1);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (int h = 0; h < o.hogs; ++h) {
    threads.emplace_back([&, h] {
      const std::size_t slot = stats.size() + static_cast<std::size_t>(h);
      try {
        setup_current_thread({"schedlab-hog", -1, &hog_policy, o.load_nice});
      } catch (...) {
        errors[slot] = std::current_exception();
      }
      ready.arrive_and_wait();
      volatile unsigned long spins = 0;
      while (!stop_hogs.load(std::memory_order_relaxed)) spins = spins + 1;
    });
  }
  end_ns = monotonic_ns() + window_ns;
  ready.arrive_and_wait();
  for (std::size_t i = 0; i < stats.size(); ++i) threads[i].join();
  stop_hogs = true;
  for (std::size_t i = stats.size(); i < threads.size(); ++i) threads[i].join();
  nlohmann::json load =
      kernbench_load ? kernbench_load->describe() : nlohmann::json(o.hogs ? "hogs" : "none");
  kernbench_load.reset();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);

  LatencyHistogram all;
  nlohmann::json per_thread = nlohmann::json::array();
  for (const auto& s : stats) {
    all.merge(s.histogram);
    per_thread.push_back({{"cpu", s.cpu},
                          {"wakeups", s.wakeups},
                          {"missed_periods", s.missed_periods},
                          {"timer_slack_ns", s.timer_slack_ns},
                          {"p50_us", s.histogram.percentile_us(0.5)},
                          {"max_us", static_cast<double>(s.histogram.max_ns()) / 1000.0}});
    if (s.sched) per_thread.back()["sched"] = *s.sched;
  }
  if (all.count() == 0) throw Error("no wakeup recorded: the duration is shorter than one period");

  WorkloadResult result;
  auto& m = result.metrics;
  m["latency_p50_us"] = {all.percentile_us(0.50), "us"};
  m["latency_p90_us"] = {all.percentile_us(0.90), "us"};
  m["latency_p99_us"] = {all.percentile_us(0.99), "us"};
  m["latency_max_us"] = {static_cast<double>(all.max_ns()) / 1000.0, "us"};
  m["wakeups"] = {static_cast<double>(all.count()), "count"};
  m["operations"] = m["wakeups"];
  auto& d = result.details;
  if (all.count() >= kMinSamplesForP999) {
    m["latency_p999_us"] = {all.percentile_us(0.999), "us"};
  } else {
    d["latency_p999_us_absent"] = std::to_string(all.count()) + " wakeups < " +
                                  std::to_string(kMinSamplesForP999) + ": p99.9 would be the maximum";
  }
  d["histogram"] = all.to_json();
  d["threads"] = per_thread;
  d["cpu_dma_latency"] = dma.state();
  d["mlockall"] = locked ? nlohmann::json(true) : nlohmann::json(errno_text(mlock_errno));
  d["hogs"] = o.hogs;
  d["load"] = load;
  d["load_nice"] = o.load_nice;
  return result;
}

}  // namespace schedlab
