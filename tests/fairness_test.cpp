// fairness: the weight-table check through the schedlab binary (nice 0 against nice 5 on one CPU
// splits it 1024:335), a 3-task case, spread placement, bad input, and nothing left running.
#include <cmath>

#include "socket_workloads.hpp"

namespace schedlab {
namespace {

using testing::expect_bad_input;
using testing::run_bundle;
using testing::TempDir;

double metric(const Repetition& r, const char* name) {
  return r.metrics.at(name).value;
}

// Measured here (5 repetitions of 2 s, nice 0 against nice 5): the largest relative share error was
// 0.58%, median 0.15%. 3% leaves five times that for a busier machine and still fails a kernel whose
// split is off by one nice level (820:335 would give 0.710, 6% off).
constexpr double kShareTolerance = 0.03;

// The entitled shares come from the table and are exact; the measured ones within the tolerance.
void expect_weight_shares(const Repetition& r, const std::vector<std::pair<int, double>>& expected) {
  ASSERT_TRUE(r.ok()) << r.reason;
  const auto& tasks = r.details.at("tasks");
  ASSERT_EQ(tasks.size(), expected.size());
  double sum = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& t = tasks[i];
    EXPECT_EQ(t.at("nice"), expected[i].first);
    EXPECT_NEAR(t.at("entitled_share").get<double>(), expected[i].second, 1e-4);
    EXPECT_NEAR(t.at("share").get<double>() / expected[i].second, 1.0, kShareTolerance)
        << "nice " << expected[i].first << ": share " << t.at("share");
    sum += t.at("share").get<double>();
  }
  EXPECT_NEAR(sum, 1.0, 1e-9) << "one CPU's shares add up to it";
  EXPECT_LT(metric(r, "share_error_pct"), kShareTolerance * 100);
  EXPECT_GT(metric(r, "jain_index"), 99.9);
  EXPECT_LE(metric(r, "jain_index"), 100.0 + 1e-9);
}

TEST(Fairness, NiceZeroAgainstNiceFiveSplitsOneCpuByTheWeightTable) {
  TempDir dir;
  const auto b = run_bundle(dir.path(),
                            "--workload fairness --repetitions 1 --param fairness.nices=0,5 "
                            "--param fairness.duration_s=2");
  const auto& r = b.instances.at(0).repetitions.at(0);
  // kernel/sched/core.c: nice 0 weighs 1024, nice 5 weighs 335.
  expect_weight_shares(r, {{0, 1024.0 / 1359}, {5, 335.0 / 1359}});
  // Both spin on one CPU. How much of it they got is the machine's to say (a neighbour on that CPU takes
  // its part: 28% was seen beside a CPU hog), so the metric is held to the record's own figures: the
  // tasks' CPU time over the window. The niced one waited for the other's slices, so it was off the CPU
  // for at least some intervals, none longer than the window.
  double cpu_ms = 0;
  for (const auto& t : r.details.at("tasks")) cpu_ms += t.at("cpu_ms").get<double>();
  const double window_ms = r.details.at("window_s").get<double>() * 1000;
  EXPECT_NEAR(metric(r, "tasks_cpu_pct"), cpu_ms / window_ms * 100, 1e-6);
  EXPECT_GT(metric(r, "tasks_cpu_pct"), 0);
  EXPECT_LE(metric(r, "tasks_cpu_pct"), 100.5);
  EXPECT_GT(metric(r, "lightest_max_gap_ms"), 0.02);
  EXPECT_LE(metric(r, "lightest_p99_gap_ms"), metric(r, "lightest_max_gap_ms"));
  EXPECT_LT(metric(r, "lightest_max_gap_ms"), 2000);
  EXPECT_GT(r.details.at("tasks")[1].at("off_cpu_intervals").get<int>(), 0);
  EXPECT_GT(metric(r, "operations"), 0);
  EXPECT_EQ(testing::threads_named("schedlab-fair"), std::vector<std::string>{});
}

TEST(Fairness, ThreeTasksShareByTheirWeights) {
  TempDir dir;
  const auto b = run_bundle(dir.path(),
                            "--workload fairness --repetitions 1 --param fairness.nices=0,0,3 "
                            "--param fairness.duration_s=2");
  // 1024 + 1024 + 526 = 2574.
  expect_weight_shares(b.instances.at(0).repetitions.at(0),
                       {{0, 1024.0 / 2574}, {0, 1024.0 / 2574}, {3, 526.0 / 2574}});
}

TEST(Fairness, SpreadComparesWeightsPerCpu) {
  TempDir dir;
  const auto b = run_bundle(dir.path(),
                            "--workload fairness --repetitions 1 --param fairness.nices=0,5 "
                            "--param fairness.duration_s=0.3 --param fairness.placement=spread");
  const auto& r = b.instances.at(0).repetitions.at(0);
  ASSERT_TRUE(r.ok()) << r.reason;
  const auto& tasks = r.details.at("tasks");
  if (tasks[0].at("cpu") == tasks[1].at("cpu")) GTEST_SKIP() << "one allowed CPU: spread is same-cpu";
  for (const auto& t : tasks) {
    EXPECT_EQ(t.at("entitled_share").get<double>(), 1.0) << "alone on its CPU, entitled to all of it";
    EXPECT_EQ(t.at("share").get<double>(), 1.0);
  }
  EXPECT_EQ(metric(r, "share_error_pct"), 0);
}

TEST(Fairness, BadInputIsExitTwoNamingTheEntry) {
  expect_bad_input("--workload fairness --param fairness.nices=0,x,5",
                   "fairness.nices: entry 2 ('x') is not a nice value (an integer from -20 to 19)");
  expect_bad_input("--workload fairness --param fairness.nices=0,20",
                   "fairness.nices: entry 2 ('20') is not a nice value");
  expect_bad_input("--workload fairness --param fairness.nices=0,,1", "fairness.nices: entry 2 ('')");
  expect_bad_input("--workload fairness --param fairness.nices=3", "fairness.nices: 1 entries; give from 2");
  expect_bad_input("--workload fairness --param fairness.placement=unpinned",
                   "fairness.placement: unpinned does not say which tasks share a CPU");
  expect_bad_input("--workload fairness --param fairness.policy=idle",
                   "fairness.policy: idle does not weigh tasks by nice");
  expect_bad_input("--workload fairness --param fairness.duration_s=0",
                   "fairness.duration_s: must be between");
}

TEST(Fairness, WorkloadsListsItsParametersAndMetrics) {
  auto o = testing::schedlab("workloads");
  ASSERT_EQ(o.code, 0) << o.out;
  for (const std::string s : {"fairness 1.0.0", "fairness.nices", "fairness.duration_s", "fairness.placement",
                              "share_error_pct *", "jain_index *", "lightest_max_gap_ms"})
    EXPECT_NE(o.out.find(s), std::string::npos) << s << "\n" << o.out;
}

}  // namespace
}  // namespace schedlab
