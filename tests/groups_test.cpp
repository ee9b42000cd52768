// groups (hackbench): short runs through the schedlab binary — processes and threads over sockets
// and pipes deliver exactly groups x fds x fds x loops messages, the metrics agree with each other,
// bad input, the time limit, and a killed task.
#include "socket_workloads.hpp"

namespace schedlab {
namespace {

using testing::expect_bad_input;
using testing::run_bundle;
using testing::TempDir;

double metric(const Repetition& r, const char* name) {
  return r.metrics.at(name).value;
}

TEST(Groups, ProcessesAndThreadsOverSocketsAndPipesDeliverEveryMessage) {
  TempDir dir;
  const auto b = run_bundle(dir.path(),
                            "--workload groups --repetitions 1 --param groups.groups=2 --param groups.fds=3 "
                            "--param groups.loops=50 --param 'groups.tasks=[process,thread]' "
                            "--param 'groups.transport=[socket,pipe]'");
  ASSERT_EQ(b.instances.size(), 4u);
  std::set<std::string> seen;
  for (const auto& in : b.instances) {
    const std::string tasks = in.params.at("tasks"), transport = in.params.at("transport");
    const std::string what = tasks + "/" + transport;
    seen.insert(what);
    for (const auto& r : {*in.warmup, in.repetitions.at(0)}) {
      ASSERT_TRUE(r.ok()) << what << ": " << r.reason;
      EXPECT_EQ(r.details.at("mode"), tasks);
      EXPECT_EQ(r.details.at("transport"), transport);
      EXPECT_EQ(r.details.at("tasks"), 2 * 2 * 3);
      EXPECT_EQ(metric(r, "messages"), 2 * 3 * 3 * 50) << what;
      EXPECT_EQ(metric(r, "operations"), metric(r, "messages")) << what;
      EXPECT_GT(metric(r, "elapsed_s"), 0) << what;
      EXPECT_NEAR(metric(r, "ns_per_message"), metric(r, "elapsed_s") * 1e9 / metric(r, "messages"),
                  1e-9 * metric(r, "ns_per_message"))
          << what;
      // The last receiver is done before its task is reaped or joined.
      EXPECT_GT(metric(r, "receive_s"), 0) << what;
      EXPECT_LE(metric(r, "receive_s"), metric(r, "elapsed_s")) << what;
      // Every task at least waits in poll() for the start.
      EXPECT_GE(metric(r, "voluntary_switches"), 2 * 2 * 3) << what;
      EXPECT_NEAR(
          metric(r, "context_switches_per_message"),
          (metric(r, "voluntary_switches") + metric(r, "involuntary_switches")) / metric(r, "messages"), 1e-9)
          << what;
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"process/socket", "process/pipe", "thread/socket", "thread/pipe"}));
  EXPECT_EQ(testing::threads_named("schedlab-grp"), std::vector<std::string>{});
}

TEST(Groups, BadInputIsExitTwo) {
  expect_bad_input("--workload groups --param groups.groups=0", "groups.groups: must be between 1 and 1000");
  expect_bad_input("--workload groups --param groups.fds=0", "groups.fds: must be between 1 and 1000");
  expect_bad_input("--workload groups --param groups.loops=0", "groups.loops: must be between 1 and");
  expect_bad_input("--workload groups --param groups.message_bytes=0",
                   "groups.message_bytes: must be between 1 and 1048576");
  expect_bad_input("--workload groups --param groups.transport=udp", "groups.transport: 'udp' is not one of");
  expect_bad_input("--workload groups --param groups.tasks=fiber", "groups.tasks: 'fiber' is not one of");
  expect_bad_input("--workload groups --param groups.placement=same-thread",
                   "same-thread applies to tbench only");
  expect_bad_input("--workload groups --param groups.max_duration_s=0",
                   "groups.max_duration_s: must be between");
  expect_bad_input("--workload groups --param groups.groups=1000 --param groups.fds=1000",
                   "2000000 tasks, more than 100000");
}

// Threads hold every group's channels in one descriptor table; a process-mode parent one group's.
TEST(Groups, ADescriptorLimitTooLowIsExitTwo) {
  TempDir dir;
  const auto run = [&](const std::string& params) {
    return testing::sh("ulimit -n 256 && " + std::string(SCHEDLAB_BINARY) + " run --settle-timeout 0 --out " +
                       (dir.path() / "out").string() + " --workload groups " + params);
  };
  auto o = run("--param groups.tasks=thread --param groups.groups=10 --param groups.fds=20");
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(
      o.out.find(
          "groups.fds: 10 groups x 20 fds in threads need 464 descriptors per process, the limit is 256"),
      std::string::npos)
      << o.out;
  o = run("--param groups.tasks=process --param groups.fds=100");
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("descriptors per process, the limit is 256"), std::string::npos) << o.out;
  EXPECT_TRUE(testing::files_in(dir.path() / "out").empty());
}

TEST(Groups, TheTimeLimitStopsEveryTaskAndFailsTheRun) {
  for (const std::string tasks : {"process", "thread"}) {
    TempDir dir;
    const auto b =
        run_bundle(dir.path(),
                   "--workload groups --repetitions 1 --param groups.groups=1 --param groups.fds=2 "
                   "--param groups.loops=100000000 --param groups.max_duration_s=0.3 "
                   "--param groups.tasks=" +
                       tasks,
                   1);
    const auto& in = b.instances.at(0);
    for (const auto& r : {*in.warmup, in.repetitions.at(0)}) {
      ASSERT_FALSE(r.ok()) << tasks;
      EXPECT_NE(r.reason.find("still running at the time limit (max_duration_s = 0.3"), std::string::npos)
          << tasks << ": " << r.reason;
    }
    EXPECT_EQ(testing::threads_named("schedlab-grp"), std::vector<std::string>{}) << tasks;
  }
}

TEST(Groups, AKilledProcessFailsItsRepetitionAndTheOthersGoOn) {
  TempDir dir;
  // About a second per repetition on a 2-vCPU VM: long enough to be found and killed.
  auto r =
      testing::run_and_kill(dir.path(),
                            "--workload groups --repetitions 2 --param groups.groups=1 --param groups.fds=2 "
                            "--param groups.loops=150000",
                            "schedlab-grprcv");
  ASSERT_TRUE(r.killed) << "no receiver process was seen\n" << r.outcome.out;
  EXPECT_EQ(r.outcome.code, 1) << r.outcome.out;
  const auto& in = r.bundle.instances.at(0);
  std::vector<Repetition> all{*in.warmup};
  all.insert(all.end(), in.repetitions.begin(), in.repetitions.end());
  int failed = 0;
  for (const auto& rep : all) {
    if (rep.ok()) {
      EXPECT_EQ(metric(rep, "messages"), 1 * 2 * 2 * 150000);
      continue;
    }
    ++failed;
    // The cause comes first, not the senders that then found the receiver gone.
    EXPECT_NE(rep.reason.find("group 0 receiver "), std::string::npos) << rep.reason;
    EXPECT_NE(rep.reason.find("killed by signal 9 (SIGKILL)"), std::string::npos) << rep.reason;
    EXPECT_LT(rep.reason.find("killed by signal 9"), rep.reason.find("; then ")) << rep.reason;
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(testing::threads_named("schedlab-grp"), std::vector<std::string>{});
}

TEST(Groups, WorkloadsListsItsParametersAndMetrics) {
  auto o = testing::schedlab("workloads");
  ASSERT_EQ(o.code, 0) << o.out;
  for (const std::string s : {"groups 1.0.0", "groups.groups", "groups.fds", "groups.loops",
                              "groups.message_bytes", "groups.transport", "groups.tasks",
                              "groups.max_duration_s", "elapsed_s *", "ns_per_message *", "receive_s"})
    EXPECT_NE(o.out.find(s), std::string::npos) << s << "\n" << o.out;
}

}  // namespace
}  // namespace schedlab
