// The diff's power and calibration on real A/A trials (tests/fixtures/aa, captured on this VM by
// bench/aa_collect.sh and reduced by bench/aa_fixture.py): consecutive trials of one batch are split
// even / odd (the interleaved design `diff` trusts) and a shift is injected into the odd side.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/metric.hpp"
#include "diff/diff.hpp"

namespace schedlab {
namespace {

struct FixtureTrial {
  int batch = 0;
  std::string started_at;
  double value = 0;
};

struct Fixture {
  std::string workload, version, metric, unit;
  Direction direction = Direction::kLowerIsBetter;
  std::vector<FixtureTrial> trials;
};

Fixture read_fixture(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  Fixture f;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# metric: ", 0) == 0) {
      std::istringstream words(line.substr(10));
      std::string direction;
      words >> f.workload >> f.version >> f.metric >> f.unit >> direction;
      f.direction = direction_from_string(direction);
    }
    if (line.empty() || line[0] == '#' || line.rfind("batch,", 0) == 0) continue;
    std::istringstream fields(line);
    std::string batch, trial, started_at, value;
    std::getline(fields, batch, ',');
    std::getline(fields, trial, ',');
    std::getline(fields, started_at, ',');
    std::getline(fields, value, ',');
    f.trials.push_back({std::stoi(batch), started_at, std::stod(value)});
  }
  return f;
}

LoadedBundle trial_bundle(const Fixture& f, const FixtureTrial& t, double factor) {
  Instance in;
  in.id = f.workload;
  in.workload = f.workload;
  in.workload_version = f.version;
  in.params_hash = "fixture";
  in.metric_info[f.metric] = {f.unit, f.direction, true, ""};
  Repetition rep;
  rep.started_at = t.started_at;
  rep.metrics[f.metric] = {t.value * factor, f.unit};
  in.repetitions.push_back(rep);
  Bundle b;
  b.started_at = t.started_at;
  b.instances.push_back(in);
  return {"fixture", b};
}

struct Tally {
  int diffs = 0, worse = 0, better = 0;
};

// Disjoint windows of 2n consecutive trials within one batch: n pairs each.
Tally interleaved_diffs(const Fixture& f, std::size_t n, double shift) {
  Tally t;
  std::size_t start = 0;
  while (start + 2 * n <= f.trials.size()) {
    std::size_t end = start + 2 * n;
    if (f.trials[start].batch != f.trials[end - 1].batch) {
      const int next_batch = f.trials[end - 1].batch;  // no window fits before it
      while (f.trials[start].batch != next_batch) ++start;
      continue;
    }
    Side base{"even", "even", {}}, other{"odd", "odd", {}};
    for (std::size_t i = start; i < end; i += 2) {
      base.bundles.push_back(trial_bundle(f, f.trials[i], 1.0));
      other.bundles.push_back(trial_bundle(f, f.trials[i + 1], 1.0 + shift));
    }
    auto r = build_diff({base, other}, DiffOptions{});
    const auto& c = r.instances.at(0).metrics.at(0).comparisons.at(0);
    EXPECT_EQ(c.test, "wilcoxon-paired/trials");
    ++t.diffs;
    t.worse += c.verdict == "worse";
    t.better += c.verdict == "better";
    start = end;
  }
  return t;
}

Fixture fixture(const std::string& name) {
  return read_fixture(std::filesystem::path(SCHEDLAB_FIXTURES_DIR) / "aa" / name);
}

// What this VM's noise supports: trials of its headline metrics vary by about 10% (yield) to 9%
// (a 3 s kernbench build) from one to the next, so the paired test's minimum detectable effect at 80%
// power is about 15% at 9 pairs and 8% at 30 (bench/aa_calibration.py). A lab machine does better.
struct PowerCase {
  std::string fixture;
  std::size_t pairs;
  double shift;
  double min_rate;  // of diffs that must say `worse`
};

class DiffPower : public ::testing::TestWithParam<PowerCase> {};

TEST_P(DiffPower, AnInjectedSlowdownIsWorseOftenEnoughAndNeverBetter) {
  const auto& c = GetParam();
  auto f = fixture(c.fixture);
  ASSERT_EQ(f.direction, Direction::kLowerIsBetter) << "a positive shift must read as worse";
  auto t = interleaved_diffs(f, c.pairs, c.shift);
  ASSERT_GE(t.diffs, 10) << "too few trials in the fixture for a rate";
  std::cout << c.fixture << ": +" << 100 * c.shift << "% at " << c.pairs << " pairs called worse in "
            << t.worse << " of " << t.diffs << " diffs\n";
  EXPECT_GE(t.worse, c.min_rate * t.diffs) << t.worse << " of " << t.diffs << " diffs said worse";
  EXPECT_EQ(t.better, 0) << "a slowdown called better";
}

INSTANTIATE_TEST_SUITE_P(RealTrials, DiffPower,
                         ::testing::Values(PowerCase{"yield-ns_per_yield.csv", 30, 0.10, 0.8},
                                           PowerCase{"yield-ns_per_yield.csv", 9, 0.25, 0.8},
                                           PowerCase{"kernbench-elapsed_s.csv", 9, 0.25, 0.8}),
                         [](const auto& test) {
                           auto name = test.param.fixture.substr(0, test.param.fixture.find('-'));
                           return name + "_" + std::to_string(test.param.pairs) + "pairs_plus" +
                                  std::to_string(static_cast<int>(100 * test.param.shift + 0.5)) + "pct";
                         });

// Nothing injected: alpha is 0.05, and on a fixed fixture the count is deterministic.
TEST(DiffCalibration, NothingInjectedIsRarelyBetterOrWorse) {
  for (const char* name : {"yield-ns_per_yield.csv", "kernbench-elapsed_s.csv"}) {
    for (std::size_t pairs : {6, 9}) {
      auto t = interleaved_diffs(fixture(name), pairs, 0.0);
      ASSERT_GE(t.diffs, 10) << name;
      EXPECT_LE(t.worse + t.better, t.diffs / 10)
          << name << " at " << pairs << " pairs: " << t.worse << " worse, " << t.better << " better";
    }
  }
}

// The target, +10% at 9 pairs in 80% of diffs, needs trials that vary by about 6% or less; on
// this VM the rate is far lower (see the README). What must hold anyway: the sign.
TEST(DiffCalibration, TenPercentAtNinePairsIsNeverCalledBetter) {
  for (const char* name : {"yield-ns_per_yield.csv", "kernbench-elapsed_s.csv"}) {
    auto t = interleaved_diffs(fixture(name), 9, 0.10);
    ASSERT_GE(t.diffs, 10) << name;
    EXPECT_EQ(t.better, 0) << name;
    std::cout << name << ": +10% at 9 pairs called worse in " << t.worse << " of " << t.diffs << " diffs\n";
  }
}

}  // namespace
}  // namespace schedlab
