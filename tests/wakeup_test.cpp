// Short real runs of the wakeup workload through the schedlab binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

using testing::files_in;
using testing::schedlab;
using testing::TempDir;

Repetition run_wakeup(const TempDir& dir, const std::string& params) {
  auto o = schedlab("run --workload wakeup --repetitions 1 --settle-timeout 0 --out " + dir.path().string() +
                    " " + params);
  EXPECT_EQ(o.code, 0) << o.out;
  auto files = files_in(dir.path());
  if (files.size() != 1) throw std::runtime_error("no bundle: " + o.out);
  auto b = load_bundle(files[0]);
  auto rep = b.instances.at(0).repetitions.at(0);
  EXPECT_EQ(rep.status, "ok") << rep.reason;
  return rep;
}

double metric(const Repetition& r, const char* name) {
  return r.metrics.at(name).value;
}

void expect_consistent(const Repetition& r, int threads, double duration_s, double period_us) {
  const auto& hist = r.details.at("histogram");
  std::uint64_t in_buckets = hist.at("overflow").get<std::uint64_t>();
  for (const auto& b : hist.at("buckets")) in_buckets += b.at(2).get<std::uint64_t>();
  std::uint64_t per_thread = 0;
  for (const auto& t : r.details.at("threads")) per_thread += t.at("wakeups").get<std::uint64_t>();
  // The histogram holds every wakeup, no more.
  EXPECT_EQ(in_buckets, hist.at("count").get<std::uint64_t>());
  EXPECT_EQ(per_thread, hist.at("count").get<std::uint64_t>());
  EXPECT_EQ(metric(r, "wakeups"), static_cast<double>(per_thread));
  // Each thread wakes once per period, fewer only after overruns: every period's deadline is either a
  // wakeup or a period it missed while late. How many it missed is the machine's (a loaded VM overran
  // 17% of them), so the count is held to the record, not to a floor.
  const double expected = threads * duration_s * 1e6 / period_us;
  std::uint64_t missed = 0;
  for (const auto& t : r.details.at("threads")) missed += t.at("missed_periods").get<std::uint64_t>();
  EXPECT_LE(metric(r, "wakeups"), expected + threads);
  EXPECT_NEAR(metric(r, "wakeups") + static_cast<double>(missed), expected, threads + 0.01 * expected)
      << missed << " periods missed";
  EXPECT_GT(metric(r, "wakeups"), 0);
  EXPECT_LE(metric(r, "latency_p50_us"), metric(r, "latency_p90_us"));
  EXPECT_LE(metric(r, "latency_p90_us"), metric(r, "latency_p99_us"));
  EXPECT_LE(metric(r, "latency_p99_us"), metric(r, "latency_max_us"));
  EXPECT_GE(metric(r, "latency_p50_us"), 0);
}

TEST(Wakeup, IdleRunHoldsEveryWakeupAndNoP999FromFewSamples) {
  TempDir dir;
  auto r =
      run_wakeup(dir, "--param wakeup.threads=2 --param wakeup.period_us=1000 --param wakeup.duration_s=1");
  expect_consistent(r, 2, 1, 1000);
  EXPECT_FALSE(r.metrics.contains("latency_p999_us"));
  EXPECT_NE(r.details.at("latency_p999_us_absent").get<std::string>().find("< 10000"), std::string::npos);
  for (const auto& t : r.details.at("threads")) EXPECT_EQ(t.at("timer_slack_ns"), 1);  // the default, set
  EXPECT_EQ(r.details.at("mlockall"), true);
  EXPECT_TRUE(r.details.at("cpu_dma_latency").contains("held"));
}

TEST(Wakeup, ManySamplesUnderHogsGiveP999AndLeaveNoHog) {
  TempDir dir;
  auto r = run_wakeup(dir,
                      "--param wakeup.threads=2 --param wakeup.period_us=200 --param wakeup.duration_s=3 "
                      "--param wakeup.load=hogs:2 --param wakeup.timer_slack_ns=50000");
  expect_consistent(r, 2, 3, 200);
  ASSERT_TRUE(r.metrics.contains("latency_p999_us"));
  EXPECT_LE(metric(r, "latency_p99_us"), metric(r, "latency_p999_us"));
  EXPECT_LE(metric(r, "latency_p999_us"), metric(r, "latency_max_us"));
  EXPECT_EQ(r.details.at("hogs"), 2);
  for (const auto& t : r.details.at("threads")) EXPECT_EQ(t.at("timer_slack_ns"), 50000);
  EXPECT_EQ(testing::threads_named("schedlab-"), std::vector<std::string>{});
}

TEST(Wakeup, KernbenchLoadRunsBesideAndIsGoneAfter) {
  TempDir dir;
  TempDir cache;
  auto r = run_wakeup(
      dir, "--cache-dir " + cache.path().string() +
               " --param wakeup.threads=1 --param wakeup.period_us=1000 --param wakeup.duration_s=2 "
               "--param wakeup.load=kernbench");
  expect_consistent(r, 1, 2, 1000);
  EXPECT_EQ(r.details.at("load").at("kind"), "kernbench");
  // The builds ran in the repetition: the collector saw the compilers' page faults and CPU time.
  EXPECT_GT(r.counters.at("perf::TASK-CLOCK").value, 0.5e9);
  // Nothing of the loop survives the repetition: no make or compiler working in the cached tree.
  const std::string tree = r.details.at("load").at("tree").get<std::string>();
  std::error_code ec;
  for (const pid_t pid : testing::descendant_pids()) {
    const std::filesystem::path proc = "/proc/" + std::to_string(pid);
    auto cmdline = testing::slurp(proc / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    auto cwd = std::filesystem::read_symlink(proc / "cwd", ec);
    EXPECT_EQ(cmdline.find(tree), std::string::npos) << proc << ": " << cmdline;
    EXPECT_NE(cwd.string().rfind(tree, 0), 0u) << proc << " works in " << cwd;
  }
}

// The loop's make and compilers are reaped by the workload itself when it stops them: the runner finds
// none left over in any repetition (before they were, it counted the dying compilers as strays in most).
TEST(Wakeup, KernbenchLoadLeavesNoStrayProcessForTheRunner) {
  TempDir dir;
  TempDir cache;
  auto o =
      schedlab("run --workload wakeup --repetitions 3 --settle-timeout 0 --no-counters --cache-dir " +
               cache.path().string() + " --param wakeup.duration_s=1 --param wakeup.load=kernbench --out " +
               dir.path().string());
  ASSERT_EQ(o.code, 0) << o.out;
  const auto files = files_in(dir.path());
  ASSERT_EQ(files.size(), 1u) << o.out;
  const auto b = load_bundle(files[0]);
  ASSERT_EQ(b.instances.at(0).repetitions.size(), 3u);
  for (const auto& rep : b.instances.at(0).repetitions) {
    EXPECT_EQ(rep.status, "ok") << rep.reason;
    EXPECT_EQ(rep.isolation.value("stray_processes", -1), 0) << rep.isolation.dump();
  }
}

// The nice value field of /proc/.../stat (the 19th), or nullopt when the task is gone.
std::optional<int> nice_of(const std::filesystem::path& stat_file) {
  const auto stat = testing::slurp(stat_file);
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 19; ++i)
    if (!(rest >> field)) return std::nullopt;
  return std::stoi(field);
}

// The 2003 starvation experiment as a wakeup configuration: a nice 19 task waking beside `nice make -j`.
// Watched from outside while it runs: every process of the load (working in the cache's tree) is at nice
// 10 and every waking thread at nice 19.
TEST(Wakeup, StarvationRunsANice19WakerBesideANicedMake) {
  TempDir dir;
  TempDir cache;
  std::atomic<bool> running{true};
  std::map<pid_t, int> load_nice;
  std::map<std::string, int> waker_nice;
  std::thread watcher([&] {
    std::error_code ec;
    while (running) {
      for (const pid_t pid : testing::descendant_pids()) {
        const std::filesystem::path proc = "/proc/" + std::to_string(pid);
        const auto cwd = std::filesystem::read_symlink(proc / "cwd", ec).string();
        if (!ec && cwd.rfind(cache.path().string(), 0) == 0)
          if (auto n = nice_of(proc / "stat")) load_nice[pid] = *n;
        for (const auto& task : std::filesystem::directory_iterator(proc / "task", ec))
          if (testing::slurp(task.path() / "comm").rfind("schedlab-wake", 0) == 0)
            if (auto n = nice_of(task.path() / "stat")) waker_nice[task.path().string()] = *n;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  auto r = run_wakeup(dir, "--cache-dir " + cache.path().string() +
                               " --param wakeup.threads=1 --param wakeup.period_us=1000 "
                               "--param wakeup.duration_s=2 --param wakeup.nice=19 "
                               "--param wakeup.load=kernbench --param wakeup.load_nice=10");
  running = false;
  watcher.join();
  expect_consistent(r, 1, 2, 1000);
  EXPECT_EQ(r.details.at("load").at("nice"), 10);
  EXPECT_EQ(r.details.at("load_nice"), 10);
  ASSERT_FALSE(load_nice.empty()) << "no process of the load was seen working in " << cache.path();
  for (const auto& [pid, nice] : load_nice) EXPECT_EQ(nice, 10) << "load process " << pid;
  ASSERT_FALSE(waker_nice.empty()) << "no waking thread was seen";
  for (const auto& [task, nice] : waker_nice) EXPECT_EQ(nice, 19) << task;
  EXPECT_EQ(testing::threads_named("schedlab-"), std::vector<std::string>{});
}

TEST(Wakeup, LoadNiceNeedsALoadAndItsRange) {
  auto none = schedlab("run --workload wakeup --param wakeup.load_nice=5");
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_NE(none.out.find("wakeup.load_nice: there is no load to nice (wakeup.load is none)"),
            std::string::npos)
      << none.out;
  auto range = schedlab("run --workload wakeup --param wakeup.load=hogs:1 --param wakeup.load_nice=20");
  EXPECT_EQ(range.code, 2) << range.out;
  EXPECT_NE(range.out.find("wakeup.load_nice"), std::string::npos) << range.out;
}

// Hogs take the load's nice value too: seen on the hog threads while they spin.
TEST(Wakeup, HogsRunAtTheLoadsNiceValue) {
  TempDir dir;
  std::atomic<bool> running{true};
  std::map<std::string, int> hog_nice;
  std::thread watcher([&] {
    std::error_code ec;
    while (running) {
      for (const pid_t pid : testing::descendant_pids())
        for (const auto& task :
             std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
          if (testing::slurp(task.path() / "comm").rfind("schedlab-hog", 0) == 0)
            if (auto n = nice_of(task.path() / "stat")) hog_nice[task.path().string()] = *n;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  auto r = run_wakeup(dir,
                      "--param wakeup.threads=1 --param wakeup.duration_s=1 --param wakeup.load=hogs:2 "
                      "--param wakeup.load_nice=7");
  running = false;
  watcher.join();
  expect_consistent(r, 1, 1, 10000);
  EXPECT_EQ(r.details.at("load_nice"), 7);
  ASSERT_FALSE(hog_nice.empty()) << "no hog thread was seen";
  for (const auto& [task, nice] : hog_nice) EXPECT_EQ(nice, 7) << task;
}

TEST(Wakeup, FifoRuns) {
  TempDir dir;
  auto r = run_wakeup(dir,
                      "--param wakeup.threads=1 --param wakeup.period_us=1000 --param wakeup.duration_s=0.5 "
                      "--param wakeup.policy=fifo:50");
  expect_consistent(r, 1, 0.5, 1000);
}

TEST(Wakeup, BadLoadIsRefused) {
  TempDir dir;
  auto o = schedlab("run --workload wakeup --param wakeup.load=hogs:x --out " + (dir.path() / "o").string());
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("wakeup.load: 'hogs:x' must be none, kernbench, or hogs:N"), std::string::npos)
      << o.out;
}

// `schedlab workloads` lists the values wakeup.load takes, as the run accepts them (issue #28: it said
// hogs:PRIO, the policy's placeholder).
TEST(Wakeup, ListingShowsTheLoadValuesItTakes) {
  auto o = schedlab("workloads");
  ASSERT_EQ(o.code, 0) << o.out;
  const auto line_of = [&](const std::string& key) {
    const auto at = o.out.find("    " + key + " ");
    return at == std::string::npos ? std::string() : o.out.substr(at, o.out.find('\n', at) - at);
  };
  const auto load = line_of("wakeup.load");
  EXPECT_NE(load.find("none|hogs:N|kernbench"), std::string::npos) << load;
  const auto policy = line_of("wakeup.policy");
  EXPECT_NE(policy.find("other|batch|idle|fifo:PRIO"), std::string::npos) << policy;
  // What the listing shows is what the run takes, and the refusal names the same form.
  TempDir dir;
  auto bad = schedlab("run --workload wakeup --param wakeup.load=hogs: --out " + (dir.path() / "o").string());
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("is not one of none, hogs:N, kernbench"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace schedlab
