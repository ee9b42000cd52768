// `--trace`: tracepoint formats of a real kernel (tests/fixtures/vm-6.18-tracefs: copied from this
// VM's /sys/kernel/tracing/events/sched, kernel 6.18.44) and broken copies, the per-task summariser's
// rules, and a live traced run of two threads yielding to each other.
#include <gtest/gtest.h>

#include "cli_util.hpp"
#include "collector/trace/sched_trace.hpp"
#include "collector/trace/tracefs.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using testing::TempDir;

const fs::path kTracefs = fs::path(SCHEDLAB_FIXTURES_DIR) / "vm-6.18-tracefs";

TEST(TracepointFormat, TheRealSchedFormatsParse) {
  const auto sw = read_tracepoint(kTracefs, "sched/sched_switch");
  EXPECT_EQ(sw.id, std::stoul(slurp(kTracefs / "events/sched/sched_switch/id")));
  EXPECT_EQ(sw.field("prev_pid").offset, 24u);
  EXPECT_EQ(sw.field("prev_pid").size, 4u);
  EXPECT_TRUE(sw.field("prev_pid").is_signed);
  EXPECT_EQ(sw.field("prev_state").size, 8u);
  EXPECT_EQ(sw.field("next_comm").size, 16u);  // "char next_comm[16]": the name without the brackets
  EXPECT_EQ(sw.field("next_pid").offset, 56u);
  const auto fork = read_tracepoint(kTracefs, "sched/sched_process_fork");
  EXPECT_EQ(fork.field("child_pid").offset, 20u);  // after two __data_loc strings on 6.18
  EXPECT_EQ(fork.field("child_comm").size, 4u);
  for (const char* name : {"sched/sched_wakeup", "sched/sched_wakeup_new", "sched/sched_migrate_task"})
    EXPECT_EQ(read_tracepoint(kTracefs, name).field("pid").size, 4u) << name;
  try {
    sw.field("no_such_field");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sched/sched_switch"), std::string::npos) << e.what();
  }
}

TEST(TracepointFormat, BrokenCopiesNameTheFileAndLine) {
  auto text = slurp(kTracefs / "events/sched/sched_switch/format");
  auto broken = text;
  broken.replace(broken.find("offset:24;"), 10, "offset:xx;");
  try {
    parse_tracepoint_format(broken, "broken/format");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("broken/format:"), std::string::npos) << e.what();
  }
  // Found by fuzz_tracepoint_format (fuzz/regressions/): a size past std::stoul's range escaped as
  // std::out_of_range; one past a record's 64 KiB would overflow the readers' bounds check.
  for (const std::string size :
       {"size:77777777777777777777777777;", "size:18446744073709551615;", "size:65537;"}) {
    auto huge = text;
    huge.replace(huge.find("size:4;"), 7, size);
    try {
      parse_tracepoint_format(huge, "broken/format");
      ADD_FAILURE() << "no error for " << size;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("beyond a tracepoint record's 65536 bytes"), std::string::npos)
          << e.what();
    }
  }
  auto no_id = text;
  no_id.replace(no_id.find("ID:"), 3, "Id:");
  EXPECT_THROW(parse_tracepoint_format(no_id, "broken/format"), InputError);
}

// The summariser's rules on a hand-written sequence: every number here is a rule, not a measurement.
TEST(SchedTraceSummary, WaitsWakeupsPreemptionsAndForks) {
  using K = SchedEvent::Kind;
  const pid_t root = 100, child = 101, stranger = 7;
  const std::vector<SchedEvent> events = {
      {1000, K::kFork, 0, root, child, 0},        // the workload forks: the child is followed
      {2000, K::kWakeup, 0, child, 0, 0},         // woken at 2 us ...
      {5000, K::kSwitch, 0, stranger, child, 1},  // ... runs at 5 us: 3 us wakeup latency
      {9000, K::kSwitch, 0, child, stranger, 0},  // preempted (R) after 4 us of running
      {10000, K::kMigrate, 1, child, 0, 0},
      {15000, K::kSwitch, 1, stranger, child, 1},  // 6 us runnable, not a wakeup
      {16000, K::kSwitch, 1, child, stranger, 1},  // sleeps (S) after 1 us
      {17000, K::kWakeup, 0, stranger, 0, 0},      // not the workload's
  };
  const auto tasks = summarise_sched_events(events, root, {{child, "schedlab-yield"}});
  ASSERT_EQ(tasks.size(), 1u);
  const auto& t = tasks.at(child);
  EXPECT_EQ(t.comm, "schedlab-yield");
  EXPECT_DOUBLE_EQ(t.run_s, 5e-6);
  EXPECT_DOUBLE_EQ(t.wait_s, 9e-6);
  EXPECT_EQ(t.wakeups, 1u);
  EXPECT_DOUBLE_EQ(t.wakeup_latency_max_s, 3e-6);
  EXPECT_EQ(t.switches, 2u);
  EXPECT_EQ(t.preempted, 1u);
  EXPECT_EQ(t.migrations, 1u);
}

TEST(TraceLive, TwoYieldingThreadsSwitchOncePerYield) {
  TempDir out;
  auto o = testing::schedlab(
      "run --workload yield --param yield.threads=2 --param yield.placement=same-cpu --param "
      "yield.yields=20000 "
      "--repetitions 1 --no-counters --trace --settle-timeout 1 --out " +
      out.path().string());
  ASSERT_EQ(o.code, 0) << o.out;
  const auto files = testing::files_in(out.path());
  ASSERT_EQ(files.size(), 1u);
  const auto bundle = load_bundle(files[0]);
  const auto& in = bundle.instances.at(0);
  ASSERT_EQ(in.diagnostics.size(), 1u);
  EXPECT_EQ(in.instrumentation["diagnostic"]["trace"], true);
  const auto& rep = in.diagnostics[0];
  ASSERT_EQ(rep.trace["status"], "ok") << rep.trace.dump();
  EXPECT_EQ(rep.trace["lost_events"], 0);
  const double yields = rep.metrics.at("yields").value;
  ASSERT_GT(yields, 0);
  // Each thread's yield hands the CPU to the other: one switch each, give or take the start and end.
  const double switches = rep.trace["totals"]["switches"].get<double>();
  EXPECT_NEAR(switches / yields, 1.0, 0.05) << rep.trace.dump();
  int yielders = 0;
  for (const auto& task : rep.trace["tasks"]) {
    if (task["switches"].get<double>() < yields / 4) continue;
    ++yielders;
    EXPECT_GT(task["run_s"].get<double>(), 0);
    EXPECT_GT(task["wait_s"].get<double>(), 0);  // runnable while the other thread ran
    EXPECT_EQ(task["comm"].get<std::string>().rfind("schedlab", 0), 0u) << task.dump();
  }
  EXPECT_EQ(yielders, 2) << rep.trace.dump();
}

}  // namespace
}  // namespace schedlab
