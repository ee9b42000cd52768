// chat: short runs through the schedlab binary — both lock modes deliver every message exactly
// once, the open-loop mode keeps its schedule, bad input, and a killed client process. The 2007
// effect (yield-spin against mutex) is in chat_yield_effect_test.cpp.
#include <algorithm>

#include "socket_workloads.hpp"

namespace schedlab {
namespace {

using testing::expect_bad_input;
using testing::run_bundle;
using testing::TempDir;

double metric(const Repetition& r, const char* name) {
  return r.metrics.at(name).value;
}

TEST(Chat, BothLocksDeliverEveryMessageOnceToEveryMember) {
  TempDir dir;
  // 2 rooms x 5 users x 30 messages, each delivered to the 5 members of its room.
  const auto b = run_bundle(dir.path(),
                            "--workload chat --repetitions 1 --param chat.rooms=2 --param chat.users=5 "
                            "--param chat.messages=30 --param 'chat.lock=[mutex,yield-spin]'");
  ASSERT_EQ(b.instances.size(), 2u);
  for (const auto& in : b.instances) {
    const std::string lock = in.params.at("lock");
    for (const auto& r : {*in.warmup, in.repetitions.at(0)}) {
      ASSERT_TRUE(r.ok()) << lock << ": " << r.reason;
      EXPECT_EQ(metric(r, "deliveries"), 2 * 5 * 5 * 30) << lock;
      EXPECT_EQ(r.details.at("server").at("broadcasts"), 2 * 5 * 30) << lock;
      EXPECT_EQ(r.details.at("server").at("socket_writes"), 2 * 5 * 5 * 30) << lock;
      EXPECT_NEAR(metric(r, "messages_s"), metric(r, "deliveries") / metric(r, "elapsed_s"),
                  1e-6 * metric(r, "messages_s"));
      EXPECT_GT(metric(r, "latency_p50_us"), 0) << lock << ": a delivery crosses two sockets";
      EXPECT_LE(metric(r, "latency_p50_us"), metric(r, "latency_p99_us")) << lock;
      EXPECT_GT(metric(r, "context_switches"), 0) << lock;
      EXPECT_EQ(r.details.at("mode"), "closed-loop");
      if (lock == "mutex") {
        EXPECT_EQ(metric(r, "yields"), 0) << "a mutex never yields";
      }
    }
  }
  EXPECT_EQ(testing::threads_named("schedlab-chat"), std::vector<std::string>{});
}

TEST(Chat, OpenLoopKeepsItsScheduleAndDeliversEverything) {
  TempDir dir;
  // 20 messages at 100 per second per user: the last is due 190 ms after the start.
  const auto b = run_bundle(dir.path(),
                            "--workload chat --repetitions 1 --param chat.rooms=2 --param chat.users=3 "
                            "--param chat.messages=20 --param chat.rate=100");
  const auto& r = b.instances.at(0).repetitions.at(0);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.details.at("mode"), "open-loop");
  EXPECT_EQ(metric(r, "deliveries"), 2 * 3 * 3 * 20);
  EXPECT_GE(metric(r, "elapsed_s"), 0.19);
  EXPECT_LT(metric(r, "elapsed_s"), 5);
}

TEST(Chat, BadInputIsExitTwo) {
  expect_bad_input("--workload chat --param chat.rooms=0", "chat.rooms: must be between 1 and 1000");
  expect_bad_input("--workload chat --param chat.users=0", "chat.users: must be between 1 and 1000");
  expect_bad_input("--workload chat --param chat.message_bytes=1048577",
                   "chat.message_bytes: must be between 1 and 1048576");
  expect_bad_input("--workload chat --param chat.lock=ticket", "chat.lock: 'ticket' is not one of");
  expect_bad_input("--workload chat --param chat.placement=same-thread",
                   "same-thread applies to tbench only");
  expect_bad_input("--workload chat --param chat.rooms=1000 --param chat.users=1000",
                   "descriptors per process, the limit is");
}

TEST(Chat, AKilledClientProcessFailsItsRepetitionAndTheOthersGoOn) {
  TempDir dir;
  // Open loop, so that each repetition lasts half a second whatever the machine's speed.
  auto r = testing::run_and_kill(dir.path(),
                                 "--workload chat --repetitions 2 --param chat.rooms=2 --param chat.users=5 "
                                 "--param chat.messages=100 --param chat.rate=200",
                                 "schedlab-chatcl");
  ASSERT_TRUE(r.killed) << "no client process was seen\n" << r.outcome.out;
  EXPECT_EQ(r.outcome.code, 1) << r.outcome.out;
  const auto& in = r.bundle.instances.at(0);
  std::vector<Repetition> all{*in.warmup};
  all.insert(all.end(), in.repetitions.begin(), in.repetitions.end());
  int failed = 0;
  for (const auto& rep : all) {
    if (rep.ok()) {
      EXPECT_EQ(metric(rep, "deliveries"), 2 * 5 * 5 * 100);
      continue;
    }
    ++failed;
    EXPECT_EQ(rep.reason.rfind("chat clients (pid ", 0), 0u) << rep.reason;
    EXPECT_NE(rep.reason.find("killed by signal 9 (SIGKILL)"), std::string::npos) << rep.reason;
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(testing::threads_named("schedlab-chat"), std::vector<std::string>{});
}

TEST(Chat, WorkloadsListsItsParametersAndMetrics) {
  auto o = testing::schedlab("workloads");
  ASSERT_EQ(o.code, 0) << o.out;
  for (const std::string s : {"chat 1.0.0", "chat.rooms", "chat.users", "chat.messages", "chat.message_bytes",
                              "chat.lock", "chat.rate", "messages_s *", "latency_p99_us *", "yields"})
    EXPECT_NE(o.out.find(s), std::string::npos) << s << "\n" << o.out;
}

}  // namespace
}  // namespace schedlab
