// The schedlab binary's answers to bad input, and its listings.
#include <gtest/gtest.h>

#include "cli_util.hpp"
#include "core/topology.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

using testing::files_in;
using testing::schedlab;
using testing::TempDir;

void expect_bad_input(const std::string& args, const std::string& message) {
  TempDir dir;
  auto out = dir.path() / "out";
  auto o = schedlab(args + " --out " + out.string());
  EXPECT_EQ(o.code, 2) << args << "\n" << o.out;
  EXPECT_NE(o.out.find(message), std::string::npos) << args << "\n" << o.out;
  EXPECT_TRUE(files_in(out).empty()) << "something was written for: " << args;
}

TEST(Cli, BadInputIsOneClearLineExitTwoAndNothingWritten) {
  expect_bad_input("run --workload nosuch", "schedlab: unknown workload 'nosuch' (known: yield)");
  expect_bad_input("run --workload yield --param yield.threads=x",
                   "yield.threads: expected an integer, got 'x'");
  expect_bad_input("run --workload yield --param yield.nosuch=1", "yield.nosuch: unknown parameter");
  expect_bad_input("run --workload yield --param kernbench.jobs=2",
                   "workload 'kernbench' is not part of this run");
  expect_bad_input("run --workload yield --event cyclez", "--event cyclez: unknown event");
  if (!read_topology(HostPaths::live()).smt_active())
    expect_bad_input("run --workload yield --param yield.placement=smt-sibling",
                     "placement smt-sibling is not possible here");
  expect_bad_input("run --workload yield --repetitions 0", "--repetitions must be at least 1");
  expect_bad_input("run --bogus-flag", "bogus-flag");
}

TEST(Cli, ShowRefusesABrokenBundleNamingIt) {
  TempDir dir;
  auto path = dir.path() / "broken.json";
  testing::spit(path, "{\"schema\": \"schedlab.result/1\", \"run_id\": ");
  auto o = schedlab("show " + path.string());
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.out.find(path.string() + ": not valid JSON (truncated?)"), std::string::npos) << o.out;
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

}  // namespace
}  // namespace schedlab
