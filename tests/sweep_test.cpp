#include <gtest/gtest.h>

#include "collector/runner/runner.hpp"
#include "core/error.hpp"

namespace schedlab {
namespace {

TEST(Sweep, ListValuesExpandIntoInstances) {
  auto out = expand_sweeps({{"kernbench", "kernbench", {{"jobs", "[1, 4,0]"}, {"files", "40"}}}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].id, "kernbench.jobs=1");
  EXPECT_EQ(out[1].params.at("jobs"), "4");
  EXPECT_EQ(out[2].id, "kernbench.jobs=0");
  for (const auto& in : out) EXPECT_EQ(in.params.at("files"), "40");
}

TEST(Sweep, SeveralListsGiveTheirProduct) {
  auto out = expand_sweeps({{"yield", "yield", {{"threads", "[1,2]"}, {"competitors", "[0,1]"}}}});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[3].id, "yield.competitors=1,threads=2");
}

TEST(Sweep, PlainValuesStayOneInstance) {
  auto out = expand_sweeps({{"yield", "yield", {{"threads", "2"}}}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, "yield");
}

TEST(Sweep, EmptyListIsBadInput) {
  EXPECT_THROW(expand_sweeps({{"yield", "yield", {{"threads", "[]"}}}}), InputError);
}

TEST(Sweep, AListDefaultSweepsUnlessTheParameterIsGiven) {
  auto out = expand_sweeps(with_default_sweeps({{"micro", "micro", {}}}));
  ASSERT_EQ(out.size(), 8u);  // micro.benchmarks: every primitive and placement of the default
  EXPECT_EQ(out[0].id, "micro.benchmarks=yield");
  EXPECT_EQ(out[1].params.at("benchmarks"), "pipe:same-cpu");
  auto given = expand_sweeps(with_default_sweeps({{"micro", "micro", {{"benchmarks", "futex:same-cpu"}}}}));
  ASSERT_EQ(given.size(), 1u);
  EXPECT_EQ(given[0].id, "micro");
  auto plain = with_default_sweeps({{"yield", "yield", {}}});  // no list default: nothing added
  EXPECT_TRUE(plain.at(0).params.empty());
}

}  // namespace
}  // namespace schedlab
