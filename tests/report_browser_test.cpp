// The report in a real browser: Debian's headless Chromium, driven by playwright-core
// (report/browser-test/read-report.mjs), opens pages written by `schedlab report` from real bundles.
// The page must draw every chart with no console error and no request, and what each uPlot instance
// plots is read back and compared here with the bundles themselves (not with the page's own data block).
// Screenshots land in the build directory (artifacts/) for CI and for people.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "report_util.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::bundles_of;
using testing::instance_key;
using testing::instances_of;
using testing::ok_repetitions;
using testing::schedlab;
using testing::sh;
using testing::slurp;
using testing::spit;
using testing::TempDir;

const fs::path kChromium = "/usr/bin/chromium";
const fs::path kBrowserTest = fs::path(SCHEDLAB_SOURCE_DIR) / "report/browser-test";
const std::string kPerCgroup = std::string(SCHEDLAB_FIXTURES_DIR) + "/profile/counters-per-cgroup";
const std::string kPerTask = std::string(SCHEDLAB_FIXTURES_DIR) + "/profile/counters-per-task";
const std::string kYieldWakeup = std::string(SCHEDLAB_FIXTURES_DIR) + "/exporter/yield-wakeup.json";

using Side = std::pair<std::string, std::vector<json>>;  // name, bundles

// The pages the tests look at, written by `schedlab report` and opened in one browser run (a Chromium
// start costs seconds); each test then reads its page's result.
struct Page {
  std::string name, args;
};
const std::vector<Page> kPages = {
    // The two fixtures differ in counter scope, a measuring method: compared only with --force.
    {"report-two-sides", "--force " + kPerCgroup + " " + kPerTask},
    {"report-one-side", "HOSTILE"},  // the wakeup fixture under a label that tries to close the script
    {"report-one-side-profile", kPerTask},
};
const std::string kHostileLabel = "</script><script>window.__schedlabInjected=1</script><b>bold</b>";

class ReportBrowser : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kChromium) || !fs::exists(kBrowserTest / "node_modules/playwright-core")) return;
    dir_ = new TempDir;
    hostile_ = json::parse(slurp(kYieldWakeup));
    hostile_["label"] = kHostileLabel;
    auto hostile_path = dir_->path() / "hostile-label.json";
    spit(hostile_path, hostile_.dump());
    fs::create_directories(SCHEDLAB_ARTIFACT_DIR);
    std::string node_args;
    for (const auto& p : kPages) {
      auto html = dir_->path() / (p.name + ".html");
      auto args = p.args == "HOSTILE" ? hostile_path.string() : p.args;
      auto o = schedlab("report " + args + " -o " + html.string());
      if (o.code != 0) {
        setup_error_ += "schedlab report " + args + ": " + o.out;
        return;
      }
      node_args += " " + html.string() + " " + (fs::path(SCHEDLAB_ARTIFACT_DIR) / (p.name + ".png")).string();
    }
    auto err = dir_->path() / "node.stderr";
    auto r = sh("{ node " + (kBrowserTest / "read-report.mjs").string() + node_args + " 2>" + err.string() +
                "; }");
    try {
      auto results = json::parse(r.out);
      for (std::size_t i = 0; i < kPages.size(); ++i) pages_[kPages[i].name] = results.at(i);
    } catch (const json::exception& e) {
      setup_error_ += std::string("read-report.mjs (exit ") + std::to_string(r.code) + "): " + e.what() +
                      "\n" + r.out + slurp(err);
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    if (!fs::exists(kChromium))
      GTEST_SKIP() << kChromium << " is absent: apt-get install chromium (ci/setup does)";
    ASSERT_TRUE(fs::exists(kBrowserTest / "node_modules/playwright-core"))
        << "playwright-core is not installed: run ci/setup (npm ci in " << kBrowserTest << ")";
    ASSERT_EQ(setup_error_, "");
  }

  static const json& page(const std::string& name) { return pages_.at(name); }

  static inline TempDir* dir_ = nullptr;
  static inline json hostile_;
  static inline std::map<std::string, json> pages_;
  static inline std::string setup_error_;
};

// Drawn, and drawn without complaint, and from this file alone.
void expect_clean_render(const json& page) {
  EXPECT_EQ(page.value("rendered", ""), "true");
  EXPECT_EQ(page["console_errors"], json::array());
  EXPECT_EQ(page["requests"], json::array()) << "the report must not load anything";
  ASSERT_FALSE(page["charts"].empty());
  EXPECT_EQ(page["chart_boxes"], page["charts"].size());
  for (const auto& c : page["charts"]) {
    EXPECT_TRUE(c["canvas"].get<bool>()) << c["id"];
    EXPECT_GT(c["inked_pixels"].get<int>(), 1000) << c["id"] << " " << c["kind"];
    for (const auto& axis : c["axes"])
      EXPECT_FALSE(axis.get<std::string>().empty()) << c["id"] << " unlabelled axis";
  }
}

std::vector<json> charts_of(const json& page, const std::string& kind) {
  std::vector<json> out;
  for (const auto& c : page["charts"])
    if (c["kind"] == kind) out.push_back(c);
  return out;
}

// Per side: the ok repetitions' values as points, trial after trial, then the side's mean as a line.
void expect_values_chart(const json& chart, const std::vector<Side>& sides) {
  const auto key = chart["instance"].get<std::string>();
  const auto metric = chart["metric"].get<std::string>();
  SCOPED_TRACE(key + " " + metric);
  const auto& data = chart["data"];
  ASSERT_EQ(data.size(), 1 + 2 * sides.size());
  ASSERT_EQ(chart["series"].size(), data.size());
  for (std::size_t i = 0; i < sides.size(); ++i) {
    const auto& [name, bundles] = sides[i];
    EXPECT_EQ(chart["series"][1 + 2 * i], name);
    EXPECT_EQ(chart["series"][2 + 2 * i], name + " mean");
    std::vector<double> expected;
    for (const auto& rep : ok_repetitions(bundles, key))
      expected.push_back(rep["metrics"][metric]["value"].get<double>());
    ASSERT_FALSE(expected.empty());
    const auto& points = data[1 + 2 * i];
    ASSERT_GE(points.size(), expected.size());
    for (std::size_t k = 0; k < points.size(); ++k) {
      if (k < expected.size())
        EXPECT_EQ(points[k].get<double>(), expected[k]) << name << " repetition " << k;
      else
        EXPECT_TRUE(points[k].is_null());
    }
    double mean = 0;
    for (double v : expected) mean += v / static_cast<double>(expected.size());
    for (const auto& m : data[2 + 2 * i]) EXPECT_NEAR(m.get<double>(), mean, 1e-9 * std::fabs(mean)) << name;
  }
}

struct Merged {
  std::map<std::pair<double, double>, double> buckets;  // (lower, upper) -> count
  double count = 0;
};

Merged merged_histogram(const std::vector<json>& bundles, const std::string& key) {
  Merged m;
  for (const auto& rep : ok_repetitions(bundles, key)) {
    const auto& h = rep["details"]["histogram"];
    for (const auto& b : h["buckets"])
      m.buckets[{b[0].get<double>(), b[1].get<double>()}] += b[2].get<double>();
    m.count += h["count"].get<double>();
  }
  return m;
}

// Share of each side's samples per bucket, at the bucket's upper bound; null where a side has none.
void expect_histogram_chart(const json& chart, const std::vector<Side>& sides) {
  const auto key = chart["instance"].get<std::string>();
  SCOPED_TRACE(key);
  EXPECT_EQ(chart["log_scales"], json({"x", "y"}));
  const auto& x = chart["data"][0];
  for (std::size_t i = 0; i < sides.size(); ++i) {
    auto m = merged_histogram(sides[i].second, key);
    ASSERT_GT(m.count, 0);
    std::map<double, double> share;
    for (const auto& [bounds, n] : m.buckets) share[bounds.second] = 100 * n / m.count;
    const auto& y = chart["data"][1 + i];
    std::size_t seen = 0;
    for (std::size_t k = 0; k < x.size(); ++k) {
      auto it = share.find(x[k].get<double>());
      if (it == share.end()) {
        EXPECT_TRUE(y[k].is_null()) << x[k];
      } else {
        ++seen;
        EXPECT_NEAR(y[k].get<double>(), it->second, 1e-12 * it->second) << x[k];
      }
    }
    EXPECT_EQ(seen, share.size()) << "every bucket of " << sides[i].first << " is plotted";
  }
}

// x is -log10(1 - q); the latency plotted must be the lower bound of the bucket in which the running
// count of the bundles' pooled histogram reaches q of all samples.
void expect_percentile_chart(const json& chart, const std::vector<Side>& sides) {
  const auto key = chart["instance"].get<std::string>();
  SCOPED_TRACE(key);
  EXPECT_EQ(chart["log_scales"], json({"y"}));
  const auto& x = chart["data"][0];
  ASSERT_GT(x.size(), 50u);
  for (std::size_t i = 0; i < sides.size(); ++i) {
    auto m = merged_histogram(sides[i].second, key);
    const auto& y = chart["data"][1 + i];
    std::size_t plotted = 0;
    for (std::size_t k = 0; k < x.size(); ++k) {
      const double need = (1 - std::pow(10.0, -x[k].get<double>())) * m.count;
      const double slack = 1e-9 * m.count;
      double before = 0;
      bool found = false;
      for (const auto& [bounds, n] : m.buckets) {
        if (y[k].is_null() ? bounds.first == 0 : bounds.first == y[k].get<double>()) {
          EXPECT_LE(before, need + slack) << "p at x=" << x[k] << " lies below bucket " << bounds.first;
          EXPECT_GE(before + n, need - slack) << "p at x=" << x[k] << " lies above bucket " << bounds.first;
          found = true;
          break;
        }
        before += n;
      }
      EXPECT_TRUE(found) << "x=" << x[k] << " plots " << y[k] << ", not a bucket's lower bound";
      plotted += !y[k].is_null();
    }
    EXPECT_GT(plotted, x.size() / 2);
  }
}

// diffprofile as DESIGN.md defines it, from the bundles: per symbol, the other side's samples scaled to
// the baseline's operations, minus the baseline's.
std::map<std::string, double> profile_deltas(const std::vector<json>& base, const std::vector<json>& other,
                                             const std::string& key) {
  struct Totals {
    std::map<std::string, double> symbols;
    double operations = 0;
    std::size_t repetitions = 0;
    bool every_rep_has_operations = true;
  };
  auto totals = [&](const std::vector<json>& bundles) {
    Totals t;
    for (const auto& in : instances_of(bundles, key))
      for (const auto& rep : in["diagnostics"]) {
        if (rep["status"] != "ok" || !rep.contains("profile") || rep["profile"]["status"] != "ok") continue;
        ++t.repetitions;
        const auto& m = rep["metrics"];
        if (m.contains("operations") && m["operations"]["value"].get<double>() > 0)
          t.operations += m["operations"]["value"].get<double>();
        else
          t.every_rep_has_operations = false;
        for (const auto& [s, n] : rep["profile"]["symbols"].items()) t.symbols[s] += n.get<double>();
      }
    return t;
  };
  auto a = totals(base), b = totals(other);
  // Both per operation, or both per repetition when either side lacks operations.
  const bool per_operation = a.every_rep_has_operations && b.every_rep_has_operations;
  const double scale = per_operation
                           ? a.operations / b.operations
                           : static_cast<double>(a.repetitions) / static_cast<double>(b.repetitions);
  std::map<std::string, double> out;
  for (const auto& [s, n] : a.symbols) out[s] -= n;
  for (const auto& [s, n] : b.symbols) out[s] += n * scale;
  return out;
}

std::vector<std::string> verdicts_of(const json& diff_json, const std::string& side) {
  std::vector<std::string> out;
  for (const auto& in : diff_json["instances"])
    for (const auto& m : in["metrics"])
      for (const auto& c : m["comparisons"])
        if (c["side"] == side)
          out.push_back(in["workload"].get<std::string>() + "/" + in["params_hash"].get<std::string>() + " " +
                        m["name"].get<std::string>() + " " +
                        (c["verdict"].is_null() ? "-" : c["verdict"].get<std::string>()));
  return out;
}

std::size_t headline_metrics(const std::vector<json>& bundles) {
  std::size_t n = 0;
  for (const auto& in : bundles.front()["instances"])
    for (const auto& [name, info] : in["metric_info"].items()) n += info["headline"].get<bool>();
  return n;
}

TEST_F(ReportBrowser, TwoSidesChartsPlotTheBundlesValuesAndTheTablesTheDiffsVerdicts) {
  const auto& page = ReportBrowser::page("report-two-sides");
  expect_clean_render(page);
  const std::vector<Side> sides = {{"counters-per-cgroup", bundles_of(kPerCgroup)},
                                   {"counters-per-task", bundles_of(kPerTask)}};

  auto values = charts_of(page, "values");
  EXPECT_EQ(values.size(), headline_metrics(sides[0].second));
  for (const auto& c : values) expect_values_chart(c, sides);
  ASSERT_FALSE(values.empty());
  EXPECT_EQ(values[0]["axes"][1], "ns_per_yield (ns)");

  auto profiles = charts_of(page, "diffprofile");
  ASSERT_EQ(profiles.size(), 1u);
  const auto& p = profiles[0];
  auto deltas = profile_deltas(sides[0].second, sides[1].second, p["instance"].get<std::string>());
  const auto& symbols = p["labels"];
  const auto& bars = p["data"][1];
  ASSERT_EQ(symbols.size(), bars.size());
  ASSERT_FALSE(bars.empty());
  for (std::size_t i = 0; i < bars.size(); ++i) {
    auto s = symbols[i].get<std::string>();
    ASSERT_EQ(deltas.count(s), 1u) << s;
    EXPECT_NEAR(bars[i].get<double>(), deltas[s], 1e-6 * std::max(1.0, std::fabs(deltas[s]))) << s;
    if (i > 0) {
      EXPECT_LE(bars[i].get<double>(), bars[i - 1].get<double>()) << "largest increase first";
    }
  }
  // The README of the fixture: the largest increase is finish_task_switch (+65%).
  EXPECT_EQ(symbols[0].get<std::string>().rfind("finish_task_switch", 0), 0u) << symbols[0];

  // Each verdict cell says what `schedlab diff` says.
  auto diff = schedlab("diff --json --force " + kPerCgroup + " " + kPerTask);
  ASSERT_EQ(diff.code, 0) << diff.out;
  std::vector<std::string> shown;
  for (const auto& v : page["verdicts"])
    shown.push_back(v["instance"].get<std::string>() + " " + v["metric"].get<std::string>() + " " +
                    (v["verdict"].is_null() ? "-" : v["verdict"].get<std::string>()));
  EXPECT_EQ(shown, verdicts_of(json::parse(diff.out), "counters-per-task"));

  // #28.4: the interval column gives the level each interval achieves (exact rank intervals reach
  // more than the one asked for; 2 trials a side reach 66.7% or 100%), as diff --json's
  // ci_confidence has it, not a "95% CI" heading.
  ASSERT_GT(page["diff_heads"].size(), 6u) << page["diff_heads"].dump();
  EXPECT_EQ(page["diff_heads"][6], "CI (achieved level)");
  std::vector<std::string> levels_shown, levels_computed;
  for (const auto& v : page["verdicts"]) {
    const auto text = v["interval"].get<std::string>();
    levels_shown.push_back(text.substr(text.rfind(' ') + 1));
  }
  const auto diff_json = json::parse(diff.out);
  for (const auto& in : diff_json["instances"])
    for (const auto& m : in["metrics"])
      for (const auto& c : m["comparisons"])
        if (c["side"] == "counters-per-task") {
          char level[16];
          std::snprintf(level, sizeof level, "%.1f%%", 100 * c["ci_confidence"].get<double>());
          levels_computed.push_back(level);
        }
  EXPECT_EQ(levels_shown, levels_computed);

  // #21: the page opens on the diff's verdict table, in its order, each line leading to its instance.
  EXPECT_EQ(page["first_section"], "verdicts");
  const auto& summary = diff_json["summary"];
  ASSERT_EQ(page["summary"].size(), summary.size());
  ASSERT_FALSE(summary.empty());
  for (std::size_t i = 0; i < summary.size(); ++i) {
    const auto& line = page["summary"][i];
    const auto key =
        summary[i]["workload"].get<std::string>() + "/" + summary[i]["params_hash"].get<std::string>();
    EXPECT_EQ(line["instance"], key);
    EXPECT_EQ(line["metric"], summary[i]["metric"]);
    EXPECT_EQ(line["verdict"], summary[i]["verdict"]);
    EXPECT_EQ(line["text"], summary[i]["text"]["verdict"]) << "the verdict as `schedlab diff` prints it";
    EXPECT_EQ(line["target_key"], key) << "the line's link leads to its instance's section";
  }
}

TEST_F(ReportBrowser, OneSideDrawsLatencyHistogramsAndPercentilesAndKeepsHostileTextAsText) {
  const auto& page = ReportBrowser::page("report-one-side");
  const auto& bundle = hostile_;
  const std::string label = kHostileLabel;
  expect_clean_render(page);
  EXPECT_FALSE(page["injected"].get<bool>());
  EXPECT_EQ(page["heading"], "schedlab report: " + label);
  EXPECT_EQ(page["title"], "schedlab report: " + label);
  EXPECT_TRUE(page["verdicts"].empty()) << "one side: no verdicts";
  EXPECT_TRUE(page["summary"].empty()) << "one side: no verdict table";

  const std::vector<Side> sides = {{label, {bundle}}};
  auto values = charts_of(page, "values");
  EXPECT_EQ(values.size(), headline_metrics(sides[0].second));
  for (const auto& c : values) expect_values_chart(c, sides);

  std::string wakeup;
  for (const auto& in : bundle["instances"])
    if (in["workload"] == "wakeup") wakeup = instance_key(in);
  auto histograms = charts_of(page, "histogram");
  ASSERT_EQ(histograms.size(), 1u);
  EXPECT_EQ(histograms[0]["instance"], wakeup);
  expect_histogram_chart(histograms[0], sides);
  auto percentiles = charts_of(page, "percentiles");
  ASSERT_EQ(percentiles.size(), 1u);
  expect_percentile_chart(percentiles[0], sides);
}

// One side has no diffprofile: its own largest symbols, the samples summed over its diagnostic repetitions.
TEST_F(ReportBrowser, OneSideDrawsItsProfilesTopSymbols) {
  const auto& page = ReportBrowser::page("report-one-side-profile");
  expect_clean_render(page);
  auto bundles = bundles_of(kPerTask);
  auto charts = charts_of(page, "profile");
  ASSERT_EQ(charts.size(), 1u);
  std::map<std::string, double> samples;
  for (const auto& in : instances_of(bundles, charts[0]["instance"].get<std::string>()))
    for (const auto& rep : in["diagnostics"])
      if (rep["status"] == "ok" && rep.contains("profile") && rep["profile"]["status"] == "ok")
        for (const auto& [s, n] : rep["profile"]["symbols"].items()) samples[s] += n.get<double>();
  std::vector<double> largest;
  for (const auto& [s, n] : samples) largest.push_back(n);
  std::sort(largest.rbegin(), largest.rend());
  largest.resize(std::min<std::size_t>(largest.size(), 20));
  const auto& symbols = charts[0]["labels"];
  const auto& bars = charts[0]["data"][1];
  ASSERT_EQ(bars.size(), largest.size());
  for (std::size_t i = 0; i < bars.size(); ++i) {
    EXPECT_EQ(bars[i].get<double>(), samples.at(symbols[i].get<std::string>())) << symbols[i];
    EXPECT_EQ(bars[i].get<double>(), largest[i]) << "the largest symbols, largest first";
  }
}

}  // namespace
}  // namespace schedlab
