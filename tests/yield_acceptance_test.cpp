// The yield workload's figures checked against independent measurements taken in the same
// test: a bare C loop of the same yields (bench/bare_yield.c) and the kernel's rusage.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <sstream>

#include "cli_util.hpp"
#include "collector/perf/perf_source.hpp"
#include "core/bundle_io.hpp"
#include "core/stats.hpp"
#include "test_util.hpp"
#include "workloads/common/task_setup.hpp"

namespace schedlab {
namespace {

using testing::files_in;
using testing::schedlab;
using testing::sh;
using testing::TempDir;

// key=value pairs printed by bench/bare_yield.
std::map<std::string, double> bare_yield(const std::string& args) {
  auto o = sh(std::string(BARE_YIELD_BINARY) + " " + args);
  EXPECT_EQ(o.code, 0) << o.out;
  std::map<std::string, double> kv;
  std::istringstream in(o.out);
  for (std::string item; in >> item;) {
    auto eq = item.find('=');
    if (eq != std::string::npos) kv[item.substr(0, eq)] = std::stod(item.substr(eq + 1));
  }
  return kv;
}

Bundle run_yield(const TempDir& dir, const std::string& params) {
  auto o = schedlab("run --workload yield --repetitions 3 --settle-timeout 0 --seed 7 --out " +
                    dir.path().string() + " " + params);
  EXPECT_EQ(o.code, 0) << o.out;
  auto files = files_in(dir.path());
  EXPECT_EQ(files.size(), 1u) << o.out;
  if (files.size() != 1) throw std::runtime_error("no bundle");
  auto show = schedlab("show " + files[0].string());
  EXPECT_EQ(show.code, 0) << show.out;
  // The one-line-per-instance table (#21): instance, headline, median, CV, n, status.
  EXPECT_NE(show.out.find("yield     ns_per_yield"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("3 ok"), std::string::npos) << show.out;
  return load_bundle(files[0]);
}

double median_metric(const Instance& in, const std::string& name) {
  std::vector<double> v;
  for (const auto& r : in.repetitions) v.push_back(r.metrics.at(name).value);
  return median(v);
}

// Switches of the whole repetition: the counter against the kernel's rusage of the same tree. Exact only
// where the counter counted the workload's cgroup; a system-scope count (#22's default) also counts what
// else switched on the counted CPUs (idle, kworkers), which on an uncontended yield outnumbers the loop's
// own handful, so callers that compare exactly ask for `--counter-scope cgroup`.
void expect_switch_counter_matches_rusage(const Repetition& r, double rel_tol, double abs_tol) {
  const auto& cs = r.counters.at("perf::CONTEXT-SWITCHES");
  ASSERT_TRUE(cs.ok()) << cs.reason;
  ASSERT_EQ(cs.scope, "cgroup") << "repetition " << r.index;
  double ru =
      r.rusage.at("voluntary_switches").get<double>() + r.rusage.at("involuntary_switches").get<double>();
  EXPECT_NEAR(cs.value, ru, std::max(abs_tol, rel_tol * ru)) << "repetition " << r.index;
}

TEST(YieldAcceptance, AloneMatchesTheBareLoopAndRusage) {
  TempDir dir;
  std::vector<double> bare;
  bare.push_back(bare_yield("1000000").at("ns_per_yield"));
  Bundle b = run_yield(dir, "--counter-scope cgroup");
  bare.push_back(bare_yield("1000000").at("ns_per_yield"));
  bare.push_back(bare_yield("1000000").at("ns_per_yield"));

  ASSERT_EQ(b.instances.size(), 1u);
  const auto& in = b.instances[0];
  ASSERT_TRUE(in.warmup.has_value());
  EXPECT_TRUE(in.warmup->warmup);
  ASSERT_EQ(in.repetitions.size(), 3u);
  EXPECT_TRUE(b.smoke);
  for (const auto& r : in.repetitions) {
    ASSERT_EQ(r.status, "ok") << r.reason;
    EXPECT_EQ(r.metrics.at("yields").value, 1000000);
    // An uncontended yield rarely switches: a handful of switches, compared with a small absolute
    // slack for the switches rusage sees outside the counting window (start-up wait, exit path).
    expect_switch_counter_matches_rusage(r, 0.02, 4);
    for (const char* hw : {"cycles:u", "cycles:k", "instructions:u", "instructions:k"}) {
      const auto& c = r.counters.at(hw);
      if (probe_event(hw).opens) {
        EXPECT_TRUE(c.ok()) << hw;
      } else {
        EXPECT_EQ(c.status, "unsupported") << hw;
        EXPECT_NE(c.error_number, 0) << hw;
      }
    }
  }
  const double ratio = median_metric(in, "ns_per_yield") / median(bare);
  std::cout << "[ measured ] ns_per_yield schedlab/bare = " << ratio << " ("
            << median_metric(in, "ns_per_yield") << " / " << median(bare) << " ns)\n";
  EXPECT_GE(ratio, 0.8);
  EXPECT_LE(ratio, 1.3);
}

TEST(YieldAcceptance, SpinningCompetitorOnTheSameCpu) {
  TempDir dir;
  const int cpu = current_affinity().front();
  std::vector<double> bare_rate;
  auto bare_once = [&] {
    auto kv = bare_yield("2000 1 " + std::to_string(cpu) + " 1");
    bare_rate.push_back(kv.at("involuntary") / kv.at("yields"));
  };
  bare_once();
  Bundle b =
      run_yield(dir,
                "--param yield.yields=2000 --param yield.competitors=1 --param yield.placement=same-cpu "
                "--param yield.duration_s=20");
  bare_once();
  bare_once();
  const auto& in = b.instances[0];
  std::vector<double> rate;
  for (const auto& r : in.repetitions) {
    ASSERT_EQ(r.status, "ok") << r.reason;
    rate.push_back(r.metrics.at("involuntary_switches").value / r.metrics.at("yields").value);
    // The default scope takes switches from the kernel's per-task accounting of the tree (#22: the perf
    // event costs every switch): the loop's and its competitor's, as rusage and the workload count them.
    const auto& cs = r.counters.at("perf::CONTEXT-SWITCHES");
    ASSERT_TRUE(cs.ok()) << cs.reason;
    EXPECT_EQ(cs.scope, "task-tree");
    EXPECT_EQ(cs.cost, "none");
    const double ru =
        r.rusage.at("voluntary_switches").get<double>() + r.rusage.at("involuntary_switches").get<double>();
    EXPECT_EQ(cs.value, ru) << "repetition " << r.index;
    EXPECT_GE(cs.value, r.metrics.at("involuntary_switches").value) << "repetition " << r.index;
    EXPECT_GT(cs.value, 500);  // contended: hundreds of switches
  }
  // The runner killed the competitor with its repetition: no schedlab thread is left anywhere.
  EXPECT_EQ(testing::threads_named("schedlab-"), std::vector<std::string>{});
  const double ratio = median(rate) / median(bare_rate);
  std::cout << "[ measured ] involuntary switches per yield schedlab/bare = " << ratio << " (" << median(rate)
            << " / " << median(bare_rate) << ")\n";
  EXPECT_GE(ratio, 0.8);
  EXPECT_LE(ratio, 1.2);
}

}  // namespace
}  // namespace schedlab
