// sdet: short runs through the schedlab binary — every user runs exactly its scripts, in its own
// seeded order; a sweep over users; bad input; a failing script and a killed user fail the
// repetition naming them; a time limit; nothing is left behind (processes, scratch directory).
#include <stdlib.h>

#include <algorithm>
#include <set>

#include "socket_workloads.hpp"

namespace schedlab {
namespace {

using testing::expect_bad_input;
using testing::run_bundle;
using testing::TempDir;

double metric(const Repetition& r, const char* name) {
  return r.metrics.at(name).value;
}

const std::set<std::string> kBundled = {"edit",      "wordfreq",   "treecopy",  "archive",
                                        "search",    "smallfiles", "sortmerge", "report",
                                        "checksums", "compare",    "shellwork", "dirs"};

// Points the schedlab runs of a test at their own temporary directory, where the workload makes its
// scratch directory, so that what it leaves there can be seen.
class ScratchTmpdir {
 public:
  ScratchTmpdir() {
    const char* old = ::getenv("TMPDIR");
    if (old) old_ = old;
    had_ = old != nullptr;
    ::setenv("TMPDIR", dir_.path().c_str(), 1);
  }
  ~ScratchTmpdir() {
    if (had_)
      ::setenv("TMPDIR", old_.c_str(), 1);
    else
      ::unsetenv("TMPDIR");
  }
  std::vector<std::filesystem::path> left() const { return testing::files_in(dir_.path()); }

 private:
  TempDir dir_;
  std::string old_;
  bool had_ = false;
};

void expect_nothing_left(const ScratchTmpdir& tmp, const Repetition& r) {
  EXPECT_EQ(r.isolation.value("stray_processes", -1), 0) << r.isolation.dump();
  EXPECT_TRUE(tmp.left().empty()) << "left in TMPDIR: " << tmp.left().front();
}

std::vector<std::string> order_of(const Repetition& r, int user) {
  return r.details.at("users").at(user).at("order").get<std::vector<std::string>>();
}

TEST(Sdet, EachUserRunsEachBundledScriptOnceInItsOwnOrder) {
  TempDir out;
  ScratchTmpdir tmp;
  const auto b = run_bundle(out.path(), "--workload sdet --repetitions 1 --param sdet.users=3");
  const auto& in = b.instances.at(0);
  EXPECT_EQ(in.params.at("scripts"), 12) << "the default is the bundled set's size";
  for (const auto& r : {*in.warmup, in.repetitions.at(0)}) {
    ASSERT_TRUE(r.ok()) << r.reason;
    EXPECT_EQ(metric(r, "scripts"), 3 * 12);
    EXPECT_EQ(metric(r, "operations"), metric(r, "scripts"));
    const double elapsed = metric(r, "elapsed_s");
    EXPECT_NEAR(metric(r, "scripts_per_hour"), metric(r, "scripts") / elapsed * 3600,
                1e-9 * metric(r, "scripts_per_hour"));
    EXPECT_GT(metric(r, "script_time_p50_ms"), 0);
    EXPECT_LE(metric(r, "script_time_p50_ms"), metric(r, "script_time_max_ms"));
    // At least half the scripts take p50 or more, and each user's 12 run one after another within
    // elapsed_s: p50 <= 2 x elapsed_s / 12.
    EXPECT_LE(metric(r, "script_time_p50_ms") / 1e3, 2 * elapsed / 12 * 1.0001);
    EXPECT_LE(metric(r, "script_time_max_ms") / 1e3, elapsed);
    EXPECT_GT(metric(r, "user_s") + metric(r, "system_s"), 0);
    EXPECT_NEAR(metric(r, "cpu_pct"), (metric(r, "user_s") + metric(r, "system_s")) / elapsed * 100,
                1e-9 * metric(r, "cpu_pct"));
    EXPECT_GT(metric(r, "context_switches"), 3 * 12) << "a script waits for its commands";
    const auto& users = r.details.at("users");
    ASSERT_EQ(users.size(), 3u);
    std::set<std::vector<std::string>> orders;
    for (int u = 0; u < 3; ++u) {
      const auto order = order_of(r, u);
      EXPECT_EQ(std::set<std::string>(order.begin(), order.end()), kBundled) << "user " << u;
      EXPECT_EQ(order.size(), 12u);
      EXPECT_LE(users.at(u).at("elapsed_s").get<double>(), elapsed * 1.000001);
      orders.insert(order);
    }
    EXPECT_EQ(orders.size(), 3u) << "each user has its own order";
    EXPECT_EQ(r.details.at("script_set").at("scripts"), 12);
    // The data is the cache's, reused by the next run; the scratch directory goes.
    EXPECT_TRUE(std::filesystem::is_regular_file(r.details.at("data").at("path").get<std::string>() +
                                                 "/text/chapter-00.txt"));
    expect_nothing_left(tmp, r);
  }
  // The order is the seed's, the same in every repetition.
  for (int u = 0; u < 3; ++u) EXPECT_EQ(order_of(*in.warmup, u), order_of(in.repetitions.at(0), u));
  EXPECT_EQ(testing::descendant_pids(), std::vector<pid_t>{});
}

TEST(Sdet, SweepOverUsersGivesOneInstancePerValueAndTheSeedSetsTheOrder) {
  TempDir out;
  ScratchTmpdir tmp;
  const auto b = run_bundle(
      out.path(), "--workload sdet --repetitions 1 --param 'sdet.users=[1,2,4]' --param sdet.scripts=14");
  ASSERT_EQ(b.instances.size(), 3u);
  std::vector<std::string> first_user_order;
  for (const auto& in : b.instances) {
    const int users = in.params.at("users");
    const auto& r = in.repetitions.at(0);
    ASSERT_TRUE(r.ok()) << users << " users: " << r.reason;
    EXPECT_EQ(metric(r, "scripts"), users * 14);
    // 14 scripts: a whole shuffle of the 12, then 2 of the next.
    const auto order = order_of(r, 0);
    ASSERT_EQ(order.size(), 14u);
    EXPECT_EQ(std::set<std::string>(order.begin(), order.begin() + 12), kBundled);
    // User 0's order depends on the seed and its number only, not on how many others there are.
    if (first_user_order.empty()) first_user_order = order;
    EXPECT_EQ(order, first_user_order) << users << " users";
    expect_nothing_left(tmp, r);
  }
  const auto other =
      run_bundle(out.path() / "seed2",
                 "--workload sdet --repetitions 1 --param sdet.users=1 --param sdet.scripts=14 "
                 "--param sdet.seed=2");
  EXPECT_NE(order_of(other.instances.at(0).repetitions.at(0), 0), first_user_order);
}

TEST(Sdet, AFailingScriptFailsTheRunNamingTheScriptAndTheUser) {
  TempDir out, scripts;
  ScratchTmpdir tmp;
  testing::spit(scripts.path() / "broken", "echo \"broken in user $SDET_USER\" >&2\nexit 3\n");
  // 13 scripts of a set of 13: every user runs `broken` once.
  const auto b = run_bundle(out.path(),
                            "--workload sdet --repetitions 1 --param sdet.users=2 --param sdet.scripts=13 "
                            "--param sdet.script_dir=" +
                                scripts.path().string(),
                            1);
  const auto& in = b.instances.at(0);
  for (const auto& r : {*in.warmup, in.repetitions.at(0)}) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.reason.rfind("sdet user ", 0), 0u) << r.reason;
    EXPECT_NE(r.reason.find("script 'broken' (user "), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("failed, exit status 3: broken in user "), std::string::npos) << r.reason;
    expect_nothing_left(tmp, r);
  }
  EXPECT_EQ(testing::descendant_pids(), std::vector<pid_t>{});
}

TEST(Sdet, AKilledUserFailsItsRepetitionAndLeavesNothing) {
  TempDir out;
  ScratchTmpdir tmp;
  auto r = testing::run_and_kill(
      out.path(), "--workload sdet --repetitions 2 --param sdet.users=2 --param sdet.scripts=24",
      "schedlab-sdet");
  ASSERT_TRUE(r.killed) << "no user process was seen\n" << r.outcome.out;
  EXPECT_EQ(r.outcome.code, 1) << r.outcome.out;
  const auto& in = r.bundle.instances.at(0);
  std::vector<Repetition> all{*in.warmup};
  all.insert(all.end(), in.repetitions.begin(), in.repetitions.end());
  int failed = 0;
  for (const auto& rep : all) {
    EXPECT_EQ(rep.isolation.value("stray_processes", -1), 0) << rep.isolation.dump();
    if (rep.ok()) {
      EXPECT_EQ(metric(rep, "scripts"), 2 * 24);
      continue;
    }
    ++failed;
    EXPECT_EQ(rep.reason.rfind("sdet user ", 0), 0u) << rep.reason;
    EXPECT_NE(rep.reason.find("killed by signal 9 (SIGKILL)"), std::string::npos) << rep.reason;
  }
  EXPECT_EQ(failed, 1);
  EXPECT_TRUE(tmp.left().empty()) << "left in TMPDIR: " << tmp.left().front();
  EXPECT_EQ(testing::descendant_pids(), std::vector<pid_t>{});
}

TEST(Sdet, NoScriptStartsAfterTheTimeLimit) {
  TempDir out;
  ScratchTmpdir tmp;
  // Far more scripts than fit in a second.
  const auto b =
      run_bundle(out.path(),
                 "--workload sdet --repetitions 1 --param sdet.users=1 --param sdet.scripts=100000 "
                 "--param sdet.max_duration_s=1",
                 1);
  const auto& r = b.instances.at(0).repetitions.at(0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.reason.find("the time limit came before script '"), std::string::npos) << r.reason;
  EXPECT_LT(r.duration_s, 10) << "the workload stops itself, the runner's limit is 120 s";
  expect_nothing_left(tmp, r);
}

TEST(Sdet, ExportWritesWhatAShellNeedsToRunTheSameWork) {
  TempDir out, exported;
  ScratchTmpdir tmp;
  const auto b = run_bundle(out.path(),
                            "--workload sdet --repetitions 1 --param sdet.users=2 --param sdet.scripts=3 "
                            "--param sdet.export_dir=" +
                                exported.path().string());
  const auto& r = b.instances.at(0).repetitions.at(0);
  ASSERT_TRUE(r.ok()) << r.reason;
  for (int u = 0; u < 2; ++u) {
    const auto text = testing::slurp(exported.path() / "orders" / ("user-" + std::to_string(u)));
    std::string want;
    for (const auto& s : order_of(r, u)) want += s + "\n";
    EXPECT_EQ(text, want) << "user " << u;
  }
  for (const auto& s : kBundled) EXPECT_TRUE(std::filesystem::exists(exported.path() / "scripts" / s)) << s;
  EXPECT_TRUE(std::filesystem::exists(exported.path() / "data" / "text" / "chapter-07.txt"));
  EXPECT_EQ(b.instances.at(0).params.at("export_dir"), exported.path().string());
}

TEST(Sdet, BadInputIsExitTwo) {
  expect_bad_input("--workload sdet --param sdet.users=0", "sdet.users: must be between 1 and 1024");
  expect_bad_input("--workload sdet --param sdet.scripts=0", "sdet.scripts: must be between 1 and 1000000");
  expect_bad_input("--workload sdet --param sdet.seed=-1", "sdet.seed: must be between 0 and 4294967295");
  expect_bad_input("--workload sdet --param sdet.max_duration_s=0", "sdet.max_duration_s: must be between 1");
  expect_bad_input("--workload sdet --param sdet.placement=same-thread",
                   "same-thread applies to tbench only");
  expect_bad_input("--workload sdet --param sdet.script_dir=/nonexistent/sdet",
                   "sdet.script_dir: /nonexistent/sdet is not a directory");
  TempDir clash;
  testing::spit(clash.path() / "edit", "true\n");
  expect_bad_input("--workload sdet --param sdet.script_dir=" + clash.path().string(),
                   "sdet.script_dir: 'edit' has the name of a bundled script");
  expect_bad_input("--workload sdet --param sdet.export_dir=/nonexistent/a/b",
                   "sdet.export_dir: neither /nonexistent/a/b nor its parent is a directory");
}

TEST(Sdet, WorkloadsListsItsParametersAndMetrics) {
  auto o = testing::schedlab("workloads");
  ASSERT_EQ(o.code, 0) << o.out;
  for (const std::string s :
       {"sdet 1.0.0", "sdet.users", "sdet.scripts", "sdet.seed", "sdet.max_duration_s", "sdet.script_dir",
        "sdet.export_dir", "scripts_per_hour *", "script_time_p50_ms"})
    EXPECT_NE(o.out.find(s), std::string::npos) << s << "\n" << o.out;
}

}  // namespace
}  // namespace schedlab
