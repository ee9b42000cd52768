// Change points (stats/change_points.hpp) on the real A/A trials of tests/fixtures/aa (captured on this
// VM by bench/aa_collect.sh): each batch is an A/A series; a +5% step and a single 1.5x spike are
// planted into it. The figures printed here are the ones stats/README.md quotes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "stats/change_points.hpp"
#include "test_util.hpp"

namespace schedlab::stats {
namespace {

struct Series {
  std::string name;  // "yield-ns_per_yield batch 2"
  std::vector<double> values;
};

// One series per batch of each fixture, in trial order (the CSV's order).
std::vector<Series> aa_series() {
  std::vector<Series> out;
  for (const char* fixture : {"yield-ns_per_yield", "kernbench-elapsed_s"}) {
    const std::string file = fixture;
    std::ifstream in(std::string(SCHEDLAB_FIXTURES_DIR) + "/aa/" + file + ".csv");
    if (!in) throw std::runtime_error("cannot open fixture aa/" + file + ".csv");
    std::map<int, std::vector<double>> batches;
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#' || line.rfind("batch,", 0) == 0) continue;
      std::istringstream fields(line);
      std::string batch, trial, started_at, value;
      std::getline(fields, batch, ',');
      std::getline(fields, trial, ',');
      std::getline(fields, started_at, ',');
      std::getline(fields, value, ',');
      batches[std::stoi(batch)].push_back(std::stod(value));
    }
    for (auto& [b, v] : batches) out.push_back({file + " batch " + std::to_string(b), std::move(v)});
  }
  return out;
}

// Disjoint windows of `length` consecutive trials of each batch: more A/A series, of a nightly length.
std::vector<Series> aa_windows(std::size_t length) {
  std::vector<Series> out;
  for (const auto& s : aa_series())
    for (std::size_t at = 0; at + length <= s.values.size(); at += length)
      out.push_back({s.name + " [" + std::to_string(at) + ", " + std::to_string(at + length) + ")",
                     {s.values.begin() + static_cast<std::ptrdiff_t>(at),
                      s.values.begin() + static_cast<std::ptrdiff_t>(at + length)}});
  return out;
}

TEST(ChangePoints, AASeriesGiveFewChanges) {
  int series = 0, with_change = 0;
  for (const auto& set : {aa_series(), aa_windows(40)})
    for (const auto& s : set) {
      const auto found = change_points(s.values, {});
      ++series;
      if (!found.empty()) ++with_change;
      for (const auto& c : found)
        std::cout << "A/A change: " << s.name << " at " << c.index << " " << c.relative * 100 << "% p "
                  << c.p_value << "\n";
    }
  std::cout << "A/A: " << with_change << " of " << series << " series with a change at alpha 0.05\n";
  // Measured: 9 of 26. The A/A trials are not stationary on this VM: those changes are level shifts of
  // 6-25% that the machine made by itself (stats/README.md); the bound keeps the rate from growing.
  EXPECT_LE(with_change, 9);
}

TEST(ChangePoints, FivePercentStepFoundNearItsStart) {
  int series = 0, found_near = 0, covered = 0;
  for (const auto& set : {aa_series(), aa_windows(40)})
    for (auto s : set) {
      const std::size_t step = s.values.size() / 2;
      for (std::size_t i = step; i < s.values.size(); ++i) s.values[i] *= 1.05;
      ++series;
      const auto found = change_points(s.values, {});
      for (const auto& c : found) {
        if (c.index + 5 < step || c.index > step + 5) continue;
        ++found_near;
        if (c.relative_lower <= 0.05 && 0.05 <= c.relative_upper) ++covered;
        std::cout << "step: " << s.name << " at " << c.index << " (step " << step << ") " << c.relative * 100
                  << "% [" << c.relative_lower * 100 << ", " << c.relative_upper * 100 << "] p " << c.p_value
                  << "\n";
        break;
      }
    }
  std::cout << "+5% step: found within 5 points in " << found_near << " of " << series
            << " series, interval covers 5% in " << covered << "\n";
  // Measured (seed 1): 5 of 26, the interval covering 5% in 2 of them; a regression guard, not a goal.
  EXPECT_GE(found_near, 5);
  EXPECT_GE(covered, 2);
}

TEST(ChangePoints, SingleSpikeIsNoChange) {
  int series = 0, spiked = 0;
  for (const auto& set : {aa_series(), aa_windows(40)})
    for (auto s : set) {
      if (!change_points(s.values, {}).empty()) continue;  // only A/A series without a change of their own
      ++series;
      s.values[s.values.size() / 2] *= 1.5;
      const auto found = change_points(s.values, {});
      if (!found.empty()) {
        ++spiked;
        std::cout << "spike made a change: " << s.name << " at " << found[0].index << "\n";
      }
    }
  std::cout << "1.5x spike: a change in " << spiked << " of " << series << " series\n";
  EXPECT_EQ(spiked, 0);
}

TEST(ChangePoints, SameSeedSameOutput) {
  auto s = aa_series().front().values;
  for (std::size_t i = s.size() / 2; i < s.size(); ++i) s[i] *= 1.05;
  ChangePointOptions o;
  o.seed = 42;
  const auto a = change_points(s, o), b = change_points(s, o);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].p_value, b[i].p_value);
    EXPECT_EQ(a[i].shift.estimate, b[i].shift.estimate);
  }
}

TEST(ChangePoints, BadInputNamesTheArgument) {
  const std::vector<double> v{1, 2, 3, 4, 5, 6, NAN};
  EXPECT_THROW(change_points(v, {}), std::invalid_argument);
  ChangePointOptions o;
  o.min_segment = 1;
  try {
    change_points(std::vector<double>{1, 2, 3}, o);
    FAIL() << "min_segment 1 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("min_segment"), std::string::npos) << e.what();
  }
  EXPECT_EQ(permutation_count({}), 399u);
}

using ::schedlab::testing::schedlab;

// Real short runs of the yield workload indexed into a store, the runtime configuration switched from
// the machine as found to half the CPU bandwidth (cpu.max, a 10 ms period) after kBefore runs: a known
// slowdown of the wall-clock time per yield, with the same instance and parameters throughout.
TEST(ChangePointsCli, FindsARuntimeSwitchInRealRunsAndNamesWhatChanged) {
  constexpr int kBefore = 8, kAfter = 8;
  ::schedlab::testing::TempDir dir;
  const std::string bundles = (dir.path() / "bundles").string(), store = (dir.path() / "store.db").string();
  for (int i = 0; i < kBefore + kAfter; ++i) {
    const std::string side = i < kBefore ? "name=full" : "name=half,cpu.max=5000/10000";
    const auto o = schedlab(
        "run --workload yield --repetitions 3 --settle-timeout 0 --no-counters --param "
        "yield.yields=20000 --configuration " +
        side + " --cache-dir " + (dir.path() / "cache").string() + " --out " + bundles);
    ASSERT_EQ(o.code, 0) << o.out;
  }
  ASSERT_EQ(schedlab("store rebuild " + bundles + " --store " + store).code, 0);
  // The switch doubles the time per yield; this VM drifts a few percent, now and then 15 %, between runs
  // of the same configuration, which the default 2 % would report as changes of their own.
  const std::string min_effect = " --min-effect 25";
  const auto o =
      schedlab("changes --store " + store + " --workload yield --metric ns_per_yield --json" + min_effect);
  ASSERT_EQ(o.code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j.at("changes").size(), 1u) << o.out;
  const auto& c = j.at("changes")[0];
  EXPECT_EQ(c.at("status"), "suspected");  // no rerun has confirmed it
  EXPECT_EQ(c.at("index").get<int>(), kBefore);
  EXPECT_GT(c.at("change_pct").get<double>(), 20);
  EXPECT_LE(c.at("p_value").get<double>(), 0.05);
  bool label_named = false;
  for (const auto& d : c.at("differences"))
    label_named |= d.get<std::string>().find("label: full -> half") == 0;
  EXPECT_TRUE(label_named) << c.at("differences").dump(1);
  const auto text = schedlab("changes --store " + store + min_effect);
  EXPECT_EQ(text.code, 0) << text.out;
  std::cout << text.out;
  EXPECT_NE(text.out.find("yield.ns_per_yield"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not confirmed by a rerun"), std::string::npos) << text.out;
  std::istringstream lines(text.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

TEST(ChangePointsCli, BadInputExitsTwoNamingTheField) {
  ::schedlab::testing::TempDir dir;
  const auto missing = schedlab("changes --store " + (dir.path() / "none.db").string());
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find("no store at"), std::string::npos) << missing.out;
  const std::string bundles = (dir.path() / "b").string(), store = (dir.path() / "s.db").string();
  ASSERT_EQ(schedlab("run --workload yield --repetitions 1 --settle-timeout 0 --no-counters --param "
                     "yield.yields=20000 --out " +
                     bundles)
                .code,
            0);
  ASSERT_EQ(schedlab("store rebuild " + bundles + " --store " + store).code, 0);
  for (const auto& [args, field] : std::vector<std::pair<std::string, std::string>>{
           {"--since 2026-13-01", "--since 2026-13-01"},
           {"--since yesterday", "--since yesterday"},
           {"--metric no_such_metric", "--metric no_such_metric"},
           {"--workload nope", "nope"},
           {"--alpha 2", "--alpha 2"}}) {
    const auto o = schedlab("changes --store " + store + " " + args);
    EXPECT_EQ(o.code, 2) << args << ": " << o.out;
    EXPECT_NE(o.out.find(field), std::string::npos) << args << ": " << o.out;
  }
}

}  // namespace
}  // namespace schedlab::stats
