// The micro workload through the real schedlab binary: every primitive in a bundle, counters
// per operation, bad parameters, diff of two bundles, and Google Benchmark's JSON round-tripped
// by `schedlab export --format gbench` into Google Benchmark's own tools/compare.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::files_in;
using testing::schedlab;
using testing::TempDir;

const std::vector<std::string> kDefaultBenchmarks{
    "yield",         "pipe:same-cpu",      "pipe:other-core", "futex:same-cpu", "futex:other-core",
    "thread_create", "migrate:other-core", "nanosleep"};

// One run of the micro workload into `out`; returns its bundle's path ("" on failure).
fs::path run_micro(const fs::path& out, const std::string& params, int repetitions = 3) {
  auto o = schedlab("run --workload micro --repetitions " + std::to_string(repetitions) +
                    " --settle-timeout 0 --seed 3 --out " + out.string() + " " + params);
  EXPECT_EQ(o.code, 0) << o.out;
  auto files = files_in(out);
  EXPECT_EQ(files.size(), 1u) << o.out;
  return files.size() == 1 ? files[0] : fs::path();
}

const Instance* instance(const Bundle& b, const std::string& benchmark) {
  for (const auto& in : b.instances)
    if (in.params.at("benchmarks") == benchmark) return &in;
  return nullptr;
}

TEST(Micro, TheDefaultRunHasEveryPrimitiveWithTimesAndCountersPerOperation) {
  TempDir dir;
  const auto path = run_micro(dir.path(), "--param micro.min_time_s=0.02", 2);
  ASSERT_FALSE(path.empty());
  const auto b = load_bundle(path);
  EXPECT_EQ(b.instances.size(), kDefaultBenchmarks.size());
  for (const auto& name : kDefaultBenchmarks) {
    const auto* in = instance(b, name);
    ASSERT_NE(in, nullptr) << name << " is missing";
    EXPECT_EQ(in->id, "micro.benchmarks=" + name);
    ASSERT_EQ(in->repetitions.size(), 2u) << name;
    for (const auto& r : in->repetitions) {
      ASSERT_TRUE(r.ok()) << name << ": " << r.reason;
      EXPECT_GT(r.metrics.at("ns_per_op").value, 0) << name;
      EXPECT_EQ(r.metrics.at("ns_per_op").unit, "ns");
      const double iterations = r.metrics.at("iterations").value;
      EXPECT_GE(iterations, 1) << name;
      // Calibration runs come before the measured run: the total is at least the measured run.
      EXPECT_GE(r.metrics.at("operations").value, iterations) << name;
      const auto& run = r.details.at("gbench").at("benchmarks").at(0);
      EXPECT_EQ(run.at("name").get<std::string>().rfind(name + "/", 0), 0u) << run.dump();
      EXPECT_EQ(run.at("iterations").get<double>(), iterations);
      EXPECT_EQ(run.at("real_time").get<double>(), r.metrics.at("ns_per_op").value);
      for (const auto& [event, c] : r.counters) {
        if (event.size() > 3 && event.substr(event.size() - 3) == "/op") continue;
        const auto per_op = r.counters.find(event + "/op");
        if (!c.ok()) {
          EXPECT_EQ(per_op, r.counters.end()) << event << ": no value, so none per operation";
          continue;
        }
        ASSERT_NE(per_op, r.counters.end()) << name << " " << event;
        EXPECT_DOUBLE_EQ(per_op->second.value, c.value / r.metrics.at("operations").value);
        EXPECT_EQ(per_op->second.unit, c.unit + "/op");
      }
    }
  }
  const auto* sleep = instance(b, "nanosleep");
  ASSERT_NE(sleep, nullptr);
  // A sleep of 100 us cannot return before its absolute deadline.
  EXPECT_GE(sleep->repetitions[0].metrics.at("overshoot_ns").value, 0);
  EXPECT_GE(sleep->repetitions[0].metrics.at("ns_per_op").value, 100000);
  const auto* migrate = instance(b, "migrate:other-core");
  ASSERT_NE(migrate, nullptr);
  // se.nr_migrations needs /proc/<tid>/sched (CONFIG_SCHED_DEBUG); without it the metric is absent.
  const auto& migrate_metrics = migrate->repetitions[0].metrics;
  if (migrate_metrics.count("thread_migrations_per_op")) {
    EXPECT_NEAR(migrate_metrics.at("thread_migrations_per_op").value, 1.0, 0.05)
        << "every sched_setaffinity to the other CPU is one migration";
  }
  EXPECT_TRUE(testing::threads_named("schedlab-micro").empty());
}

TEST(Micro, ASameCpuPipeRoundTripIsTwoContextSwitches) {
  TempDir dir;
  const auto path =
      run_micro(dir.path(), "--param micro.benchmarks=pipe:same-cpu --param micro.min_time_s=0.1");
  ASSERT_FALSE(path.empty());
  const auto b = load_bundle(path);
  ASSERT_EQ(b.instances.size(), 1u);
  for (const auto& r : b.instances[0].repetitions) {
    ASSERT_TRUE(r.ok()) << r.reason;
    // Google Benchmark's counter from the kernel's per-thread counts of both ends.
    const double thread_switches = r.metrics.at("thread_switches_per_op").value;
    EXPECT_GE(thread_switches, 1.5);
    EXPECT_LE(thread_switches, 2.5);
  }
  const auto& cs = b.instances[0].repetitions[0].counters.at("perf::CONTEXT-SWITCHES");
  if (!cs.ok())
    GTEST_SKIP() << "perf::CONTEXT-SWITCHES is " << cs.status << " here (errno " << cs.error_number << ", "
                 << errno_name(cs.error_number) << "): " << cs.reason;
  for (const auto& r : b.instances[0].repetitions) {
    const auto& per_op = r.counters.at("perf::CONTEXT-SWITCHES/op");
    EXPECT_GE(per_op.value, 1.5) << "repetition " << r.index;
    EXPECT_LE(per_op.value, 2.5) << "repetition " << r.index;
  }
}

TEST(Micro, FixedIterationModeRunsExactlyThatMany) {
  TempDir dir;
  const auto path = run_micro(
      dir.path(), "--param micro.benchmarks=[yield,futex:same-cpu] --param micro.iterations=1000", 1);
  ASSERT_FALSE(path.empty());
  const auto b = load_bundle(path);
  ASSERT_EQ(b.instances.size(), 2u);
  for (const auto& in : b.instances)
    for (const auto& r : in.repetitions) {
      ASSERT_TRUE(r.ok()) << r.reason;
      EXPECT_EQ(r.metrics.at("iterations").value, 1000) << in.id;
      EXPECT_EQ(r.metrics.at("operations").value, 1000) << in.id << ": one run, no calibration";
      EXPECT_EQ(r.details.at("mode"), "fixed-iterations");
      EXPECT_NE(
          r.details.at("gbench").at("benchmarks").at(0).at("name").get<std::string>().find("iterations:1000"),
          std::string::npos);
    }
}

void expect_bad_input(const std::string& params, const std::string& message) {
  TempDir dir;
  const auto out = dir.path() / "out";
  auto o = schedlab("run --workload micro --settle-timeout 0 --out " + out.string() + " " + params);
  EXPECT_EQ(o.code, 2) << params << "\n" << o.out;
  EXPECT_NE(o.out.find(message), std::string::npos) << params << "\n" << o.out;
  EXPECT_TRUE(files_in(out).empty()) << "something was written for " << params;
}

TEST(Micro, BadParametersAreExitTwoNamingTheParameter) {
  expect_bad_input("--param micro.benchmarks=nosuch",
                   "micro.benchmarks: unknown benchmark 'nosuch' (known: yield, pipe");
  expect_bad_input("--param micro.benchmarks=[yield,nosuch]", "micro.benchmarks: unknown benchmark 'nosuch'");
  expect_bad_input("--param micro.benchmarks=pipe:nowhere", "micro.benchmarks: unknown placement 'nowhere'");
  expect_bad_input("--param micro.benchmarks=migrate",
                   "micro.benchmarks: migrate needs two CPUs: give a placement, e.g. migrate:other-core");
  expect_bad_input("--param micro.benchmarks=pipe:same-thread",
                   "micro.benchmarks: pipe:same-thread: same-thread");
  expect_bad_input("--param micro.min_time_s=0", "micro.min_time_s: must be between");
  expect_bad_input("--param micro.min_time_s=soon", "micro.min_time_s: expected a number, got 'soon'");
  expect_bad_input("--param micro.iterations=-1", "micro.iterations: must be between 0 and");
}

TEST(Micro, WorkloadsListsItsParametersAndMetrics) {
  auto o = schedlab("workloads");
  ASSERT_EQ(o.code, 0) << o.out;
  for (const std::string s : {"micro 1.0.0", "micro.benchmarks", "micro.min_time_s", "micro.iterations",
                              "micro.sleep_ns", "micro.policy", "micro.nice"})
    EXPECT_NE(o.out.find(s), std::string::npos) << s << "\n" << o.out;
  EXPECT_NE(o.out.find("ns_per_op *"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("micro.benchmarks=pipe:same-cpu"), std::string::npos) << "quick suite instance\n"
                                                                             << o.out;
}

// Two runs (two bundles, as two kernels would give): diff works, and the exported JSON is Google
// Benchmark's own, read by its compare.py.
TEST(Micro, DiffAndExportOfTwoBundlesWithComparePy) {
  TempDir dir;
  const std::string params = "--param micro.benchmarks=[yield,pipe:same-cpu] --param micro.min_time_s=0.02";
  const auto a = run_micro(dir.path() / "a", params);
  const auto b = run_micro(dir.path() / "b", params);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  auto d = schedlab("diff " + a.string() + " " + b.string());
  EXPECT_EQ(d.code, 0) << d.out;
  EXPECT_NE(d.out.find("ns_per_op"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("micro.benchmarks=pipe:same-cpu"), std::string::npos) << d.out;

  std::vector<std::string> exported;
  for (const auto& [side, bundle_path] : {std::pair{"a", a}, std::pair{"b", b}}) {
    const auto file = dir.path() / (std::string(side) + ".gbench.json");
    auto ex = schedlab("export --format gbench " + bundle_path.string() + " -o " + file.string());
    ASSERT_EQ(ex.code, 0) << ex.out;
    exported.push_back(file.string());
    // The round trip: every iteration entry is Google Benchmark's entry of that repetition.
    const auto bundle = load_bundle(bundle_path);
    const auto out = json::parse(testing::slurp(file));
    std::set<std::string> compared;
    for (const auto& e : out.at("benchmarks")) {
      if (e.at("run_type") != "iteration") continue;
      const Repetition* rep = nullptr;
      for (const auto& in : bundle.instances)
        for (const auto& r : in.repetitions)
          if (r.details.at("gbench").at("benchmarks").at(0).at("name") == e.at("name") &&
              r.index == e.at("repetition_index"))
            rep = &r;
      ASSERT_NE(rep, nullptr) << e.dump();
      const auto& original = rep->details.at("gbench").at("benchmarks").at(0);
      for (const char* key : {"name", "run_name", "run_type", "iterations", "real_time", "cpu_time",
                              "time_unit", "thread_switches"})
        EXPECT_EQ(e.at(key), original.at(key)) << key;
      EXPECT_EQ(e.at("repetitions"), 3);
      compared.insert(e.at("name").get<std::string>());
    }
    EXPECT_EQ(compared.size(), 2u) << out.dump(1);
  }

  if (!fs::exists(testing::kComparePy))
    GTEST_SKIP() << testing::kComparePy.string() << " is absent (Debian package libbenchmark-tools)";
  auto compared = testing::run_compare_py(exported[0], exported[1]);
  const auto& o = compared.outcome;
  ASSERT_EQ(o.code, 0) << o.out;
  std::cout << o.out;
  auto& rows = compared.rows;
  EXPECT_EQ(rows["pipe:same-cpu/min_time:0.020/repeats:1/real_time"], 3) << o.out;
  EXPECT_EQ(rows["pipe:same-cpu/min_time:0.020/repeats:1/real_time_median"], 1) << o.out;
  EXPECT_EQ(rows["yield/min_time:0.020/repeats:1/real_time"], 3) << o.out;
  EXPECT_EQ(rows["OVERALL_GEOMEAN"], 1) << o.out;
  EXPECT_NE(o.out.find("pipe:same-cpu/min_time:0.020/repeats:1/real_time_pvalue"), std::string::npos)
      << o.out;
}

}  // namespace
}  // namespace schedlab
