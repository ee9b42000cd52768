// schedlab.result/2 against /1, on real bundles: the file form keeps every raw measurement (the bundle
// reads back exactly as the /1 file did), stores no per-operation copy and no repeated counter field,
// writes per-CPU deltas as tables, and is a fraction of the size.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/bundle_encoding.hpp"
#include "core/bundle_io.hpp"
#include "core/json_cursor.hpp"
#include "core/per_operation.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::error_of;
using testing::slurp;
using testing::spit;
using testing::TempDir;

const fs::path kFixtures = SCHEDLAB_FIXTURES_DIR;

// Every /1 bundle the fixtures hold: a yield and wakeup run (exporter/), and profiled, traced yield runs
// with counters per cgroup and per task (profile/).
std::vector<fs::path> v1_fixtures() {
  return {kFixtures / "exporter/yield-wakeup.json",
          kFixtures / "profile/counters-per-cgroup/20261201T035427Z-0eb284-trial0.json",
          kFixtures / "profile/counters-per-task/20261201T035459Z-aff4c9-trial1.json"};
}

template <typename F>
void for_each_repetition(const json& bundle, F visit) {
  for (const auto& in : bundle.at("instances")) {
    if (in.contains("warmup") && in["warmup"].is_object()) visit(in["warmup"]);
    for (const char* list : {"repetitions", "diagnostics"})
      if (in.contains(list))
        for (const auto& rep : in[list]) visit(rep);
  }
}

TEST(BundleFormat, AV1BundleWrittenAsV2ReadsBackAsItWas) {
  for (const auto& file : v1_fixtures()) {
    SCOPED_TRACE(file);
    const json v1_text = json::parse(slurp(file));
    ASSERT_EQ(v1_text.at("schema"), "schedlab.result/1");
    const Bundle v1 = load_bundle(file);
    const std::string text = bundle_file_text(v1);
    const json v2_text = json::parse(text);
    EXPECT_EQ(v2_text.at("schema"), "schedlab.result/2");
    const Bundle v2 = parse_bundle(text, "v2.json");
    // Everything but the version read back: metrics, every counter field, per-CPU deltas, details.
    auto a = to_json(v1), b = to_json(v2);
    a.erase("schema");
    b.erase("schema");
    EXPECT_EQ(a, b);
    // And each counter the /1 file stored, per-operation copies included, is read from /2 as it was.
    std::size_t per_operation = 0;
    for (std::size_t i = 0; i < v1.instances.size(); ++i) {
      const auto& reps_a = v1.instances[i].repetitions;
      const auto& reps_b = v2.instances[i].repetitions;
      ASSERT_EQ(reps_a.size(), reps_b.size());
      const auto& stored = v1_text["instances"][i]["repetitions"];
      for (std::size_t r = 0; r < reps_a.size(); ++r) {
        for (const auto& [event, reading] : stored[r]["counters"].items()) {
          ASSERT_TRUE(reps_b[r].counters.count(event)) << event;
          EXPECT_EQ(to_json(reps_b[r].counters.at(event)), reading) << event;
          per_operation += !per_operation_source(event).empty();
        }
      }
    }
    EXPECT_GT(per_operation, 0u) << "the fixture's workloads report operations";
  }
}

TEST(BundleFormat, V2StoresNoPerOperationCopyAndNoRepeatedCounterField) {
  const Bundle v1 = load_bundle(v1_fixtures()[0]);
  const json v2 = json::parse(bundle_file_text(v1));
  ASSERT_TRUE(v2.contains("counter_defaults"));
  // The unsupported hardware events of a VM: their status, errno and reason once, not per repetition.
  const auto& cycles = v2["counter_defaults"].at("cycles:u");
  EXPECT_EQ(cycles.at("status"), "unsupported");
  EXPECT_EQ(cycles.at("errno"), 2);
  EXPECT_EQ(v2["counter_defaults"].at("perf::CONTEXT-SWITCHES").at("scope"), "cgroup");
  std::size_t readings = 0;
  for_each_repetition(v2, [&](const json& rep) {
    for (const auto& [event, reading] : rep.at("counters").items()) {
      ++readings;
      EXPECT_TRUE(per_operation_source(event).empty()) << event << " is derived at read time";
      const json defaults = v2["counter_defaults"].value(event, json::object());
      for (const auto& [field, _] : defaults.items())
        EXPECT_FALSE(reading.contains(field)) << event << "." << field << " is in counter_defaults";
    }
    EXPECT_TRUE(rep.at("counters").at("cycles:u").empty());
    EXPECT_TRUE(rep.at("counters").at("perf::CONTEXT-SWITCHES").contains("value"));
    // Per-CPU deltas as one table: CPU names and field names once.
    ASSERT_TRUE(rep.at("system").contains("per_cpu_table")) << rep.at("system").dump();
    EXPECT_FALSE(rep.at("system").contains("per_cpu"));
    const auto& table = rep["system"]["per_cpu_table"];
    EXPECT_EQ(table.at("values").size(), table.at("cpus").size());
  });
  EXPECT_GT(readings, 0u);
  // wakeup's latency histogram: runs of adjacent buckets, the same buckets once expanded.
  std::size_t histograms = 0;
  for (std::size_t i = 0; i < v1.instances.size(); ++i) {
    for (std::size_t r = 0; r < v1.instances[i].repetitions.size(); ++r) {
      const auto& stored = v2["instances"][i]["repetitions"][r]["details"];
      if (!stored.contains("histogram")) continue;
      ++histograms;
      EXPECT_FALSE(stored["histogram"].contains("buckets"));
      const auto& runs = stored["histogram"].at("bucket_runs");
      std::size_t buckets = 0;
      for (const auto& run : runs) buckets += run.size() - 2;
      const auto& original = v1.instances[i].repetitions[r].details["histogram"]["buckets"];
      EXPECT_EQ(buckets, original.size());
      EXPECT_LT(runs.size(), original.size()) << "adjacent buckets of one width share a run";
      EXPECT_LT(runs.dump().size(), original.dump().size());
    }
  }
  EXPECT_EQ(histograms, 3u) << "the fixture's wakeup instance has three repetitions";
}

// The quick suite's numbers are in the README (run under flock) and its quarter is checked on a real run
// in summary_screen_test; these small bundles (one or two instances) carry their counters' encodings and
// reasons once each, which weighs more in them.
TEST(BundleFormat, V2IsAThirdOfV1OrLess) {
  for (const auto& file : v1_fixtures()) {
    const auto v1_bytes = fs::file_size(file);
    const auto v2_bytes = bundle_file_text(load_bundle(file)).size();
    std::cout << file.filename().string() << ": /1 " << v1_bytes << " bytes, /2 " << v2_bytes << " bytes ("
              << 100 * v2_bytes / v1_bytes << "%)\n";
    EXPECT_LE(v2_bytes * 3, v1_bytes) << file;
  }
}

// Fields a counter source adds later (a scope, a cost class, a contamination share) are kept by the
// encoding, factored when every reading has them alike, per reading otherwise.
TEST(BundleFormat, CompactionIsGenericOverCounterFields) {
  json bundle = to_json(load_bundle(v1_fixtures()[1]));
  bool odd = false;
  auto add_fields = [&odd](json& rep) {
    auto& counters = rep["counters"];
    counters["perf::CONTEXT-SWITCHES"]["cost_class"] = "switch-heavy";  // alike everywhere
    counters["perf::CONTEXT-SWITCHES"]["contaminated"] = odd;           // differs
    if (odd) counters["perf::TASK-CLOCK"]["share"] = 0.25;              // only in some readings
    odd = !odd;
  };
  for (auto& in : bundle["instances"]) {
    add_fields(in["warmup"]);
    for (auto& rep : in["repetitions"]) add_fields(rep);
    for (auto& rep : in["diagnostics"]) add_fields(rep);
  }
  const json compact = compact_bundle(bundle);
  EXPECT_EQ(compact["counter_defaults"]["perf::CONTEXT-SWITCHES"].at("cost_class"), "switch-heavy");
  EXPECT_FALSE(compact["counter_defaults"]["perf::CONTEXT-SWITCHES"].contains("contaminated"));
  EXPECT_FALSE(compact["counter_defaults"]["perf::TASK-CLOCK"].contains("share"));
  EXPECT_EQ(expand_bundle(compact, "x.json"), bundle);
}

// A bundle from a kernel with /proc/schedstat: the per-CPU and per-domain deltas become one table each
// and come back as they were, whatever the domains are called.
TEST(BundleFormat, SchedstatDeltasAreTabulatedAndComeBack) {
  json bundle = to_json(load_bundle(v1_fixtures()[0]));
  const json cpus = {
      {"0",
       {{"delta", {{"yld_count", 3.0}, {"sched_count", 120.0}}},
        {"domains",
         {{{"name", "SMT"}, {"cpumask", "03"}, {"delta", {{"lb_count", 1.0}}}},
          {{"name", "MC"}, {"cpumask", "0f"}, {"delta", {{"lb_count", 2.0}, {"lb_failed", 0.0}}}}}}}},
      {"1", {{"delta", {{"yld_count", 0.0}, {"sched_count", 7.0}}}, {"domains", json::array()}}}};
  auto& rep = bundle["instances"][0]["repetitions"][0];
  rep["system"]["schedstat"] = {{"version", 17}, {"jiffies", 12}, {"cpus", cpus}, {"sched_schedstats", 0}};
  const json compact = compact_bundle(bundle);
  const auto& schedstat = compact["instances"][0]["repetitions"][0]["system"]["schedstat"];
  EXPECT_FALSE(schedstat.contains("cpus"));
  EXPECT_EQ(schedstat.at("cpu_table").at("domains").at("rows").size(), 2u);
  EXPECT_EQ(expand_bundle(compact, "x.json"), bundle);
}

// Bounds a run cannot give back exactly (0.1 + 2 x 0.1 is not 0.3 in binary) stay as they are.
TEST(BundleFormat, HistogramRunsGiveBackTheirBoundsExactly) {
  json bundle = to_json(load_bundle(v1_fixtures()[0]));
  auto& details = bundle["instances"][0]["repetitions"][0]["details"];
  const json odd = {{0.1, 0.2, 3u}, {0.2, 0.3, 1u}, {0.3, 0.4, 2u}, {7.0, 8.0, 1u}, {8.0, 9.0, 5u}};
  details["histogram"] = {{"unit", "us"}, {"buckets", odd}, {"count", 12u}};
  const json compact = compact_bundle(bundle);
  EXPECT_EQ(expand_bundle(compact, "x.json"), bundle);
  EXPECT_EQ(compact["instances"][0]["repetitions"][0]["details"]["histogram"].at("bucket_runs").back(),
            json({7.0, 1.0, 1u, 5u}));
}

TEST(BundleFormat, AMalformedCompactPartIsNamedByItsPath) {
  const json good = json::parse(bundle_file_text(load_bundle(v1_fixtures()[1])));
  auto bad = good;
  bad["instances"][0]["repetitions"][1]["system"]["per_cpu_table"]["values"][0][0] = "x";
  EXPECT_NE(error_of([&] {
              bundle_from_json(bad, "b.json");
            }).find("b.json: /instances/0/repetitions/1/system/per_cpu_table/values/0/0: expected a number"),
            std::string::npos)
      << error_of([&] { bundle_from_json(bad, "b.json"); });
  bad = good;
  bad["counter_defaults"]["perf::TASK-CLOCK"] = 3;
  EXPECT_NE(error_of([&] {
              bundle_from_json(bad, "b.json");
            }).find("b.json: /counter_defaults/perf::TASK-CLOCK: expected an object of counter fields"),
            std::string::npos);
  bad = good;
  bad["instances"][0]["repetitions"][0]["system"]["per_cpu_table"]["values"].erase(0);
  EXPECT_NE(error_of([&] {
              bundle_from_json(bad, "b.json");
            }).find("per_cpu_table/values: expected one row per CPU"),
            std::string::npos);
}

// Written by the runner: a /2 file on disk, read by load_bundle with its per-operation counters.
TEST(BundleFormat, WriteBundleWritesV2AndLoadDerivesPerOperationCounters) {
  TempDir dir;
  Bundle b = load_bundle(v1_fixtures()[0]);
  const auto path = dir.path() / "b.json";
  write_bundle(path, b);
  const auto text = slurp(path);
  EXPECT_EQ(text.find("/op\""), std::string::npos);
  const Bundle back = load_bundle(path);
  EXPECT_EQ(back.schema, kResultSchema);
  const auto& rep = back.instances.at(0).repetitions.at(0);
  ASSERT_TRUE(rep.counters.count("perf::CONTEXT-SWITCHES/op"));
  EXPECT_DOUBLE_EQ(rep.counters.at("perf::CONTEXT-SWITCHES/op").value,
                   rep.counters.at("perf::CONTEXT-SWITCHES").value / rep.metrics.at("operations").value);
  EXPECT_EQ(rep.counters.at("perf::CONTEXT-SWITCHES/op").unit, "count/op");
}

}  // namespace
}  // namespace schedlab

namespace schedlab {
namespace {

// #22's counter fields (scope, cost, foreign_share, contaminated, a multiplexed count's scaling) and the
// repetition's counter_window come back from /2 as they were, whether every reading shares them (written
// once, in counter_defaults) or each repetition has its own.
TEST(BundleFormat, CountingScopeAndQualityFieldsSurviveV2) {
  Bundle b = load_bundle(kFixtures / "profile/counters-per-cgroup/20261201T035427Z-0eb284-trial0.json");
  ASSERT_FALSE(b.instances.empty());
  std::size_t r = 0;
  // As the runner of #22 records them: every reading of the bundle with a scope and a cost, per-operation
  // copies derived from the totals afterwards.
  auto mark = [&](Repetition& rep) {
    std::erase_if(rep.counters, [](const auto& kv) { return !per_operation_source(kv.first).empty(); });
    for (auto& [event, c] : rep.counters) {
      if (!c.ok()) continue;
      c.scope = "system-cpus";
      c.cost = "constant";
      c.foreign_share = 0.01 * static_cast<double>(r + 1);  // differs per repetition
      c.contaminated = r == 0;
    }
    auto& cs = rep.counters.at("perf::CONTEXT-SWITCHES");
    if (r == 1) cs.time_running_ns = cs.time_enabled_ns / 2;  // multiplexed in one repetition
    rep.counter_window = {{"cpus", {0}}, {"foreign_share", 0.01 * static_cast<double>(r + 1)}};
    add_per_operation_counters(rep);
    ++r;
  };
  for (auto& in : b.instances) {
    for (auto& rep : in.repetitions) mark(rep);
    for (auto& rep : in.diagnostics) mark(rep);
    if (in.warmup) mark(*in.warmup);
  }
  ASSERT_GE(r, 2u);
  const Bundle back = parse_bundle(bundle_file_text(b), "v2.json");
  auto a = to_json(b), c = to_json(back);
  a.erase("schema");
  c.erase("schema");
  EXPECT_EQ(a, c) << json::diff(a, c).dump(1);
  const auto& rep1 = back.instances[0].repetitions[1];
  EXPECT_TRUE(rep1.counters.at("perf::CONTEXT-SWITCHES").multiplexed());
  EXPECT_TRUE(rep1.counters.at("perf::CONTEXT-SWITCHES/op").multiplexed());
  EXPECT_EQ(rep1.counters.at("perf::CONTEXT-SWITCHES").scope, "system-cpus");
  EXPECT_EQ(rep1.counters.at("perf::CONTEXT-SWITCHES").cost, "constant");
  EXPECT_TRUE(back.instances[0].repetitions[0].counters.at("perf::CONTEXT-SWITCHES").contaminated);
  EXPECT_EQ(rep1.counter_window["cpus"], json::array({0}));
  // The file says each shared field once: scope and cost in counter_defaults, foreign_share per repetition.
  const auto file = json::parse(bundle_file_text(b));
  const auto& defaults = file["counter_defaults"]["perf::CONTEXT-SWITCHES"];
  EXPECT_EQ(defaults["scope"], "system-cpus") << defaults;
  EXPECT_EQ(defaults["cost"], "constant") << defaults;
  EXPECT_FALSE(defaults.contains("foreign_share")) << defaults;
}

}  // namespace
}  // namespace schedlab
