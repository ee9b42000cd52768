// What ran on the counted CPUs (collector/perf/cpu_window.*), from real captures of this VM's
// /proc/stat and cgroup v1 cpuacct (tests/fixtures/vm-6.18-cpu-window/README.md).
#include <gtest/gtest.h>

#include <filesystem>

#include "collector/perf/cpu_window.hpp"
#include "core/host_paths.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

const std::filesystem::path kFixture = std::filesystem::path(SCHEDLAB_FIXTURES_DIR) / "vm-6.18-cpu-window";
constexpr double kSpinnerCpuS = 0.951703;  // spin.py's own CPU time, pinned to CPU 0

CpuBusy busy(const std::string& when, const std::vector<int>& cpus) {
  std::string why;
  auto b = read_cpu_busy(HostPaths::under(kFixture / when), cpus, why);
  if (!b) throw std::runtime_error(why);
  return *b;
}

TEST(CpuWindow, ReadsTheCpuacctRootFirst) {
  const auto before = busy("before", {0, 1});
  EXPECT_EQ(before.source, "cpuacct");
  EXPECT_DOUBLE_EQ(before.busy_s.at(0), 4552.572597749);
  EXPECT_DOUBLE_EQ(before.busy_s.at(1), 4582.005748165);
  EXPECT_DOUBLE_EQ(before.resolution_s, 0.01);
}

TEST(CpuWindow, ASpinnerBesideBuildsLeavesOtherTasksAThirdOfTheBusyTime) {
  const auto w = make_window(busy("before", {0}), busy("after", {0}), 1.34, kSpinnerCpuS, "spin.py");
  EXPECT_EQ(w.cpus, std::vector<int>{0});
  EXPECT_NEAR(w.busy_s, 1.3396, 1e-4);
  EXPECT_NEAR(w.other_s, 1.3396 - kSpinnerCpuS, 1e-4);
  EXPECT_NEAR(w.other_share, 0.29, 0.005);
  EXPECT_TRUE(w.contaminated);
  const auto j = w.to_json();
  EXPECT_EQ(j["busy_source"], "cpuacct");
  EXPECT_EQ(j["contamination_threshold"], kContaminationShare);
}

TEST(CpuWindow, ProcStatTicksAgreeWithCpuacctWithinTheirResolution) {
  const auto text_before = read_text(kFixture / "before/proc/stat");
  const auto text_after = read_text(kFixture / "after/proc/stat");
  ASSERT_TRUE(text_before && text_after);
  const auto b = busy_from_proc_stat(*text_before, {0, 1}, 100);
  const auto a = busy_from_proc_stat(*text_after, {0, 1}, 100);
  ASSERT_TRUE(b && a);
  const auto cpuacct_before = busy("before", {0, 1}), cpuacct_after = busy("after", {0, 1});
  for (int cpu : {0, 1}) {
    const double ticks = a->at(cpu) - b->at(cpu);
    const double ns = cpuacct_after.busy_s.at(cpu) - cpuacct_before.busy_s.at(cpu);
    EXPECT_NEAR(ticks, ns, 0.02) << "CPU " << cpu;  // a tick (10 ms) at each end
  }
}

TEST(CpuWindow, WithoutCpuacctProcStatIsRead) {
  testing::TempDir root;
  std::filesystem::create_directories(root.path() / "proc");
  std::filesystem::copy_file(kFixture / "before/proc/stat", root.path() / "proc/stat");
  std::string why;
  const auto b = read_cpu_busy(HostPaths::under(root.path()), {0}, why);
  ASSERT_TRUE(b) << why;
  EXPECT_EQ(b->source, "proc-stat");
  EXPECT_GT(b->resolution_s, 0);
}

TEST(CpuWindow, NoSourceSaysWhatEachLacked) {
  testing::TempDir root;
  std::string why;
  EXPECT_FALSE(read_cpu_busy(HostPaths::under(root.path()), {0}, why));
  EXPECT_NE(why.find("no cgroup v1 cpuacct hierarchy"), std::string::npos) << why;
  EXPECT_NE(why.find("stat: unreadable"), std::string::npos) << why;
  EXPECT_FALSE(read_cpu_busy(HostPaths::under(kFixture / "before"), {7}, why));
  EXPECT_NE(why.find("lacks a counted CPU"), std::string::npos) << why;
}

TEST(CpuWindow, WithinTheResolutionNothingIsFlagged) {
  CpuBusy before{"proc-stat", 0.01, {{0, 10.0}}}, after{"proc-stat", 0.01, {{0, 11.0}}};
  // 1 s busy, 0.97 s the workload's: 30 ms of others is within two ticks of 10 ms plus the 3% threshold.
  EXPECT_FALSE(make_window(before, after, 1.0, 0.97, "test").contaminated);
  EXPECT_TRUE(make_window(before, after, 1.0, 0.90, "test").contaminated);
}

}  // namespace
}  // namespace schedlab
