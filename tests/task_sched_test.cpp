// /proc/<pid>/sched parsing on real captures: Debian 6.1 and 6.12 under qemu
// (tests/fixtures/debian-*-qemu-smp8, schedstats on, so wait_sum and nr_wakeups_* are there), this machine's
// own file, and broken copies.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "test_util.hpp"
#include "workloads/common/task_sched.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::slurp;

const fs::path kFixtures = SCHEDLAB_FIXTURES_DIR;

class RealTaskSched : public ::testing::TestWithParam<std::string> {};

TEST_P(RealTaskSched, ParsesEveryNumericField) {
  const auto dir = kFixtures / GetParam() / "proc/pid-sched";
  const auto loop = parse_task_sched(slurp(dir / "loop-sh.sched"), "loop-sh.sched");
  // A busy shell loop among 6 on 8 CPUs, 3 s in: it ran and was switched out involuntarily.
  EXPECT_GT(loop.at("se.sum_exec_runtime"), 0);
  EXPECT_GT(loop.at("nr_switches"), 0);
  EXPECT_EQ(loop.at("nr_switches"), loop.at("nr_voluntary_switches") + loop.at("nr_involuntary_switches"));
  EXPECT_TRUE(loop.count("se.nr_migrations"));
  EXPECT_TRUE(loop.count("wait_sum") || loop.count("se.statistics.wait_sum"));
  const auto self = parse_task_sched(slurp(dir / "cat-self.sched"), "cat-self.sched");
  EXPECT_TRUE(self.count("nr_switches"));
}

INSTANTIATE_TEST_SUITE_P(Debian, RealTaskSched,
                         ::testing::Values("debian-6.1-qemu-smp8", "debian-6.12-qemu-smp8"));

TEST(TaskSched, DeltaKeepsCountersAndDropsPointInTimeFields) {
  const auto before =
      parse_task_sched(slurp(kFixtures / "debian-6.1-qemu-smp8/proc/pid-sched/loop-sh.sched"), "6.1");
  auto after = before;
  after["nr_switches"] += 5;
  after["se.vruntime"] += 1000;
  const auto d = task_sched_delta(before, after);
  EXPECT_EQ(d.at("nr_switches"), 5);
  EXPECT_EQ(d.at("se.sum_exec_runtime"), 0);
  EXPECT_EQ(d.at("wait_sum"), 0);
  EXPECT_FALSE(d.count("se.vruntime"));
  EXPECT_FALSE(d.count("se.exec_start"));
  EXPECT_FALSE(d.count("wait_max"));
  EXPECT_FALSE(d.count("se.avg.load_sum"));
}

TEST(TaskSched, ThisMachinesOwnFile) {
  const auto own = read_own_task_sched();
  if (!own) GTEST_SKIP() << "no /proc/thread-self/sched (CONFIG_SCHED_DEBUG off)";
  EXPECT_TRUE(own->count("nr_switches"));
  EXPECT_TRUE(own->count("se.nr_migrations"));
}

TEST(TaskSched, BrokenCopiesNameTheLine) {
  auto text = slurp(kFixtures / "debian-6.12-qemu-smp8/proc/pid-sched/loop-sh.sched");
  text.replace(text.find("nr_switches"), std::string("nr_switches").size(), "");
  auto broken = text;
  const auto at = broken.find(" : ", broken.find("se.nr_migrations"));
  broken.replace(at + 3, 0, "x");
  try {
    parse_task_sched(broken, "broken.sched");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.sched:6:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_task_sched("sh (1, #threads: 1)\n---\n", "empty.sched"), InputError);
}

}  // namespace
}  // namespace schedlab
