// requests: short runs through the schedlab binary — the closed loop and the fixed rate measure
// wakeups and requests consistently, the fixed rate keeps its schedule, the think sleep shows in the
// request latency, bad input is refused, and no thread outlives a run.
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

std::uint64_t count_of(const nlohmann::json& histogram) {
  std::uint64_t n = histogram.at("overflow").get<std::uint64_t>();
  for (const auto& b : histogram.at("buckets")) n += b.at(2).get<std::uint64_t>();
  return n;
}

Repetition run_one(const std::string& params) {
  TempDir dir;
  const auto b = run_bundle(dir.path(), "--workload requests --repetitions 1 " + params);
  const auto r = b.instances.at(0).repetitions.at(0);
  EXPECT_TRUE(r.ok()) << r.reason;
  return r;
}

// What holds in every run: the metrics agree with each other and with the histograms.
void expect_consistent(const Repetition& r, double duration_s) {
  EXPECT_GE(metric(r, "elapsed_s"), duration_s);
  EXPECT_LT(metric(r, "elapsed_s"), duration_s + 1.5);  // the drain limit is 1 s
  EXPECT_NEAR(metric(r, "requests_s"), metric(r, "requests") / metric(r, "elapsed_s"),
              1e-6 * metric(r, "requests_s"));
  EXPECT_EQ(metric(r, "operations"), metric(r, "requests"));
  EXPECT_EQ(count_of(r.details.at("histogram")), metric(r, "wakeups"));
  EXPECT_EQ(count_of(r.details.at("request_histogram")), metric(r, "requests"));
  EXPECT_LE(metric(r, "request_p50_us"), metric(r, "request_p99_us"));
  if (metric(r, "wakeups") == 0) {  // fixed rate over capacity: no worker ever slept
    EXPECT_FALSE(r.metrics.contains("wakeup_p50_us"));
    EXPECT_TRUE(r.details.contains("wakeup_latency_absent"));
    return;
  }
  EXPECT_LE(metric(r, "wakeup_p50_us"), metric(r, "wakeup_p99_us"));
  if (metric(r, "wakeups") >= 10000) {
    ASSERT_TRUE(r.metrics.contains("wakeup_p999_us"));
    EXPECT_LE(metric(r, "wakeup_p99_us"), metric(r, "wakeup_p999_us"));
  } else {
    EXPECT_FALSE(r.metrics.contains("wakeup_p999_us"));
    EXPECT_NE(r.details.at("wakeup_p999_us_absent").get<std::string>().find("< 10000"), std::string::npos);
  }
}

TEST(Requests, ClosedLoopWakesAWorkerForEveryRequest) {
  const auto r = run_one(
      "--param requests.workers=2 --param requests.duration_s=1 --param requests.operations=1 "
      "--param requests.footprint_kb=64 --param requests.sleep_us=0");
  expect_consistent(r, 1);
  EXPECT_EQ(r.details.at("mode"), "closed-loop");
  EXPECT_GT(metric(r, "requests"), 100);
  // Each request starts with the wakeup that handed it over and counts from the same stamp, so the
  // request latencies dominate the wakeup latencies.
  ASSERT_EQ(r.details.at("unfinished"), 0);
  EXPECT_EQ(metric(r, "wakeups"), metric(r, "requests"));
  EXPECT_GE(metric(r, "request_p50_us"), metric(r, "wakeup_p50_us"));
  EXPECT_GE(metric(r, "request_p99_us"), metric(r, "wakeup_p99_us"));
  EXPECT_EQ(testing::threads_named("schedlab-rq"), std::vector<std::string>{});
}

TEST(Requests, ManyWakeupsGiveP999) {
  // No work at all: the run is futex round trips, tens of thousands of them in a second.
  const auto r = run_one(
      "--param requests.message_threads=2 --param requests.workers=2 --param requests.duration_s=1 "
      "--param requests.operations=0 --param requests.sleep_us=0");
  expect_consistent(r, 1);
  EXPECT_EQ(r.details.at("message_threads").size(), 2u);
  EXPECT_EQ(testing::threads_named("schedlab-rq"), std::vector<std::string>{});
}

TEST(Requests, FixedRateKeepsItsScheduleAtALowRate) {
  // 200 requests due 5 ms apart; a request takes far less, so every one is handed over and done.
  const auto r = run_one(
      "--param requests.rate=200 --param requests.workers=2 --param requests.duration_s=1 "
      "--param requests.operations=1 --param requests.footprint_kb=64 --param requests.sleep_us=0");
  expect_consistent(r, 1);
  EXPECT_EQ(r.details.at("mode"), "fixed-rate");
  EXPECT_EQ(r.details.at("unsent"), 0);
  EXPECT_EQ(r.details.at("unfinished"), 0);
  EXPECT_EQ(metric(r, "requests"), 200);
  // elapsed_s is at least the second, and the last request is due 5 ms before its end: only a late
  // completion (a stalled VM) lowers the rate, by design.
  EXPECT_LE(metric(r, "requests_s"), 200 * 1.001);
  EXPECT_GE(metric(r, "requests_s"), 200 / 1.5);
  // Idle workers sleep between requests: most requests begin with a measured wakeup.
  EXPECT_GE(metric(r, "wakeups"), 100);
  EXPECT_LE(metric(r, "wakeups"), metric(r, "requests"));
  EXPECT_FALSE(r.metrics.contains("wakeup_p999_us"));
  EXPECT_EQ(testing::threads_named("schedlab-rq"), std::vector<std::string>{});
}

TEST(Requests, FixedRateOverCapacityCountsFromTheScheduleAndLosesNothing) {
  // 50,000 requests due in 0.5 s against two workers that take ~15 ms each here (2 x 1024 queued take
  // far longer than the 1 s drain even on a machine ten times faster): the queues fill,
  // the rest is never handed over, and what is queued at the drain limit stays unfinished.
  const auto r = run_one(
      "--param requests.rate=100000 --param requests.workers=2 --param requests.duration_s=0.5 "
      "--param requests.operations=20 --param requests.sleep_us=0");
  expect_consistent(r, 0.5);
  const auto unsent = r.details.at("unsent").get<double>();
  const auto unfinished = r.details.at("unfinished").get<double>();
  EXPECT_GT(unsent, 0);
  EXPECT_GT(unfinished, 0);
  // Every scheduled request is accounted for: done, left queued, or never handed over.
  EXPECT_EQ(metric(r, "requests") + unfinished + unsent, 50000);
  // The ones served waited behind each other from their due times, near the start, until up to the
  // drain limit: latency from the schedule, not from when a worker took them.
  EXPECT_GE(metric(r, "request_p99_us"), 300000);
  EXPECT_EQ(testing::threads_named("schedlab-rq"), std::vector<std::string>{});
}

TEST(Requests, ThinkSleepIsPartOfEveryRequest) {
  const auto r = run_one(
      "--param requests.workers=1 --param requests.duration_s=0.5 --param requests.operations=0 "
      "--param requests.sleep_us=2000 --param requests.timer_slack_ns=1");
  expect_consistent(r, 0.5);
  EXPECT_GE(metric(r, "request_p50_us"), 2000);
  // One worker sleeping 2 ms per request cannot do more than 500 a second.
  EXPECT_LE(metric(r, "requests_s"), 500);
}

TEST(Requests, BadInputIsRefused) {
  expect_bad_input("--workload requests --param requests.workers=0", "requests.workers");
  expect_bad_input("--workload requests --param requests.rate=-1", "requests.rate");
  expect_bad_input(
      "--workload requests --param requests.rate=1 --param requests.duration_s=0.5 "
      "--param requests.message_threads=1",
      "requests.rate: ");
  expect_bad_input("--workload requests --param requests.policy=fifo:10",
                   "requests.cpu_lock: on with a real-time");
  expect_bad_input("--workload requests --param requests.message_threads=256 --param requests.workers=1000",
                   "requests.workers: 256 message threads x (1000 workers + 1)");
  expect_bad_input("--workload requests --param requests.cpu_lock=maybe", "requests.cpu_lock");
}

}  // namespace
}  // namespace schedlab
