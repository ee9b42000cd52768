// `schedlab export --format gbench`: the mapping of a bundle to Google Benchmark's JSON, checked
// against the shape Google Benchmark 1.7.1 writes and read by its own tools/compare.py.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "export/gbench.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::schedlab;
using testing::TempDir;

// What Google Benchmark 1.7.1 (Debian's libbenchmark-dev) writes for
// `BENCHMARK(BM_x)->Unit(benchmark::kMicrosecond)` with a user counter "foo", run with
// --benchmark_format=json --benchmark_repetitions=3: the first iteration and the mean.
constexpr const char* kRealGbenchEntries = R"([
    {
      "name": "BM_x",
      "family_index": 0,
      "per_family_instance_index": 0,
      "run_name": "BM_x",
      "run_type": "iteration",
      "repetitions": 3,
      "repetition_index": 0,
      "threads": 1,
      "iterations": 11471179,
      "real_time": 1.1939792763087217e-03,
      "cpu_time": 1.1941116950576747e-03,
      "time_unit": "us",
      "foo": 3.0000000000000000e+00
    },
    {
      "name": "BM_x_mean",
      "family_index": 0,
      "per_family_instance_index": 0,
      "run_name": "BM_x",
      "run_type": "aggregate",
      "repetitions": 3,
      "threads": 1,
      "aggregate_name": "mean",
      "aggregate_unit": "time",
      "iterations": 3,
      "real_time": 1.2022391945250581e-03,
      "cpu_time": 1.2023488024494545e-03,
      "time_unit": "us",
      "foo": 3.0000000000000000e+00
    }])";

// The context keys of the same run.
const std::vector<std::string> kRealGbenchContextKeys{"date",     "host_name",   "executable",
                                                      "num_cpus", "mhz_per_cpu", "cpu_scaling_enabled",
                                                      "caches",   "load_avg",    "library_build_type"};

CounterReading counter(double value) {
  CounterReading c;
  c.value = value;
  c.raw = static_cast<std::uint64_t>(value);
  c.time_enabled_ns = c.time_running_ns = 1000;
  return c;
}

Repetition repetition(int index, double ns_per_yield, double cycles) {
  Repetition r;
  r.index = index;
  r.started_at = "2026-01-01T00:00:0" + std::to_string(index) + ".000Z";
  r.duration_s = 0.02;
  r.metrics = {{"ns_per_yield", {ns_per_yield, "ns"}},
               {"elapsed_s", {ns_per_yield * 1e-7, "s"}},
               {"yields", {20000, "count"}}};
  r.counters["cycles:u"] = counter(cycles);
  CounterReading unsupported;
  unsupported.status = status::kUnsupported;
  unsupported.error_number = 2;
  unsupported.reason = "no PMU";
  r.counters["instructions:u"] = unsupported;
  return r;
}

MetricInfo info(const std::string& unit, bool headline) {
  MetricInfo m;
  m.unit = unit;
  m.headline = headline;
  return m;
}

// Two instances: yield with a warm-up, three ok repetitions and a failed one; wakeup with
// latencies in microseconds.
Bundle sample_bundle() {
  Bundle b;
  b.run_id = "20260101T000000Z-abcdef";
  b.trial = 1;
  b.label = "6.12-eevdf";
  b.smoke = true;
  b.started_at = "2026-01-01T00:00:00.000Z";
  b.host = {{"hostname", "box"}, {"topology", {{"online_cpus", 4}}}};
  b.kernel = {{"release", "6.12.0-1-amd64"}};
  b.configuration = {{"hash", "f20453cdddd66389"}};
  b.environment = {{"governor", "schedutil"}, {"load_avg", {0.5, 0.25, 0.125}}};
  b.provenance = {{"build_type", "Release"}};

  Instance y;
  y.id = "yield";
  y.workload = "yield";
  y.workload_version = "1.0.0";
  y.params_hash = "00";
  y.metric_info = {
      {"ns_per_yield", info("ns", true)}, {"elapsed_s", info("s", false)}, {"yields", info("count", false)}};
  y.warmup = repetition(0, 999, 9);
  y.warmup->warmup = true;
  y.repetitions.push_back(repetition(0, 100, 1000));
  Repetition failed;
  failed.index = 1;
  failed.started_at = "2026-01-01T00:00:01.000Z";
  failed.status = status::kFailed;
  failed.reason = "workload exited with status 1";
  y.repetitions.push_back(failed);
  y.repetitions.push_back(repetition(2, 300, 3000));
  y.repetitions.push_back(repetition(3, 200, 2000));
  b.instances.push_back(y);

  Instance w;
  w.id = "wakeup";
  w.workload = "wakeup";
  w.workload_version = "1.0.0";
  w.params_hash = "01";
  w.metric_info = {{"latency_p99_us", info("us", true)}};
  for (int i = 0; i < 2; ++i) {
    Repetition r;
    r.index = i;
    r.started_at = "2026-01-01T00:01:00.000Z";
    r.metrics = {{"latency_p99_us", {50.0 + 10 * i, "us"}}};
    w.repetitions.push_back(r);
  }
  b.instances.push_back(w);
  return b;
}

std::vector<json> entries_named(const json& out, const std::string& name) {
  std::vector<json> found;
  for (const auto& e : out.at("benchmarks"))
    if (e.at("name") == name) found.push_back(e);
  return found;
}

std::set<std::string> keys(const json& j) {
  std::set<std::string> out;
  for (const auto& [k, _] : j.items()) out.insert(k);
  return out;
}

TEST(GbenchExport, OneEntryPerOkRepetitionThenTheAggregatesInOrder) {
  const auto out = gbench_json(sample_bundle());
  std::vector<std::string> names;
  for (const auto& e : out.at("benchmarks")) names.push_back(e.at("name").get<std::string>());
  const std::vector<std::string> expected{
      // headline first, then the other duration metrics by name; "yields" is a count
      "yield/ns_per_yield",
      "yield/ns_per_yield",
      "yield/ns_per_yield",
      "yield/ns_per_yield_mean",
      "yield/ns_per_yield_median",
      "yield/ns_per_yield_stddev",
      "yield/ns_per_yield_cv",
      "yield/elapsed_s",
      "yield/elapsed_s",
      "yield/elapsed_s",
      "yield/elapsed_s_mean",
      "yield/elapsed_s_median",
      "yield/elapsed_s_stddev",
      "yield/elapsed_s_cv",
      "wakeup/latency_p99_us",
      "wakeup/latency_p99_us",
      "wakeup/latency_p99_us_mean",
      "wakeup/latency_p99_us_median",
      "wakeup/latency_p99_us_stddev",
      "wakeup/latency_p99_us_cv"};
  EXPECT_EQ(names, expected);
}

TEST(GbenchExport, IterationsCarryValueUnitAndCountersAndSkipWarmupAndFailures) {
  const auto out = gbench_json(sample_bundle());
  const auto reps = entries_named(out, "yield/ns_per_yield");
  ASSERT_EQ(reps.size(), 3U);
  const auto& first = reps[0];
  EXPECT_EQ(first.at("run_name"), "yield/ns_per_yield");
  EXPECT_EQ(first.at("run_type"), "iteration");
  EXPECT_EQ(first.at("family_index"), 0);
  EXPECT_EQ(first.at("per_family_instance_index"), 0);
  EXPECT_EQ(first.at("repetitions"), 4);  // every timed repetition run, the failed one too
  EXPECT_EQ(first.at("threads"), 1);
  EXPECT_EQ(first.at("iterations"), 1);
  EXPECT_EQ(first.at("real_time"), 100.0);
  EXPECT_EQ(first.at("cpu_time"), 100.0);  // no per-operation CPU time: repeats real_time
  EXPECT_EQ(first.at("time_unit"), "ns");
  EXPECT_EQ(first.at("yields"), 20000.0);          // a metric that is not a duration
  EXPECT_EQ(first.at("cycles:u"), 1000.0);         // an ok counter
  EXPECT_FALSE(first.contains("instructions:u"));  // unsupported: no value
  EXPECT_FALSE(first.contains("elapsed_s"));       // a duration: a benchmark of its own
  std::vector<int> indexes;
  std::vector<double> values;
  for (const auto& e : reps) {
    indexes.push_back(e.at("repetition_index").get<int>());
    values.push_back(e.at("real_time").get<double>());
  }
  EXPECT_EQ(indexes, (std::vector<int>{0, 2, 3}));          // the failed repetition 1 is dropped
  EXPECT_EQ(values, (std::vector<double>{100, 300, 200}));  // run order; no warm-up (999)

  const auto elapsed = entries_named(out, "yield/elapsed_s");
  ASSERT_EQ(elapsed.size(), 3U);
  EXPECT_EQ(elapsed[0].at("time_unit"), "s");
  EXPECT_EQ(elapsed[0].at("per_family_instance_index"), 1);
  EXPECT_DOUBLE_EQ(elapsed[0].at("real_time").get<double>(), 1e-5);
  const auto wakeup = entries_named(out, "wakeup/latency_p99_us");
  ASSERT_EQ(wakeup.size(), 2U);
  EXPECT_EQ(wakeup[1].at("time_unit"), "us");
  EXPECT_EQ(wakeup[1].at("real_time"), 60.0);
  EXPECT_EQ(wakeup[1].at("family_index"), 1);
  EXPECT_EQ(wakeup[1].at("repetitions"), 2);
}

TEST(GbenchExport, AggregatesAreMeanMedianStddevAndCvLikeGoogleBenchmarks) {
  const auto out = gbench_json(sample_bundle());
  auto aggregate = [&](const std::string& name) {
    auto found = entries_named(out, "yield/ns_per_yield_" + name);
    EXPECT_EQ(found.size(), 1U) << name;
    return found.empty() ? json() : found[0];
  };
  const auto mean = aggregate("mean");
  EXPECT_EQ(mean.at("run_name"), "yield/ns_per_yield");
  EXPECT_EQ(mean.at("run_type"), "aggregate");
  EXPECT_EQ(mean.at("aggregate_name"), "mean");
  EXPECT_EQ(mean.at("aggregate_unit"), "time");
  EXPECT_EQ(mean.at("iterations"), 3);  // the values aggregated
  EXPECT_EQ(mean.at("repetitions"), 4);
  EXPECT_EQ(mean.at("time_unit"), "ns");
  EXPECT_FALSE(mean.contains("repetition_index"));
  EXPECT_DOUBLE_EQ(mean.at("real_time").get<double>(), 200);
  EXPECT_DOUBLE_EQ(mean.at("cpu_time").get<double>(), 200);
  EXPECT_DOUBLE_EQ(mean.at("cycles:u").get<double>(), 2000);
  EXPECT_DOUBLE_EQ(aggregate("median").at("real_time").get<double>(), 200);
  const auto stddev = aggregate("stddev");
  EXPECT_EQ(stddev.at("aggregate_unit"), "time");
  EXPECT_DOUBLE_EQ(stddev.at("real_time").get<double>(), 100);  // sample standard deviation
  EXPECT_DOUBLE_EQ(stddev.at("yields").get<double>(), 0);
  const auto cv = aggregate("cv");
  EXPECT_EQ(cv.at("aggregate_unit"), "percentage");
  EXPECT_DOUBLE_EQ(cv.at("real_time").get<double>(), 0.5);  // a fraction, as Google Benchmark writes it
  EXPECT_DOUBLE_EQ(aggregate("median").at("cycles:u").get<double>(), 2000);
}

TEST(GbenchExport, EntriesHaveEveryFieldGoogleBenchmarkWrites) {
  const auto real = json::parse(kRealGbenchEntries);
  const auto out = gbench_json(sample_bundle());
  const auto ours_iteration = entries_named(out, "yield/ns_per_yield").at(0);
  const auto ours_mean = entries_named(out, "yield/ns_per_yield_mean").at(0);
  auto without_counters = [](std::set<std::string> k, const std::vector<std::string>& counters) {
    for (const auto& c : counters) k.erase(c);
    return k;
  };
  EXPECT_EQ(without_counters(keys(ours_iteration), {"yields", "cycles:u"}),
            without_counters(keys(real[0]), {"foo"}));
  EXPECT_EQ(without_counters(keys(ours_mean), {"yields", "cycles:u"}),
            without_counters(keys(real[1]), {"foo"}));
  for (const auto& key : kRealGbenchContextKeys) EXPECT_TRUE(out.at("context").contains(key)) << key;
}

TEST(GbenchExport, ContextRecordsHostKernelConfigurationAndWhatWasDropped) {
  const auto ctx = gbench_json(sample_bundle()).at("context");
  EXPECT_EQ(ctx.at("date"), "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(ctx.at("host_name"), "box");
  EXPECT_EQ(ctx.at("executable"), "schedlab");
  EXPECT_EQ(ctx.at("num_cpus"), 4);
  EXPECT_EQ(ctx.at("mhz_per_cpu"), 0);
  EXPECT_EQ(ctx.at("cpu_scaling_enabled"), true);  // governor schedutil
  EXPECT_EQ(ctx.at("caches"), json::array());
  EXPECT_EQ(ctx.at("load_avg"), json({0.5, 0.25, 0.125}));
  EXPECT_EQ(ctx.at("library_build_type"), "release");
  EXPECT_EQ(ctx.at("schedlab_schema"), "schedlab.result/2");
  EXPECT_EQ(ctx.at("schedlab_run_id"), "20260101T000000Z-abcdef");
  EXPECT_EQ(ctx.at("schedlab_trial"), 1);
  EXPECT_EQ(ctx.at("schedlab_label"), "6.12-eevdf");
  EXPECT_EQ(ctx.at("schedlab_kernel_release"), "6.12.0-1-amd64");
  EXPECT_EQ(ctx.at("schedlab_configuration_hash"), "f20453cdddd66389");
  EXPECT_EQ(ctx.at("schedlab_smoke"), true);
  EXPECT_EQ(ctx.at("schedlab_dropped_repetitions"),
            json::parse(R"([{"instance": "yield", "index": 1, "status": "failed",
                             "reason": "workload exited with status 1"}])"));
  EXPECT_EQ(ctx.at("schedlab_dropped_values"), json::array());
}

TEST(GbenchExport, CpuScalingOnlyWhenAGovernorOtherThanPerformanceIsKnown) {
  auto scaling = [](json governor) {
    auto b = sample_bundle();
    b.environment["governor"] = std::move(governor);
    return gbench_json(b).at("context").at("cpu_scaling_enabled").get<bool>();
  };
  EXPECT_FALSE(scaling("performance"));
  EXPECT_FALSE(scaling("none"));  // no cpufreq
  EXPECT_FALSE(scaling("unknown"));
  EXPECT_TRUE(scaling("powersave"));
  EXPECT_TRUE(scaling({{"cpu0", "performance"}, {"cpu1", "ondemand"}}));
  auto b = sample_bundle();
  b.environment.erase("governor");
  EXPECT_FALSE(gbench_json(b).at("context").at("cpu_scaling_enabled").get<bool>());
}

TEST(GbenchExport, NamesGoogleBenchmarkUsesArePrefixedNotOverwritten) {
  auto b = sample_bundle();
  for (auto& r : b.instances[0].repetitions) {
    if (!r.ok()) continue;
    r.metrics["label"] = {7, "count"};       // compare.py reads "label" as the benchmark's label
    r.counters["yields"] = counter(42);      // the metric "yields" has that name
    r.counters["iterations"] = counter(43);  // a Google Benchmark field
  }
  const auto first = entries_named(gbench_json(b), "yield/ns_per_yield").at(0);
  EXPECT_FALSE(first.contains("label"));
  EXPECT_EQ(first.at("metric.label"), 7.0);
  EXPECT_EQ(first.at("yields"), 20000.0);
  EXPECT_EQ(first.at("counter.yields"), 42.0);
  EXPECT_EQ(first.at("iterations"), 1);
  EXPECT_EQ(first.at("counter.iterations"), 43.0);
}

TEST(GbenchExport, ValuesInAnotherDurationUnitAreConvertedToTheFirstOnes) {
  auto b = sample_bundle();
  b.instances[0].repetitions[2].metrics["ns_per_yield"] = {0.3, "us"};
  const auto reps = entries_named(gbench_json(b), "yield/ns_per_yield");
  ASSERT_EQ(reps.size(), 3U);
  EXPECT_EQ(reps[1].at("time_unit"), "ns");
  EXPECT_DOUBLE_EQ(reps[1].at("real_time").get<double>(), 300);
}

TEST(GbenchExport, NonFiniteValuesAreListedNotWritten) {
  auto b = sample_bundle();
  b.instances[0].repetitions[2].metrics["ns_per_yield"].value = std::nan("");
  b.instances[0].repetitions[2].metrics["yields"].value = INFINITY;
  const auto out = gbench_json(b);
  const auto reps = entries_named(out, "yield/ns_per_yield");
  ASSERT_EQ(reps.size(), 2U);
  EXPECT_FALSE(entries_named(out, "yield/elapsed_s").at(1).contains("yields"));
  const auto dropped = out.at("context").at("schedlab_dropped_values");
  EXPECT_EQ(dropped.size(), 2U) << dropped.dump();
  EXPECT_NE(dropped.dump().find(R"("name":"ns_per_yield")"), std::string::npos) << dropped.dump();
  EXPECT_EQ(out.dump().find("null"), std::string::npos) << "a NaN became null";
}

TEST(GbenchExport, NoAggregatesOfASingleRepetition) {
  auto b = sample_bundle();
  b.instances[1].repetitions.pop_back();
  const auto out = gbench_json(b);
  EXPECT_EQ(entries_named(out, "wakeup/latency_p99_us").size(), 1U);
  EXPECT_TRUE(entries_named(out, "wakeup/latency_p99_us_mean").empty());
}

TEST(GbenchExport, ABundleWithNothingToExportIsAnInputErrorNamingIt) {
  auto b = sample_bundle();
  b.instances.pop_back();
  for (auto& r : b.instances[0].repetitions)
    if (r.ok()) r.metrics = {{"yields", {20000, "count"}}};  // no duration left
  try {
    gbench_json(b, "/data/a.json");
    FAIL() << "exported a bundle without a duration metric";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/data/a.json: nothing to export"), std::string::npos) << e.what();
  }
  auto failed = sample_bundle();
  for (auto& in : failed.instances)
    for (auto& r : in.repetitions) r.status = status::kTimeout;
  EXPECT_THROW(gbench_json(failed, "b.json"), InputError);
}

// A repetition that ran under Google Benchmark (the micro workload) keeps its JSON in
// details.gbench; the export gives that entry back, renumbered as the runner's repetitions.
TEST(GbenchExport, GoogleBenchmarkRunsAreExportedAsGoogleBenchmarkWroteThem) {
  auto b = sample_bundle();
  auto& in = b.instances[0];
  for (auto& r : in.repetitions) {
    if (!r.ok()) continue;
    json run = json::parse(kRealGbenchEntries)[0];
    run["name"] = run["run_name"] = "pipe:same-cpu/min_time:0.500/repeats:1/real_time";
    run["real_time"] = run["cpu_time"] = 10.0 * (r.index + 1);
    run["time_unit"] = "ns";
    run["iterations"] = 1000 + r.index;
    r.details["gbench"] = {{"context", {{"library_build_type", "debug"}}},
                           {"benchmarks", json::array({run})}};
    r.metrics["operations"] = {3000, "count"};
    r.counters["perf::CONTEXT-SWITCHES/op"] = counter(2);
  }
  const auto out = gbench_json(b);
  const auto reps = entries_named(out, "pipe:same-cpu/min_time:0.500/repeats:1/real_time");
  ASSERT_EQ(reps.size(), 3U) << out.dump(1);
  EXPECT_EQ(reps[1].at("repetition_index"), 2);
  EXPECT_EQ(reps[1].at("repetitions"), 4);
  EXPECT_EQ(reps[1].at("iterations"), 1002);  // Google Benchmark's, not 1
  EXPECT_EQ(reps[1].at("real_time"), 30.0);
  EXPECT_EQ(reps[1].at("foo"), 3.0);  // its own counter
  EXPECT_EQ(reps[1].at("perf::CONTEXT-SWITCHES/op"), 2.0);
  EXPECT_EQ(reps[1].at("operations"), 3000.0);
  EXPECT_EQ(reps[1].at("family_index"), 0);
  EXPECT_TRUE(entries_named(out, "yield/ns_per_yield").empty()) << "exported twice";
  const auto mean = entries_named(out, "pipe:same-cpu/min_time:0.500/repeats:1/real_time_mean");
  ASSERT_EQ(mean.size(), 1U);
  EXPECT_DOUBLE_EQ(mean[0].at("real_time").get<double>(), (10.0 + 30 + 40) / 3);
  EXPECT_EQ(entries_named(out, "wakeup/latency_p99_us").at(0).at("family_index"), 1);
  // The failed repetition is still listed as dropped.
  EXPECT_EQ(out.at("context").at("schedlab_dropped_repetitions").size(), 1U);
}

// The binary's answers: exit 2 for bad input, and nothing written or overwritten.
class ExportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    bundle_ = dir_.path() / "bundle.json";
    write_bundle(bundle_, sample_bundle());
  }
  TempDir dir_;
  fs::path bundle_;
};

TEST_F(ExportCli, WritesToStandardOutputOrANewFile) {
  auto o = schedlab("export --format gbench " + bundle_.string());
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(json::parse(o.out), gbench_json(load_bundle(bundle_), bundle_.string()));
  const auto file = dir_.path() / "gbench.json";
  auto w = schedlab("export --format gbench " + bundle_.string() + " -o " + file.string());
  ASSERT_EQ(w.code, 0) << w.out;
  EXPECT_EQ(w.out, "");
  EXPECT_EQ(json::parse(testing::slurp(file)), json::parse(o.out));
}

TEST_F(ExportCli, AnUnknownFormatIsExitTwo) {
  auto o = schedlab("export --format csv " + bundle_.string());
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_EQ(o.out, "schedlab: --format 'csv': unknown export format (known: gbench)\n");
  auto missing = schedlab("export " + bundle_.string());
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find("--format is required"), std::string::npos) << missing.out;
}

TEST_F(ExportCli, AMissingOrEmptyBundleIsExitTwoNamingIt) {
  const auto missing = dir_.path() / "nosuch.json";
  auto o = schedlab("export --format gbench " + missing.string());
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find(missing.string()), std::string::npos) << o.out;

  auto b = sample_bundle();
  b.instances.pop_back();
  for (auto& r : b.instances[0].repetitions) {
    r.metrics.erase("ns_per_yield");
    r.metrics.erase("elapsed_s");
  }
  const auto counts_only = dir_.path() / "counts.json";
  write_bundle(counts_only, b);
  const auto out = dir_.path() / "out.json";
  auto e = schedlab("export --format gbench " + counts_only.string() + " -o " + out.string());
  EXPECT_EQ(e.code, 2) << e.out;
  EXPECT_NE(e.out.find(counts_only.string() + ": nothing to export"), std::string::npos) << e.out;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(ExportCli, AnExistingOutputFileIsNeverOverwritten) {
  const auto out = dir_.path() / "out.json";
  testing::spit(out, "keep me\n");
  auto o = schedlab("export --format gbench " + bundle_.string() + " -o " + out.string());
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find(out.string() + ": already exists"), std::string::npos) << o.out;
  EXPECT_EQ(testing::slurp(out), "keep me\n");
  std::vector<fs::path> left = testing::files_in(dir_.path());
  EXPECT_EQ(left.size(), 2U) << "a temporary file was left behind";
}

// The real consumer: Google Benchmark's tools/compare.py on two exported real runs.
TEST(GbenchExportCompare, GoogleBenchmarksComparePyReadsTwoRealRuns) {
  if (!fs::exists(testing::kComparePy))
    GTEST_SKIP() << testing::kComparePy.string() << " is absent (Debian package libbenchmark-tools)";
  TempDir dir;
  std::vector<std::string> exported;
  for (const std::string side : {"a", "b"}) {
    const auto out = dir.path() / side;
    auto run = schedlab(
        "run --workload yield --param yield.yields=20000 --repetitions 3 --no-counters "
        "--settle-timeout 0 --out " +
        out.string());
    ASSERT_EQ(run.code, 0) << run.out;
    const auto bundles = testing::files_in(out);
    ASSERT_EQ(bundles.size(), 1U) << run.out;
    const auto json_file = dir.path() / (side + ".gbench.json");
    auto e = schedlab("export --format gbench " + bundles[0].string() + " -o " + json_file.string());
    ASSERT_EQ(e.code, 0) << e.out;
    exported.push_back(json_file.string());
  }
  auto compared = testing::run_compare_py(exported[0], exported[1]);
  const auto& o = compared.outcome;
  ASSERT_EQ(o.code, 0) << o.out;
  std::cout << o.out;
  auto& rows = compared.rows;
  EXPECT_EQ(rows["yield/ns_per_yield"], 3) << o.out;  // one row per repetition
  EXPECT_EQ(rows["yield/ns_per_yield_mean"], 1) << o.out;
  EXPECT_EQ(rows["yield/ns_per_yield_median"], 1) << o.out;
  EXPECT_EQ(rows["yield/elapsed_s"], 3) << o.out;
  EXPECT_EQ(rows["OVERALL_GEOMEAN"], 1) << o.out;
  // With 3 repetitions per side it runs its U test (and warns that 9+ are needed).
  EXPECT_NE(o.out.find("yield/ns_per_yield_pvalue"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace schedlab
