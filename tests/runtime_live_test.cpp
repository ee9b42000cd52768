// Runtime configurations applied on the running kernel through the binary: refusals before any trial,
// a known effect (the workload cgroup's CPU bandwidth cut to half a CPU doubles a CPU-bound yield loop's
// wall time), everything restored afterwards, and what a killed schedlab left restored by the next start.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "core/host_paths.hpp"
#include "runtime/cpu_cgroup.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

using testing::files_in;
using testing::schedlab;
using testing::TempDir;

const std::string kYield = "run --workload yield --no-counters --settle-timeout 0 ";

std::vector<std::filesystem::path> leftover_groups() {
  std::string why;
  auto ctl = runtime::find_cpu_controller(HostPaths::live(), why);
  std::vector<std::filesystem::path> out;
  if (!ctl) return out;
  for (const auto& p : files_in(ctl->parent))
    if (p.filename().string().rfind("schedlab-runtime-", 0) == 0) out.push_back(p);
  return out;
}

void expect_refused(const std::string& args, const std::string& message) {
  TempDir out, cache;
  auto o =
      schedlab(kYield + args + " --out " + out.path().string() + " --cache-dir " + cache.path().string());
  EXPECT_EQ(o.code, 2) << args << "\n" << o.out;
  EXPECT_NE(o.out.find(message), std::string::npos) << args << "\n" << o.out;
  EXPECT_TRUE(files_in(out.path()).empty()) << "something was written for: " << args;
  EXPECT_TRUE(files_in(cache.path() / "runtime").empty()) << "a journal was left for: " << args;
}

TEST(RuntimeLive, WhatTheKernelRefusesIsAnErrorBeforeAnyTrial) {
  if (std::filesystem::exists("/sys/kernel/sched_ext"))
    GTEST_SKIP() << "this kernel has sched_ext; the refusal is for kernels without it";
  expect_refused("--configuration eevdf --configuration scx:fifo",
                 "scheduler scx:fifo: this kernel has no sched_ext (CONFIG_SCHED_CLASS_EXT)");
  // A tunable or feature debugfs does not let us write (absent here, or locked down) is named with its path.
  std::string error;
  if (!write_kernel_file("/sys/kernel/debug/sched/base_slice_ns",
                         read_line("/sys/kernel/debug/sched/base_slice_ns").value_or("x"), error)) {
    expect_refused("--configuration eevdf --configuration name=short,tunable.base_slice_ns=1000000",
                   "configuration short: tunable base_slice_ns: /sys/kernel/debug/sched/base_slice_ns");
    expect_refused("--configuration eevdf --configuration name=nolag,feature=NO_PLACE_LAG",
                   "configuration nolag: sched features: /sys/kernel/debug/sched/features");
  }
  expect_refused("--configuration name=a,sysctl.kernel.sched_nosuch=1 --configuration eevdf",
                 "configuration a: sysctl kernel.sched_nosuch: /proc/sys/kernel/sched_nosuch");
  expect_refused("--configuration eevdf --configuration eevdf", "the name eevdf is given twice");
  expect_refused("--configuration eevdf --versus yield.threads=2", "--versus and --configuration");
  // The sysctl that the first configuration set was restored when the second was refused.
  EXPECT_TRUE(leftover_groups().empty());
}

// Two sides inside one invocation: the same yield loop with and without a 50 ms / 100 ms quota. A loop that
// never sleeps runs half of each period under the quota, so its wall time per yield about doubles.
TEST(RuntimeLive, HalfACpuOfBandwidthDoublesAYieldLoopAndTheDiffSaysWorse) {
  std::string why;
  if (!runtime::find_cpu_controller(HostPaths::live(), why)) GTEST_SKIP() << why;
  TempDir out, cache;
  const auto quota_before = read_line("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  auto o = schedlab(kYield +
                    "--param yield.yields=600000 --repetitions 2 --trials 8 --seed 20 "
                    "--configuration name=full --configuration name=half,cpu.max=50000/100000 --out " +
                    out.path().string() + " --cache-dir " + cache.path().string());
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("configuration half: applied in"), std::string::npos) << o.out;
  auto dirs = files_in(out.path());
  ASSERT_EQ(dirs.size(), 1u);
  const auto dir = dirs.front();
  auto record = nlohmann::json::parse(testing::slurp(dir / "experiment.json"));
  EXPECT_EQ(record["configurations"]["b"]["name"], "half");
  ASSERT_EQ(record["pairs"].size(), 8u);
  for (const auto& pair : record["pairs"]) EXPECT_GT(pair["switch_ms"][1].get<double>(), 0) << pair.dump();
  // Each trial of the half side ran in the group, throttled, and says so; the full side carries no cgroup.
  for (const auto& bundle_path : files_in(dir / "b")) {
    auto b = nlohmann::json::parse(testing::slurp(bundle_path));
    EXPECT_EQ(b["label"], "half");
    const auto& sw = b["environment"]["runtime_switch"];
    EXPECT_GT(sw["cpu_stat"]["nr_throttled"].get<long>(), 0) << sw.dump();
    EXPECT_EQ(
        b["configuration"]["runtime"]["read_back"].value(
            "cpu.cfs_quota_us", b["configuration"]["runtime"]["read_back"].value("cpu.max", std::string())),
        b["configuration"]["runtime"]["read_back"].contains("cpu.max") ? "50000 100000" : "50000");
  }
  std::string hash_a, hash_b;
  for (const auto& bundle_path : files_in(dir / "a")) {
    auto a = nlohmann::json::parse(testing::slurp(bundle_path));
    EXPECT_FALSE(a["environment"]["runtime_switch"].contains("cgroup"));
    hash_a = a["configuration"]["hash"];
  }
  hash_b = nlohmann::json::parse(testing::slurp(files_in(dir / "b").front()))["configuration"]["hash"];
  EXPECT_NE(hash_a, hash_b) << "the configuration hash must tell the sides apart";

  auto diff = testing::sh(std::string(SCHEDLAB_BINARY) + " diff --json " + (dir / "a").string() + " " +
                          (dir / "b").string());
  ASSERT_EQ(diff.code, 0) << diff.out;
  auto j = nlohmann::json::parse(diff.out.substr(diff.out.find('{')));
  const auto& c = j["instances"][0]["metrics"][0]["comparisons"][0];
  EXPECT_EQ(j["instances"][0]["metrics"][0]["name"], "ns_per_yield");
  EXPECT_EQ(c["verdict"], "worse") << c.dump();
  // About twice: +100% with room for a loaded machine (the full side slowed by others, the half side's
  // first period partly used).
  EXPECT_GT(c["shift_pct"].get<double>(), 50) << c.dump();
  EXPECT_LT(c["shift_pct"].get<double>(), 150) << c.dump();

  EXPECT_TRUE(leftover_groups().empty());
  EXPECT_EQ(read_line("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), quota_before);
  EXPECT_TRUE(files_in(cache.path() / "runtime").empty()) << "the restore journal is gone once restored";
}

// A schedlab killed with SIGKILL cannot restore; the next start finds its journal and does.
TEST(RuntimeLive, WhatAKilledSchedlabLeftChangedTheNextStartRestores) {
  const std::filesystem::path knob = "/proc/sys/kernel/sched_rr_timeslice_ms";
  const auto original = read_line(knob);
  ASSERT_TRUE(original) << knob;
  const std::string changed = *original == "50" ? "60" : "50";
  // Never leave the machine changed, also when an assertion below ends the test early.
  struct PutBack {
    std::filesystem::path knob;
    std::string value;
    ~PutBack() {
      std::string error;
      if (read_line(knob) != value) write_kernel_file(knob, value, error);
    }
  } put_back{knob, *original};
  TempDir out, cache;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::execl(SCHEDLAB_BINARY, SCHEDLAB_BINARY, "run", "--workload", "yield", "--no-counters",
            "--settle-timeout", "0", "--param", "yield.yields=100000000", "--param", "yield.duration_s=60",
            "--repetitions", "1", "--configuration",
            ("name=rr,sysctl.kernel.sched_rr_timeslice_ms=" + changed).c_str(), "--out", out.path().c_str(),
            "--cache-dir", cache.path().c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait until the trial runs under the configuration: the knob changed and the journal written, seen
  // five times in a row (the rehearsal before the trial holds them for a millisecond only).
  int seen = 0;
  for (int i = 0; i < 300 && seen < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const bool now = read_line(knob) == changed && files_in(cache.path() / "runtime").size() == 1;
    seen = now ? seen + 1 : 0;
  }
  const bool applied = seen >= 5;
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(applied) << "the run never applied its configuration";
  EXPECT_EQ(read_line(knob), changed) << "SIGKILL cannot restore: the value stays until the next start";
  auto next = schedlab(kYield + "--param yield.yields=1000 --repetitions 1 --out " + out.path().string() +
                       " --cache-dir " + cache.path().string());
  EXPECT_EQ(next.code, 0) << next.out;
  EXPECT_NE(next.out.find("restored what schedlab pid " + std::to_string(pid) + " left changed"),
            std::string::npos)
      << next.out;
  EXPECT_NE(next.out.find("sysctl kernel.sched_rr_timeslice_ms"), std::string::npos) << next.out;
  EXPECT_EQ(read_line(knob), original);
  EXPECT_TRUE(files_in(cache.path() / "runtime").empty());
}

}  // namespace
}  // namespace schedlab
