#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "collector/runner/memory_limit.hpp"
#include "collector/runner/repetition.hpp"
#include "collector/runner/runner.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "test_util.hpp"

namespace schedlab {

// Readable test names in ctest's listing.
inline void PrintTo(IsolationMode mode, std::ostream* os) {
  *os << (mode == IsolationMode::kCgroup         ? "cgroup"
          : mode == IsolationMode::kProcessGroup ? "process-group"
                                                 : "auto");
}

namespace {

using testing::process_alive;

// Workloads that exercise the runner's edges. They run in the runner's child process and
// report through the same channel as real workloads.
class ScriptedWorkload : public Workload {
 public:
  explicit ScriptedWorkload(std::function<WorkloadResult()> body) : body_(std::move(body)) {}
  std::string name() const override { return "scripted"; }
  std::string version() const override { return "0"; }
  std::string summary() const override { return "test"; }
  std::string experiment() const override { return "test"; }
  std::vector<ParamSpec> params() const override { return {}; }
  std::vector<MetricDesc> metrics() const override { return {}; }
  std::map<std::string, std::map<std::string, std::string>> quick_instances() const override { return {}; }
  void validate(const ParamValues&, const WorkloadContext&) const override {}
  WorkloadResult run(const ParamValues&, const WorkloadContext&) override { return body_(); }

 private:
  std::function<WorkloadResult()> body_;
};

// The pid file lets the test find the grandchild after the repetition ended.
WorkloadResult spawn_daemon_grandchild(const std::filesystem::path& pid_file) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();  // leaves the process group: only a cgroup or a subreaper sweep still finds it
    testing::spit(pid_file, std::to_string(::getpid()));
    for (;;) ::pause();
  }
  while (!std::filesystem::exists(pid_file) || testing::slurp(pid_file).empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return {};
}

Repetition run(ScriptedWorkload& w, IsolationMode mode, double timeout_s = 30,
               std::optional<std::uint64_t> memory_limit = std::nullopt,
               std::optional<WorkloadUser> run_as = std::nullopt) {
  ParamValues params = nlohmann::json::object();
  WorkloadContext ctx;
  RepetitionRequest req;
  req.workload = &w;
  req.params = &params;
  req.context = &ctx;
  req.timeout_s = timeout_s;
  req.isolation = mode;
  req.leaf_name = "schedlab-test-" + std::to_string(::getpid());
  req.memory_limit_bytes = memory_limit;
  req.run_as = run_as;
  return run_repetition(req);
}

// Touches `bytes` of fresh anonymous memory a MiB at a time (mmap, not malloc: no allocator, ASan's
// included, holds it back or hands back pages already counted elsewhere).
void fill_memory(std::size_t bytes) {
  constexpr std::size_t kChunk = 1 << 20;
  for (std::size_t done = 0; done < bytes; done += kChunk) {
    void* p = ::mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    std::memset(p, 0x5a, kChunk);
  }
}

class RunnerIsolation : public ::testing::TestWithParam<IsolationMode> {
 protected:
  void SetUp() override {
    if (GetParam() == IsolationMode::kCgroup) {
      try {
        make_isolation(IsolationMode::kCgroup, "schedlab-probe-" + std::to_string(::getpid()));
      } catch (const std::exception& e) {
        GTEST_SKIP() << "no writable cgroup v2 hierarchy here: " << e.what();
      }
    }
  }
};

TEST_P(RunnerIsolation, ReturnsTheWorkloadsMetrics) {
  ScriptedWorkload w([] {
    WorkloadResult r;
    r.metrics["answer"] = {42, "count"};
    r.details = {{"pid", ::getpid()}};
    return r;
  });
  auto rep = run(w, GetParam());
  ASSERT_EQ(rep.status, "ok") << rep.reason;
  EXPECT_EQ(rep.metrics.at("answer").value, 42);
  EXPECT_NE(rep.details.at("pid").get<int>(), ::getpid());  // it ran in a child
  EXPECT_EQ(rep.isolation.at("mode"), GetParam() == IsolationMode::kCgroup ? "cgroup" : "process-group");
  if (GetParam() == IsolationMode::kCgroup) {
    EXPECT_TRUE(rep.isolation.at("cpu_stat").contains("usage_usec"));
  }
}

TEST_P(RunnerIsolation, TimeoutKillsTheWorkload) {
  ScriptedWorkload w([]() -> WorkloadResult {
    for (;;) ::pause();
  });
  auto t0 = std::chrono::steady_clock::now();
  auto rep = run(w, GetParam(), 0.5);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(rep.status, "timeout");
  EXPECT_NE(rep.reason.find("time limit of 0.5"), std::string::npos) << rep.reason;
  EXPECT_GE(rep.duration_s, 0.5);
}

TEST_P(RunnerIsolation, DaemonisedGrandchildDiesWhenTheWorkloadReturns) {
  testing::TempDir dir;
  auto pid_file = dir.path() / "grandchild.pid";
  ScriptedWorkload w([&] { return spawn_daemon_grandchild(pid_file); });
  auto rep = run(w, GetParam());
  EXPECT_EQ(rep.status, "ok") << rep.reason;
  pid_t grandchild = std::stoi(testing::slurp(pid_file));
  EXPECT_FALSE(process_alive(grandchild)) << "grandchild " << grandchild << " survived";
  EXPECT_EQ(rep.isolation.at("stray_processes"), 1);
}

TEST_P(RunnerIsolation, DaemonisedGrandchildDiesOnTimeout) {
  testing::TempDir dir;
  auto pid_file = dir.path() / "grandchild.pid";
  ScriptedWorkload w([&]() -> WorkloadResult {
    spawn_daemon_grandchild(pid_file);
    for (;;) ::pause();
  });
  auto rep = run(w, GetParam(), 1.0);
  EXPECT_EQ(rep.status, "timeout");
  pid_t grandchild = std::stoi(testing::slurp(pid_file));
  EXPECT_FALSE(process_alive(grandchild)) << "grandchild " << grandchild << " survived";
}

// RELIABILITY.md, faults: a workload stopped by SIGSTOP (a debugger, a stray `kill -STOP`) never returns;
// its time limit still kills it and the child it stopped too.
TEST_P(RunnerIsolation, AStoppedWorkloadAndItsStoppedChildDieAtTheTimeLimit) {
  testing::TempDir dir;
  auto pid_file = dir.path() / "child.pid";
  ScriptedWorkload w([&]() -> WorkloadResult {
    const pid_t child = ::fork();
    if (child == 0) {
      ::raise(SIGSTOP);
      ::_exit(0);
    }
    testing::spit(pid_file, std::to_string(child));
    ::raise(SIGSTOP);
    return {};
  });
  auto rep = run(w, GetParam(), 1.0);
  EXPECT_EQ(rep.status, "timeout") << rep.reason;
  const pid_t child = std::stoi(testing::slurp(pid_file));
  EXPECT_FALSE(process_alive(child)) << "stopped child " << child << " survived";
}

// RELIABILITY.md, faults: a workload that fills its memory dies at its repetition's memory limit (the
// kernel's OOM killer in the repetition's memory cgroup), the child it started dies with it, the reason
// says so, and the next repetition runs under the same limit. Without the limit the workload would touch
// 1 GiB and return ok: the test fails.
TEST_P(RunnerIsolation, AWorkloadFillingItsMemoryDiesAtItsLimitWithItsChildAndTheNextRunsOn) {
  std::string why;
  if (!find_memory_controller(HostPaths::live(), why)) GTEST_SKIP() << why;
  constexpr std::uint64_t kLimit = 64 << 20;
  testing::TempDir dir;
  const auto pid_file = dir.path() / "grandchild.pid";
  ScriptedWorkload hog([&]() -> WorkloadResult {
    spawn_daemon_grandchild(pid_file);
    fill_memory(std::size_t{1} << 30);
    return {};
  });
  const auto rep = run(hog, GetParam(), 60, kLimit);
  EXPECT_EQ(rep.status, "failed");
  EXPECT_EQ(rep.reason.rfind("memory limit of 64 MiB reached: the kernel's OOM killer killed ", 0), 0u)
      << rep.reason;
  const pid_t grandchild = std::stoi(testing::slurp(pid_file));
  EXPECT_FALSE(process_alive(grandchild)) << "grandchild " << grandchild << " survived";
  ASSERT_TRUE(rep.isolation.contains("memory_limit")) << rep.isolation.dump();
  const auto& limit = rep.isolation.at("memory_limit");
  EXPECT_EQ(limit.at("bytes"), kLimit);
  EXPECT_GE(limit.at("oom_kills").get<long>(), 1) << limit.dump();
  if (limit.contains("peak_bytes")) {
    EXPECT_LE(limit.at("peak_bytes").get<std::uint64_t>(), kLimit) << limit.dump();
    EXPECT_GE(limit.at("peak_bytes").get<std::uint64_t>(), kLimit / 2) << limit.dump();
  }
  EXPECT_FALSE(std::filesystem::exists(limit.at("cgroup").get<std::string>())) << "its memory cgroup is left";

  ScriptedWorkload modest([] {
    fill_memory(8 << 20);
    return WorkloadResult{};
  });
  const auto next = run(modest, GetParam(), 60, kLimit);
  EXPECT_EQ(next.status, "ok") << next.reason;
  EXPECT_EQ(next.isolation.at("memory_limit").at("oom_kills"), 0) << next.isolation.dump();
}

// RELIABILITY.md, security: under a root runner the workload's own process runs as the workload user,
// with none of root's groups, while the runner keeps root for its cgroups and counters; a daemonised
// child it starts is still killed.
TEST_P(RunnerIsolation, AWorkloadThatNeedsNoPrivilegeRunsAsTheWorkloadUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change user";
  const auto nobody = resolve_workload_user("nobody", "test");
  testing::TempDir dir;
  ::chmod(dir.path().c_str(), 0777);
  const auto pid_file = dir.path() / "grandchild.pid";
  ScriptedWorkload w([&] {
    spawn_daemon_grandchild(pid_file);
    WorkloadResult r;
    r.details = {{"uid", ::getuid()},
                 {"euid", ::geteuid()},
                 {"gid", ::getgid()},
                 {"groups", ::getgroups(0, nullptr)},
                 {"root_file", ::access("/root", W_OK) == 0}};
    return r;
  });
  const auto rep = run(w, GetParam(), 30, std::nullopt, nobody);
  ASSERT_EQ(rep.status, "ok") << rep.reason;
  EXPECT_EQ(rep.details.at("uid"), nobody.uid);
  EXPECT_EQ(rep.details.at("euid"), nobody.uid);
  EXPECT_EQ(rep.details.at("gid"), nobody.gid);
  EXPECT_EQ(rep.details.at("groups"), 0);
  EXPECT_EQ(rep.details.at("root_file"), false);
  EXPECT_EQ(rep.isolation.at("user"), "nobody");
  EXPECT_EQ(rep.isolation.at("uid"), nobody.uid);
  EXPECT_FALSE(process_alive(std::stoi(testing::slurp(pid_file))));
}

TEST(WorkloadUser, AnUnknownUserIsRefusedNamingTheOption) {
  try {
    resolve_workload_user("no-such-user-schedlab", "--workload-user");
    ADD_FAILURE() << "an unknown user was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--workload-user: no user 'no-such-user-schedlab' on this machine");
  }
}

TEST(MemoryLimit, SizesAreParsedAsCgroupFilesWriteThemAndNonsenseIsRefusedNamingTheOption) {
  EXPECT_EQ(parse_memory_size("67108864", "--memory-limit"), 67108864u);
  EXPECT_EQ(parse_memory_size("64M", "--memory-limit"), 64u << 20);
  EXPECT_EQ(parse_memory_size("64MiB", "--memory-limit"), 64u << 20);
  EXPECT_EQ(parse_memory_size("2g", "--memory-limit"), 2ull << 30);
  EXPECT_EQ(parse_memory_size("1.5G", "--memory-limit"), 3ull << 29);
  EXPECT_EQ(format_memory_size(64u << 20), "64 MiB");
  EXPECT_EQ(format_memory_size(3ull << 29), "1.5 GiB");
  for (const std::string bad : {"", "M", "12X", "0", "-1", "1..5G", "1e9", "64 M", "99999999999T"}) {
    try {
      parse_memory_size(bad, "--memory-limit");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--memory-limit: '" + bad + "' ", 0), 0u) << e.what();
    }
  }
}

TEST_P(RunnerIsolation, ExceptionBecomesAFailedRepetitionWithItsMessage) {
  ScriptedWorkload w(
      []() -> WorkloadResult { throw std::runtime_error("tree does not build: foo.c:1: error"); });
  auto rep = run(w, GetParam());
  EXPECT_EQ(rep.status, "failed");
  EXPECT_EQ(rep.reason, "tree does not build: foo.c:1: error");
}

TEST_P(RunnerIsolation, CrashIsReportedWithTheSignal) {
  ScriptedWorkload w([]() -> WorkloadResult { std::abort(); });
  auto rep = run(w, GetParam());
  EXPECT_EQ(rep.status, "failed");
  EXPECT_EQ(rep.reason, "workload killed by signal 6 (SIGABRT)");
}

INSTANTIATE_TEST_SUITE_P(Modes, RunnerIsolation,
                         ::testing::Values(IsolationMode::kCgroup, IsolationMode::kProcessGroup),
                         [](const auto& param_info) {
                           return param_info.param == IsolationMode::kCgroup ? "cgroup" : "pgroup";
                         });

TEST(Runner, NoLeafIsLeftBehind) {
  ScriptedWorkload w([] { return WorkloadResult{}; });
  auto rep = run(w, IsolationMode::kAuto);
  if (rep.isolation.at("mode") != "cgroup") GTEST_SKIP() << "no cgroup v2 here";
  EXPECT_FALSE(std::filesystem::exists(rep.isolation.at("cgroup").get<std::string>()));
}

// The runner records what the kernel did around each repetition (issue #31.6, #31.16): a host root
// made of the real captures tests/fixtures/vm-6.18 (topology, load) and vm-6.18-provenance (taint 0,
// clocksource tsc); the test's progress callback then does what a kernel would: sets the WARN taint
// bit during one repetition and switches the clocksource (to kvm-clock, one of the capture's
// available ones) during another.
class TaintingProgress : public Progress {
 public:
  explicit TaintingProgress(std::filesystem::path root) : root_(std::move(root)) {}
  void started(const ProgressState& s) override {
    if (s.trial == 0 && s.repetition == 2) testing::spit(root_ / "proc/sys/kernel/tainted", "512\n");
    if (s.trial == 1 && s.repetition == 1)
      testing::spit(root_ / "sys/devices/system/clocksource/clocksource0/current_clocksource", "kvm-clock\n");
  }
  void finished(const ProgressState&, const Repetition&) override {}
  void message(const std::string&) override {}
  void done() override {}

 private:
  std::filesystem::path root_;
};

TEST(Runner, RecordsTaintAndClocksourceAroundEachRepetition) {
  namespace fs = std::filesystem;
  testing::TempDir root, out;
  const fs::path fixtures = SCHEDLAB_FIXTURES_DIR;
  fs::copy(fixtures / "vm-6.18", root.path(), fs::copy_options::recursive);
  fs::copy(fixtures / "vm-6.18-provenance", root.path(),
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  RunPlan plan;
  plan.instances = {{"yield", "yield", {{"yields", "1000"}}}};
  plan.repetitions = 3;
  plan.trials = 2;
  plan.counters = false;
  plan.isolation = IsolationMode::kProcessGroup;
  plan.settle.max_wait_s = 0;
  plan.out_dir = out.path();
  PreparedRun run(plan, HostPaths::under(root.path()));
  TaintingProgress progress(root.path());
  const auto outcome = execute(run, progress);
  ASSERT_EQ(outcome.bundles.size(), 2u);

  const auto first = load_bundle(outcome.bundles[0]), second = load_bundle(outcome.bundles[1]);
  EXPECT_EQ(first.kernel["taint"], (nlohmann::json{{"value", 0}, {"flags", ""}}));
  const auto& reps =
      first.instances.at(0).repetitions;  // repetition 2 of the progress is the second timed one
  ASSERT_EQ(reps.size(), 3u);
  EXPECT_FALSE(reps[0].kernel.at("tainted"));
  EXPECT_TRUE(reps[1].kernel.at("tainted")) << reps[1].kernel.dump();
  EXPECT_EQ(reps[1].kernel.at("new_taint_flags"), "W");
  EXPECT_EQ(reps[1].kernel["after"]["taint"]["value"], 512);
  EXPECT_FALSE(reps[2].kernel.at("tainted"));
  const auto& during = first.kernel.at("during_trial");
  EXPECT_TRUE(during.at("tainted"));
  EXPECT_EQ(during.at("new_taint_flags"), "W");
  EXPECT_EQ(during.at("clocksources"), nlohmann::json::array({"tsc"}));
  EXPECT_FALSE(during.at("clocksource_changed"));

  // The second trial starts tainted: nothing new happened in it, but its clocksource switched.
  EXPECT_EQ(second.kernel["taint"]["flags"], "W");
  const auto& warmup = *second.instances.at(0).warmup;
  const auto& switched = second.instances.at(0).repetitions.at(0);
  EXPECT_FALSE(warmup.kernel.at("clocksource_changed"));
  EXPECT_TRUE(switched.kernel.at("clocksource_changed"));
  EXPECT_EQ(switched.kernel["after"]["clocksource"], "kvm-clock");
  const auto& later = second.kernel.at("during_trial");
  EXPECT_FALSE(later.at("tainted"));
  EXPECT_EQ(later.at("clocksources"), nlohmann::json::array({"tsc", "kvm-clock"}));
  EXPECT_TRUE(later.at("clocksource_changed"));
}

}  // namespace
}  // namespace schedlab
