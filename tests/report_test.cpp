// schedlab report through the binary, on real bundles: what the page carries (identities, the diff's own
// numbers and verdicts), escaping of bundle text, bad input, and the size of a full-suite report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "core/sanitizers.hpp"
#include "report_util.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::bundles_of;
using testing::files_in;
using testing::report_data_of;
using testing::schedlab;
using testing::slurp;
using testing::spit;
using testing::TempDir;

// tests/fixtures/profile: two real profiled runs of yield, two trials each (see its README).
const std::string kPerCgroup = std::string(SCHEDLAB_FIXTURES_DIR) + "/profile/counters-per-cgroup";
const std::string kPerTask = std::string(SCHEDLAB_FIXTURES_DIR) + "/profile/counters-per-task";
// tests/fixtures/exporter: one real bundle, yield (threads 1 and 2) and wakeup with latency histograms.
const std::string kYieldWakeup = std::string(SCHEDLAB_FIXTURES_DIR) + "/exporter/yield-wakeup.json";

std::size_t count_of(std::string text, const std::string& what) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Report, TwoSidesCarryTheRunsIdentitiesAndTheDiffsOwnNumbers) {
  TempDir dir;
  auto html = (dir.path() / "report.html").string();
  // The fixtures' counter scopes differ (a measuring method): compared only with --force (#28.3).
  auto o = schedlab("report --force " + kPerCgroup + " " + kPerTask + " -o " + html);
  ASSERT_EQ(o.code, 0) << o.out;
  auto page = slurp(html);
  auto data = report_data_of(page);
  ASSERT_TRUE(data.is_object()) << page.substr(0, 2000);
  EXPECT_EQ(data["schema"], "schedlab.report/1");

  const std::vector<std::string> specs = {kPerCgroup, kPerTask};
  ASSERT_EQ(data["sides"].size(), 2u);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& side = data["sides"][i];
    auto bundles = bundles_of(specs[i]);
    EXPECT_EQ(side["name"], bundles[0]["label"]);  // "counters-per-cgroup", "counters-per-task"
    EXPECT_EQ(side["role"], i == 0 ? "base" : "other");
    ASSERT_EQ(side["bundles"].size(), bundles.size());
    for (std::size_t t = 0; t < bundles.size(); ++t) {
      const auto& id = side["bundles"][t];
      EXPECT_EQ(id["run_id"], bundles[t]["run_id"]);
      EXPECT_EQ(id["trial"], bundles[t]["trial"]);
      EXPECT_EQ(id["label"], bundles[t]["label"]);
      EXPECT_EQ(id["started_at"], bundles[t]["started_at"]);
      EXPECT_EQ(id["finished_at"], bundles[t]["finished_at"]);
      EXPECT_EQ(id["kernel_release"], bundles[t]["kernel"]["release"]);  // "6.18.44..."
      EXPECT_EQ(id["kernel_version"], bundles[t]["kernel"]["version"]);
      EXPECT_EQ(id["hostname"], bundles[t]["host"]["hostname"]);
      EXPECT_EQ(fs::path(id["path"].get<std::string>()).parent_path(), fs::path(specs[i]));
    }
  }

  // The tables are drawn from the diff library's JSON: exactly what `schedlab diff --json` says.
  auto diff = schedlab("diff --json --force " + kPerCgroup + " " + kPerTask);
  ASSERT_EQ(diff.code, 0) << diff.out;
  EXPECT_EQ(data["diff"], nlohmann::json::parse(diff.out));
  const auto& headline = data["diff"]["instances"][0]["metrics"][0];
  EXPECT_EQ(headline["name"], "ns_per_yield");
  // Two trials a side cannot reach alpha 0.05 with a rank test (min p 1/3).
  EXPECT_EQ(headline["comparisons"][0]["verdict"], "too few runs");
  EXPECT_FALSE(data["diff"]["instances"][0]["profiles"][0]["lines"].empty()) << "diffprofile for the chart";

  // One file: the chart library and the page's script inlined, nothing loaded from elsewhere.
  EXPECT_NE(
      page.find(slurp(std::string(SCHEDLAB_SOURCE_DIR) + "/report/third_party/uplot/uPlot.iife.min.js")),
      std::string::npos);
  EXPECT_NE(page.find(slurp(std::string(SCHEDLAB_SOURCE_DIR) + "/report/web/report.js")), std::string::npos);
  EXPECT_EQ(count_of(page, "<link"), 0u);
  EXPECT_EQ(count_of(page, " src="), 0u);
}

// #28.3: the fixtures' counters were per cgroup on one side and per task on the other. The report
// refuses them as `diff` does, and with --force lists the method among the environment's differences.
TEST(Report, AChangeOfMeasuringMethodIsRefusedAndWithForceShownAsADifference) {
  TempDir dir;
  auto html = (dir.path() / "report.html").string();
  auto o = schedlab("report " + kPerCgroup + " " + kPerTask + " -o " + html);
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("different measuring methods"), std::string::npos) << o.out;
  EXPECT_FALSE(fs::exists(html));
  o = schedlab("report --force " + kPerCgroup + " " + kPerTask + " -o " + html);
  ASSERT_EQ(o.code, 0) << o.out;
  auto data = report_data_of(slurp(html));
  bool shown = false;
  for (const auto& row : data["environment"]) {
    if (row["field"] != "method.counter_scope") continue;
    shown = true;
    EXPECT_EQ(row["category"], "method");
    EXPECT_TRUE(row["differs"].get<bool>());
    EXPECT_EQ(row["values"], nlohmann::json::array({"cgroup", "task-tree"}));
  }
  EXPECT_TRUE(shown) << data["environment"].dump();
  EXPECT_EQ(data["diff"]["warnings"][0].get<std::string>().rfind("FORCED: different measuring methods", 0),
            0u);
}

// #31.6: a one-side report names a trial that tainted the kernel, as diff does (the fixture bundle with
// its trial marked as a WARN would mark it).
TEST(Report, OneSideWarnsOfATrialThatTaintedTheKernel) {
  TempDir dir;
  auto bundle = nlohmann::json::parse(slurp(kYieldWakeup));
  bundle["kernel"]["during_trial"] = {
      {"tainted", true}, {"new_taint_value", 512}, {"new_taint_flags", "W"}, {"clocksource_changed", false}};
  const auto tainted = (dir.path() / "tainted.json").string();
  testing::spit(tainted, bundle.dump());
  auto html = (dir.path() / "one.html").string();
  ASSERT_EQ(schedlab("report " + tainted + " -o " + html).code, 0);
  const auto warnings = report_data_of(slurp(html))["warnings"];
  bool warned = false;
  for (const auto& w : warnings)
    warned = warned || w.get<std::string>().find("the kernel was tainted during trial") != std::string::npos;
  EXPECT_TRUE(warned) << warnings;
  // The bundle as captured (from before #31, no during_trial): no such warning.
  ASSERT_EQ(schedlab("report " + kYieldWakeup + " -o " + html).code, 0);
  EXPECT_EQ(report_data_of(slurp(html))["warnings"].dump().find("tainted"), std::string::npos);
}

TEST(Report, OneSideHasValuesAndHistogramsButNoVerdicts) {
  TempDir dir;
  auto html = (dir.path() / "one.html").string();
  auto o = schedlab("report " + kYieldWakeup + " -o " + html);
  ASSERT_EQ(o.code, 0) << o.out;
  auto data = report_data_of(slurp(html));
  ASSERT_TRUE(data.is_object());
  EXPECT_TRUE(data["diff"].is_null());
  EXPECT_EQ(data["sides"][0]["role"], "only");
  ASSERT_EQ(data["instances"].size(), 3u);
  bool saw_wakeup = false, saw_yield = false;
  for (const auto& in : data["instances"]) {
    if (in["id"] == "wakeup") {
      saw_wakeup = true;
      // README: "Wakeup histogram counts: 187, 186, 187 (560 wakeups)".
      ASSERT_EQ(in["histograms"].size(), 1u);
      EXPECT_EQ(in["histograms"][0]["count"], 560);
      EXPECT_EQ(in["histograms"][0]["repetitions"], 3);
    }
    if (in["id"] == "yield.threads=1") {
      saw_yield = true;
      EXPECT_TRUE(in["histograms"].empty());
      // README: "yield ns_per_yield (threads=1) 3341443, 4403563, 4212114 -> 4212114 ns".
      const auto& m = in["metrics"][0];
      EXPECT_EQ(m["name"], "ns_per_yield");
      EXPECT_NEAR(m["sides"][0]["summary"]["median"].get<double>(), 4212114, 1);
    }
  }
  EXPECT_TRUE(saw_wakeup);
  EXPECT_TRUE(saw_yield);
}

TEST(Report, TheEnvironmentMarksExactlyTheFieldsThatDiffer) {
  TempDir dir;
  auto bundle = nlohmann::json::parse(slurp(kYieldWakeup));
  bundle["configuration"]["sched_tunables"]["sched_rt_runtime_us"] = "900000";  // was "950000"
  bundle["kernel"]["clocksource"]["current"] = "kvm-clock";                     // was "tsc"
  auto other = dir.path() / "other.json";
  spit(other, bundle.dump());
  auto html = (dir.path() / "env.html").string();
  auto o = schedlab("report " + kYieldWakeup + " " + other.string() + " -o " + html);
  ASSERT_EQ(o.code, 0) << o.out;
  auto data = report_data_of(slurp(html));
  ASSERT_TRUE(data.is_object());
  std::map<std::string, nlohmann::json> differing;
  std::size_t rows = 0;
  for (const auto& row : data["environment"]) {
    ++rows;
    if (row["differs"].get<bool>()) differing[row["field"].get<std::string>()] = row["values"];
  }
  EXPECT_GT(rows, 20u) << "every watched field is shown, not only the differing ones";
  ASSERT_EQ(differing.size(), 2u) << data["environment"].dump(1);
  EXPECT_EQ(differing["configuration.sched_tunables.sched_rt_runtime_us"],
            nlohmann::json({"950000", "900000"}));
  EXPECT_EQ(differing["kernel.clocksource"], nlohmann::json({"tsc", "kvm-clock"}));
}

TEST(Report, TextFromBundlesCannotBreakOutOfThePage) {
  TempDir dir;
  auto bundle = nlohmann::json::parse(slurp(kYieldWakeup));
  const std::string label = "</script><script>window.__schedlabInjected=1</script><!-- \u2028";
  const std::string host = "<img src=x onerror=\"window.__schedlabInjected=2\">&amp;";
  bundle["label"] = label;
  bundle["host"]["hostname"] = host;
  auto path = dir.path() / "hostile.json";
  spit(path, bundle.dump());
  auto html = (dir.path() / "hostile.html").string();
  auto o = schedlab("report " + path.string() + " -o " + html);
  ASSERT_EQ(o.code, 0) << o.out;
  auto page = slurp(html);
  // Exactly the page's own three scripts (data, uPlot, report.js) open and close.
  EXPECT_EQ(count_of(page, "<script"), 3u);
  EXPECT_EQ(count_of(page, "</script"), 3u);
  EXPECT_EQ(count_of(page, "<!--"), 0u);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  auto data_block = page.substr(page.find(testing::kDataOpen));
  data_block = data_block.substr(0, data_block.find("</script>"));
  EXPECT_EQ(data_block.find("\u2028"), std::string::npos)
      << "a line separator ends a JS string literal in old engines";
  EXPECT_NE(page.find("<title>schedlab report: &lt;/script&gt;&lt;script&gt;"), std::string::npos);
  // ... and the text reads back unchanged.
  auto data = report_data_of(page);
  ASSERT_TRUE(data.is_object());
  EXPECT_EQ(data["sides"][0]["name"], label);
  EXPECT_EQ(data["sides"][0]["bundles"][0]["hostname"], host);
}

TEST(Report, BadInputIsExitTwoNamingTheFileAndTheOldReportIsKept) {
  TempDir dir;
  auto html = dir.path() / "report.html";
  spit(html, "the previous report");
  auto truncated = dir.path() / "truncated.json";
  spit(truncated, slurp(kYieldWakeup).substr(0, 300));
  auto elsewhere = dir.path() / "elsewhere.json";
  auto moved = nlohmann::json::parse(slurp(kYieldWakeup));
  moved["host"]["fingerprint"] = "another-machine";
  spit(elsewhere, moved.dump());

  struct Case {
    std::string args, named;
  };
  const std::vector<Case> cases = {
      {kYieldWakeup + " " + (dir.path() / "missing.json").string(), "missing.json"},
      {kYieldWakeup + " " + truncated.string(), "truncated.json"},
      {kYieldWakeup + " " + elsewhere.string(), "different hardware"},
      {kPerCgroup + " " + kYieldWakeup, "no workload instance in common"},
  };
  for (const auto& c : cases) {
    auto o = schedlab("report " + c.args + " -o " + html.string());
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.out;
    EXPECT_NE(o.out.find(c.named), std::string::npos) << o.out;
    EXPECT_EQ(slurp(html), "the previous report") << c.args;
  }
  auto o = schedlab("report " + kYieldWakeup + " -o " + (dir.path() / "no-such-dir" / "r.html").string());
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("no-such-dir"), std::string::npos) << o.out;
  EXPECT_EQ(schedlab("report " + kYieldWakeup).code, 2) << "-o is required";
  // No temporary file left behind by any of them.
  EXPECT_EQ(files_in(dir.path()).size(), 3u);

  // A good report replaces the old one.
  o = schedlab("report " + kYieldWakeup + " -o " + html.string());
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_TRUE(report_data_of(slurp(html)).is_object());
  EXPECT_EQ(files_in(dir.path()).size(), 3u);
}

// Why repetitions failed, from the bundles (the run's own output only counts them).
std::string failed_repetitions(const fs::path& dir) {
  std::string out;
  for (const auto& f : files_in(dir))
    for (const auto& in : nlohmann::json::parse(slurp(f))["instances"])
      for (const auto& rep : in["repetitions"])
        if (rep["status"] != "ok")
          out += in["id"].get<std::string>() + ": " + rep["status"].get<std::string>() + " " +
                 rep.value("reason", std::string()) + "\n";
  return out;
}

// The whole quick suite, two real trials with short parameters, one a side: every workload and chart kind
// present, and the page stays small enough to mail or attach to CI.
TEST(Report, AFullSuiteDiffStaysUnderTwoMiB) {
#if defined(SCHEDLAB_ASAN)
  // The page's size does not depend on the build; under ASan the suite's run takes 30 s of CI's budget.
  GTEST_SKIP() << "a size check: the Release build runs it";
#endif
  TempDir dir;
  auto o = schedlab(
      "run --trials 2 --repetitions 2 --seed 3 --settle-timeout 0 --param yield.yields=20000 "
      "--param yield.duration_s=0.1 --param kernbench.files=1 --param wakeup.duration_s=0.1 "
      "--param tbench.duration_s=0.1 --param tbench.warmup_s=0.05 --param chat.messages=3 "
      "--param micro.min_time_s=0.01 --param requests.duration_s=0.1 --param fairness.duration_s=0.1 "
      "--param fairness.warmup_s=0.05 --param sdet.scripts=2 --param groups.loops=10 --out " +
      (dir.path() / "runs").string());
  ASSERT_EQ(o.code, 0) << o.out << failed_repetitions(dir.path() / "runs");
  std::vector<std::string> trials;
  for (const auto& f : files_in(dir.path() / "runs")) trials.push_back(f.string());
  std::sort(trials.begin(), trials.end());  // ...-trial0.json, ...-trial1.json
  ASSERT_EQ(trials.size(), 2u);
  auto html = dir.path() / "suite.html";
  o = schedlab("report " + trials[0] + " " + trials[1] + " -o " + html.string());
  ASSERT_EQ(o.code, 0) << o.out;
  auto size = fs::file_size(html);
  RecordProperty("report_bytes", std::to_string(size));
  std::cout << "full-suite report: " << size << " bytes\n";
  EXPECT_LT(size, 2u << 20);
  auto data = report_data_of(slurp(html));
  ASSERT_TRUE(data.is_object());
  auto bundle = bundles_of(trials[0]).front();
  ASSERT_EQ(data["instances"].size(), bundle["instances"].size());
  std::set<std::string> in_bundle, in_report, with_histograms;
  for (const auto& in : bundle["instances"]) in_bundle.insert(in["workload"].get<std::string>());
  for (const auto& in : data["instances"]) {
    in_report.insert(in["workload"].get<std::string>());
    if (in["histograms"].size() == 2) with_histograms.insert(in["workload"].get<std::string>());
  }
  EXPECT_EQ(in_report, in_bundle);
  for (const char* w :
       {"yield", "kernbench", "tbench", "chat", "wakeup", "requests", "fairness", "sdet", "groups"})
    EXPECT_EQ(in_report.count(w), 1u) << w;
  EXPECT_EQ(with_histograms, (std::set<std::string>{"tbench", "chat", "wakeup", "requests"}));
}

}  // namespace
}  // namespace schedlab
