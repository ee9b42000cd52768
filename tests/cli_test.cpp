// The schedlab binary's answers to bad input, and its listings.
#include <gtest/gtest.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "core/topology.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

using testing::files_in;
using testing::schedlab;
using testing::TempDir;

// `schedlab run ARGS --out OUT`, which must succeed and write one bundle: that bundle, or nullopt after
// saying why not.
std::optional<Bundle> run_one_bundle(const std::string& args, const std::filesystem::path& out) {
  const auto o = schedlab("run " + args + " --out " + out.string());
  EXPECT_EQ(o.code, 0) << o.out;
  const auto files = files_in(out);
  EXPECT_EQ(files.size(), 1u) << o.out;
  if (o.code != 0 || files.size() != 1) return std::nullopt;
  return load_bundle(files[0]);
}

void expect_bad_input(const std::string& args, const std::string& message) {
  TempDir dir;
  auto out = dir.path() / "out";
  auto o = schedlab(args + " --out " + out.string());
  EXPECT_EQ(o.code, 2) << args << "\n" << o.out;
  EXPECT_NE(o.out.find(message), std::string::npos) << args << "\n" << o.out;
  EXPECT_TRUE(files_in(out).empty()) << "something was written for: " << args;
}

TEST(Cli, BadInputIsOneClearLineExitTwoAndNothingWritten) {
  expect_bad_input("run --workload nosuch", "schedlab: unknown workload 'nosuch' (known: yield, ");
  expect_bad_input("run --workload yield --param yield.threads=x",
                   "yield.threads: expected an integer, got 'x'");
  expect_bad_input("run --workload yield --param yield.nosuch=1", "yield.nosuch: unknown parameter");
  expect_bad_input("run --workload yield --param kernbench.jobs=2",
                   "workload 'kernbench' is not part of this run");
  expect_bad_input("run --workload yield --event cyclez", "--event cyclez: unknown event");
  // libpfm4 knows the event but not the modifier: it cannot encode it, so nothing runs (issue #28).
  expect_bad_input("run --workload yield --event cycles:x",
                   "--event cycles:x: libpfm4 cannot encode 'cycles:x': invalid event attribute");
  expect_bad_input("run --workload yield --profile --profile-event cpu-clock:x",
                   "--profile-event cpu-clock:x: libpfm4 cannot encode");
  // A second value for one parameter would silently replace the first.
  expect_bad_input("run --workload yield --param yield.yields=1000 --param yield.yields=2000",
                   "--param yield.yields=2000: yield.yields is already given (--param yield.yields=1000)");
  if (!read_topology(HostPaths::live()).smt_active())
    expect_bad_input("run --workload yield --param yield.placement=smt-sibling",
                     "placement smt-sibling is not possible here");
  expect_bad_input("run --workload yield --repetitions 0", "--repetitions must be at least 1");
  expect_bad_input("run --workload yield --counter-scope everywhere",
                   "counter scope 'everywhere' is not one of auto, system, cgroup, task");
  expect_bad_input("run --workload yield --attribution system",
                   "--attribution system: the workload alone is counted per cgroup or per task");
  expect_bad_input("run --workload yield --host-label 'rack a'",
                   "--host-label 'rack a': a host label is one word of letters, digits");
  expect_bad_input("run --bogus-flag", "bogus-flag");
}

// RELIABILITY.md, security: `run --workload-user nobody` as root runs yield as nobody, and yield under a
// real-time policy as root with the reason in every repetition.
TEST(Cli, AWorkloadUserRunsWhatNeedsNoPrivilegeAndSaysWhyTheRestRunsAsRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir dir;
  const auto ran = run_one_bundle(
      "--workload yield --repetitions 1 --no-counters --settle-timeout 0 --workload-user nobody "
      "--param yield.yields=20000 --param 'yield.policy=[other,fifo:10]'",
      dir.path());
  ASSERT_TRUE(ran);
  const auto& bundle = *ran;
  ASSERT_EQ(bundle.instances.size(), 2u);
  for (const auto& in : bundle.instances) {
    ASSERT_EQ(in.repetitions.size(), 1u);
    const auto& rep = in.repetitions[0];
    EXPECT_TRUE(rep.ok()) << rep.reason;
    if (in.params.at("policy") == "other") {
      EXPECT_EQ(rep.isolation.value("user", ""), "nobody") << rep.isolation.dump();
    } else {
      EXPECT_EQ(rep.isolation.value("user", ""), "root") << rep.isolation.dump();
      EXPECT_EQ(rep.isolation.value("why_root", ""), "policy=fifo:10: a real-time policy needs CAP_SYS_NICE");
    }
  }
  expect_bad_input("run --workload yield --workload-user no-such-user-schedlab",
                   "--workload-user: no user 'no-such-user-schedlab' on this machine");
}

TEST(Cli, ShowRefusesABrokenBundleNamingIt) {
  TempDir dir;
  auto path = dir.path() / "broken.json";
  testing::spit(path, "{\"schema\": \"schedlab.result/1\", \"run_id\": ");
  auto o = schedlab("show " + path.string());
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.out.find(path.string() + ": not valid JSON (truncated?)"), std::string::npos) << o.out;
}

// An event that encodes but does not open here (no PMU on a VM) is a measurement fact, not bad input:
// the run goes on and records it unsupported with its errno.
TEST(Cli, AnEventThatEncodesButDoesNotOpenIsRecordedNotRefused) {
  TempDir dir;
  const auto ran = run_one_bundle(
      "--workload yield --repetitions 1 --settle-timeout 0 --param yield.yields=20000 "
      "--event cycles:u --event perf::TASK-CLOCK",
      dir.path());
  ASSERT_TRUE(ran);
  const auto& bundle = *ran;
  const auto& counters = bundle.instances.at(0).repetitions.at(0).counters;
  const auto& cycles = counters.at("cycles:u");
  if (!cycles.ok()) {  // this VM: "PMU not available due to virtualization"
    EXPECT_EQ(cycles.status, "unsupported");
    EXPECT_NE(cycles.error_number, 0);
    EXPECT_NE(cycles.reason.find("perf_event_open"), std::string::npos) << cycles.reason;
  }
  EXPECT_TRUE(counters.at("perf::TASK-CLOCK").ok()) << counters.at("perf::TASK-CLOCK").reason;
}

// #22: timed repetitions are counted on the workload's CPUs (a constant cost, what else ran there measured);
// --attribution adds a diagnostic repetition counted on the workload's cgroup, never a timed one.
TEST(Cli, TimedRepetitionsCountOnTheCpusAndAttributionCountsTheCgroupApart) {
  TempDir dir;
  const auto ran = run_one_bundle(
      "--workload yield --repetitions 2 --settle-timeout 0 --param yield.yields=20000 "
      "--param yield.placement=same-cpu --attribution cgroup",
      dir.path());
  ASSERT_TRUE(ran);
  const auto& bundle = *ran;
  const auto& in = bundle.instances.at(0);
  ASSERT_EQ(in.repetitions.size(), 2u);
  for (const auto& rep : in.repetitions) {
    const auto& faults = rep.counters.at("perf::PAGE-FAULTS");
    ASSERT_TRUE(faults.ok()) << faults.reason;
    EXPECT_EQ(faults.scope, "system-cpus");
    EXPECT_EQ(faults.cost, "constant");
    EXPECT_GE(faults.foreign_share, 0);
    // The switches (whose event costs at every switch whatever its scope) and the task clock (on a CPU,
    // its wall time) come from the kernel's accounting of the workload's tree and cgroup.
    const auto& cs = rep.counters.at("perf::CONTEXT-SWITCHES");
    ASSERT_TRUE(cs.ok()) << cs.reason;
    EXPECT_EQ(cs.scope, "task-tree");
    EXPECT_EQ(cs.cost, "none");
    EXPECT_EQ(cs.source, "rusage");
    const auto& clock = rep.counters.at("perf::TASK-CLOCK");
    ASSERT_TRUE(clock.ok()) << clock.reason;
    EXPECT_EQ(clock.scope, "cgroup");
    EXPECT_EQ(clock.source, "cgroup cpu.stat");
    EXPECT_NEAR(clock.value * 1e-9, rep.counter_window.value("workload_s", 0.0), 0.001) << rep.counter_window;
    // same-cpu pins the one yielder: only its CPU is counted.
    ASSERT_TRUE(rep.counter_window.contains("cpus")) << rep.counter_window;
    EXPECT_EQ(rep.counter_window["cpus"].size(), 1u) << rep.counter_window;
    EXPECT_GT(rep.counter_window.value("workload_s", 0.0), 0) << rep.counter_window;
    EXPECT_EQ(rep.counter_window.value("workload_source", ""), "cgroup cpu.stat usage_usec")
        << rep.counter_window;
  }
  ASSERT_EQ(in.diagnostics.size(), 1u);
  const auto& diag = in.diagnostics[0];
  ASSERT_TRUE(diag.ok()) << diag.reason;
  const auto& cs = diag.counters.at("perf::CONTEXT-SWITCHES");
  EXPECT_EQ(cs.scope, "cgroup");
  EXPECT_EQ(cs.cost, "per-switch");
  EXPECT_TRUE(diag.counter_window.empty());
  EXPECT_EQ(in.instrumentation["diagnostic"]["attribution"], "cgroup");
  EXPECT_EQ(in.instrumentation["timed"]["counter_scope"], "auto");
  // The diagnostic repetition never enters the statistics: `show` and `diff` read the timed ones.
  EXPECT_EQ(bundle.instances.size(), 1u);
}

// `show` takes what `diff` takes: a directory of trials (real captures, named -trial0/-trial1 before
// the files were numbered from 1) gets each trial's summary, in the order they ran.
TEST(Cli, ShowOnADirectorySummarisesEachTrial) {
  const auto trials = std::filesystem::path(SCHEDLAB_FIXTURES_DIR) / "profile" / "counters-per-cgroup";
  auto o = schedlab("show " + trials.string());
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(o.out.rfind("directory " + trials.string() + ": 2 bundle(s)\n", 0), 0u) << o.out;
  const auto first = o.out.find("bundle   " + (trials / "20261201T035427Z-0eb284-trial0.json").string());
  const auto second = o.out.find("bundle   " + (trials / "20261201T035427Z-0eb284-trial1.json").string());
  ASSERT_NE(first, std::string::npos) << o.out;
  ASSERT_NE(second, std::string::npos) << o.out;
  EXPECT_LT(first, second) << o.out;
  EXPECT_NE(o.out.find("trial 1/2", first), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("trial 2/2", second), std::string::npos) << o.out;

  TempDir empty;
  auto none = schedlab("show " + empty.path().string());
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_NE(none.out.find(empty.path().string() + ": directory holds no schedlab result bundle"),
            std::string::npos)
      << none.out;
}

// A label is looked up among every bundle under --store: one damaged file there is skipped with a
// warning naming it, instead of failing the lookup of unrelated bundles.
TEST(Cli, AMalformedBundleInTheStoreIsSkippedWithAWarning) {
  TempDir store;
  const auto fixtures = std::filesystem::path(SCHEDLAB_FIXTURES_DIR) / "profile";
  std::filesystem::copy(fixtures / "counters-per-cgroup", store.path() / "a");
  const auto broken = store.path() / "b" / "broken.json";
  std::filesystem::create_directories(broken.parent_path());
  testing::spit(broken, "{\"schema\": \"schedlab.result/1\", \"run_id\": ");
  auto o = schedlab("diff counters-per-cgroup " + (fixtures / "counters-per-cgroup").string() + " --store " +
                    store.path().string());
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("schedlab: warning: " + broken.string() + ": not valid JSON"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("skipped while looking bundles up in " + store.path().string()), std::string::npos)
      << o.out;
  // Given as a side itself, the damaged file is still an error.
  auto direct = schedlab("diff " + broken.string() + " " + (fixtures / "counters-per-cgroup").string());
  EXPECT_EQ(direct.code, 2) << direct.out;
}

TEST(Cli, WorkloadsAndEventsList) {
  auto w = schedlab("workloads");
  EXPECT_EQ(w.code, 0);
  EXPECT_NE(w.out.find("yield.duration_s"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("ns_per_yield *"), std::string::npos) << w.out;
  auto e = schedlab("events");
  EXPECT_EQ(e.code, 0);
  EXPECT_NE(e.out.find("perf::CONTEXT-SWITCHES"), std::string::npos) << e.out;
}

TEST(Cli, InterruptKillsTheWorkloadAndKeepsWhatWasMeasured) {
  TempDir dir;
  // 10^8 yields take over a minute: SIGINT arrives during the warm-up.
  const std::string cmd = std::string(SCHEDLAB_BINARY) +
                          " run --workload yield --repetitions 2 --settle-timeout 0" +
                          " --param yield.yields=100000000 --param yield.duration_s=60 --out " +
                          dir.path().string() + " > " + (dir.path() / "log").string() + " 2>&1 & echo $!";
  auto started = testing::sh(cmd);
  const pid_t pid = std::stoi(started.out);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  for (int i = 0; i < 200 && testing::process_alive(pid); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(testing::process_alive(pid)) << "schedlab did not stop on SIGINT";
  auto bundles = files_in(dir.path());
  std::vector<std::filesystem::path> json;
  for (const auto& f : bundles)
    if (f.extension() == ".json") json.push_back(f);
  ASSERT_EQ(json.size(), 1u) << testing::slurp(dir.path() / "log");
  auto show = schedlab("show " + json[0].string());
  EXPECT_EQ(show.code, 0);
  EXPECT_NE(show.out.find("interrupted by a signal"), std::string::npos) << show.out;
  EXPECT_EQ(testing::threads_named("schedlab-yield"), std::vector<std::string>{});
}

// `run ... 2>&1 | head`: the reader goes away and the next progress line raises SIGPIPE. The run stops
// as on SIGINT and keeps what it measured, instead of dying with no bundle (issue #28).
TEST(Cli, ABrokenPipeStopsTheRunAndKeepsWhatWasMeasured) {
  TempDir dir;
  const auto out = dir.path() / "out";
  const auto rc = dir.path() / "rc";
  // 20000 yields take well under a second; five repetitions give the pipe time to break mid-run.
  testing::sh("( " + std::string(SCHEDLAB_BINARY) +
              " run --workload yield --repetitions 5 --settle-timeout 0 --no-counters"
              " --param yield.yields=20000 --out " +
              out.string() + " 2>&1; echo $? > " + rc.string() + " ) | head -n 1");
  EXPECT_EQ(testing::slurp(rc), "1\n") << "exit code: 1 (interrupted), not death by SIGPIPE (141)";
  const auto files = files_in(out);
  ASSERT_EQ(files.size(), 1u) << "no bundle kept";
  const auto bundle = load_bundle(files[0]);
  ASSERT_EQ(bundle.instances.size(), 1u);
  const auto& in = bundle.instances[0];
  // Where it stops depends on when head exits: after the warm-up (its "ok" line breaks the pipe), or
  // in the middle of a repetition, which is then recorded as interrupted.
  EXPECT_TRUE(in.warmup.has_value());
  EXPECT_LT(in.repetitions.size(), 5u) << "the run went on after the pipe broke";
  for (const auto& rep : in.repetitions) {
    if (!rep.ok()) {
      EXPECT_EQ(rep.reason, "interrupted by a signal to schedlab; the workload was killed");
    }
  }
}

// One numbering for people: files, `show` and the progress lines count trials and repetitions from 1
// (the bundle's `trial` and `index` fields stay 0-based).
TEST(Cli, TrialsAndRepetitionsAreCountedFromOneEverywhereTheyArePrinted) {
  TempDir dir;
  // Every repetition reaches its time limit: the log and the summary both name the failed ones. The
  // traced (diagnostic) repetition after the timed ones is not "rep 3/2".
  auto o = schedlab(
      "run --workload yield --repetitions 2 --trials 2 --settle-timeout 0 --no-counters --timeout 0.3"
      " --param yield.yields=100000000 --param yield.duration_s=60 --trace --out " +
      dir.path().string());
  EXPECT_EQ(o.code, 1) << o.out;
  EXPECT_NE(o.out.find("yield trial 2/2 diagnostic 1: timeout"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("rep 3/2"), std::string::npos) << o.out;
  for (int rep = 1; rep <= 2; ++rep) {
    EXPECT_NE(o.out.find("yield trial 2/2 rep " + std::to_string(rep) + "/2: timeout"), std::string::npos)
        << o.out;
    EXPECT_NE(o.out.find("  repetition " + std::to_string(rep) + ": timeout"), std::string::npos) << o.out;
  }
  EXPECT_EQ(o.out.find("repetition 0:"), std::string::npos) << o.out;
  auto files = files_in(dir.path());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 2u) << o.out;
  for (int trial = 1; trial <= 2; ++trial) {
    const auto& file = files[static_cast<std::size_t>(trial - 1)];
    const std::string suffix = "-trial" + std::to_string(trial) + ".json";
    EXPECT_TRUE(file.string().ends_with(suffix)) << file;
    EXPECT_EQ(load_bundle(file).trial, trial - 1) << "the bundle's index stays 0-based";
    auto show = schedlab("show " + file.string());
    EXPECT_NE(show.out.find(" trial " + std::to_string(trial) + "/2,"), std::string::npos) << show.out;
  }
}

}  // namespace
}  // namespace schedlab
