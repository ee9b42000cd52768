// The diff's power and calibration on real A/A trials (tests/fixtures/aa, captured on this VM by
// bench/aa_collect.sh and reduced by bench/aa_fixture.py): consecutive trials of one batch are split
// even / odd (the interleaved design `diff` trusts) and a shift is injected into the odd side.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
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
    Side base{"even", "even", {}, {}}, other{"odd", "odd", {}, {}};
    for (std::size_t i = start; i < end; i += 2) {
      base.bundles.push_back(trial_bundle(f, f.trials[i], 1.0));
      other.bundles.push_back(trial_bundle(f, f.trials[i + 1], 1.0 + shift));
    }
    auto r = build_diff({base, other}, DiffOptions{});
    const auto& c = r.instances.at(0).metrics.at(0).comparisons.at(0);
    EXPECT_EQ(c.test, "wilcoxon-paired/trials");
    ++t.diffs;
    // A significant slowdown, whether or not its interval clears the --min-effect margin.
    t.worse += c.verdict.rfind("worse", 0) == 0;
    t.better += c.verdict.rfind("better", 0) == 0;
    start = end;
  }
  return t;
}

// Start times that sort in the order given: only their order matters to the pairing.
std::string fmt_time(std::size_t k) {
  auto digits = std::to_string(k);
  return "2026-01-01T" + std::string(8 - std::min<std::size_t>(8, digits.size()), '0') + digits + "Z";
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

// Nothing injected: any better/worse (qualified or not) is false, and must come at most at the rate
// alpha promises (0.05). The disjoint windows of one fixture at 6, 9 and 12 pairs are pooled (kernbench
// has only 8 windows of 12 pairs: one false verdict there is 12%, whatever the true rate); on a fixed
// fixture the count is deterministic.
TEST(DiffCalibration, NothingInjectedIsBetterOrWorseAtMostAtAlpha) {
  for (const char* name : {"yield-ns_per_yield.csv", "kernbench-elapsed_s.csv"}) {
    int diffs = 0, wrong = 0;
    for (std::size_t pairs : {6, 9, 12}) {
      auto t = interleaved_diffs(fixture(name), pairs, 0.0);
      std::cout << name << " A/A at " << pairs << " pairs: " << t.worse << " worse, " << t.better
                << " better of " << t.diffs << " diffs\n";
      diffs += t.diffs;
      wrong += t.worse + t.better;
    }
    ASSERT_GE(diffs, 30) << name;
    EXPECT_LE(wrong, 0.05 * diffs) << name << ": " << wrong << " false verdicts in " << diffs << " A/A diffs";
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

// The printed MDE is a promise: were the true shift that large, the verdict would be `worse` in 80%
// of diffs like this one. Checked by simulation on the real trials: each simulated diff draws n of the
// fixture's real interleaved pairs (neighbouring trials of one batch), each in a coin-flip order (AB or
// BA, as a campaign randomizes it: the fixture's own mean difference, -0.7% for kernbench, is noise
// that a fixed order would add to every diff), reads the MDE the diff prints with nothing injected,
// then injects exactly that shift into the same pairs and asks for `worse`. A shift of the log values
// leaves the pairs' spread, so the injected diff prints the same MDE.
struct MdeCase {
  std::string fixture;
  std::size_t pairs;
};

class PrintedMde : public ::testing::TestWithParam<MdeCase> {};

TEST_P(PrintedMde, HasEightyPercentPowerOnRealPairs) {
  const auto& c = GetParam();
  auto f = fixture(c.fixture);
  std::vector<std::pair<FixtureTrial, FixtureTrial>> population;
  for (std::size_t i = 0; i + 1 < f.trials.size(); i += 2) {
    if (f.trials[i].batch == f.trials[i + 1].batch) population.emplace_back(f.trials[i], f.trials[i + 1]);
  }
  ASSERT_GE(population.size(), 4 * c.pairs);
  constexpr int kDiffs = 800;
  std::mt19937_64 rng(29);
  int detected = 0, finite = 0;
  std::vector<double> mdes;
  for (int sim = 0; sim < kDiffs; ++sim) {
    std::vector<std::size_t> chosen(population.size());
    for (std::size_t i = 0; i < chosen.size(); ++i) chosen[i] = i;
    std::shuffle(chosen.begin(), chosen.end(), rng);
    chosen.resize(c.pairs);
    std::vector<bool> swapped(c.pairs);
    for (std::size_t k = 0; k < c.pairs; ++k) swapped[k] = (rng() & 1) != 0;
    auto sides = [&](double factor) {
      Side base{"base", "base", {}, {}}, other{"other", "other", {}, {}};
      for (std::size_t k = 0; k < chosen.size(); ++k) {
        auto [a, b] = population[chosen[k]];
        if (swapped[k]) std::swap(a, b);
        a.started_at = fmt_time(2 * k);
        b.started_at = fmt_time(2 * k + 1);
        base.bundles.push_back(trial_bundle(f, a, 1.0));
        other.bundles.push_back(trial_bundle(f, b, factor));
      }
      return build_diff({base, other}, DiffOptions{}).instances.at(0).metrics.at(0).comparisons.at(0);
    };
    const auto aa = sides(1.0);
    ASSERT_EQ(aa.test, "wilcoxon-paired/trials");
    ASSERT_EQ(aa.effect_unit, "%");
    if (!std::isfinite(aa.mde)) continue;
    ++finite;
    mdes.push_back(aa.mde);
    const auto shifted = sides(1.0 + aa.mde / 100);
    EXPECT_NEAR(shifted.mde, aa.mde, 1e-6 * aa.mde);
    detected += shifted.verdict == "worse";
  }
  ASSERT_EQ(finite, kDiffs) << "an MDE was infinite at " << c.pairs << " pairs";
  std::sort(mdes.begin(), mdes.end());
  const double power = static_cast<double>(detected) / finite;
  std::cout << c.fixture << " at " << c.pairs << " pairs: median printed MDE " << mdes[mdes.size() / 2]
            << "%, simulated power there " << power << " (" << detected << " of " << finite << ")\n";
  EXPECT_NEAR(power, 0.80, 0.05);
}

INSTANTIATE_TEST_SUITE_P(
    RealTrials, PrintedMde,
    ::testing::Values(MdeCase{"yield-ns_per_yield.csv", 6}, MdeCase{"yield-ns_per_yield.csv", 9},
                      MdeCase{"yield-ns_per_yield.csv", 12}, MdeCase{"kernbench-elapsed_s.csv", 6},
                      MdeCase{"kernbench-elapsed_s.csv", 9}, MdeCase{"kernbench-elapsed_s.csv", 12}),
    [](const auto& test) {
      return test.param.fixture.substr(0, test.param.fixture.find('-')) + "_" +
             std::to_string(test.param.pairs) + "pairs";
    });

}  // namespace
}  // namespace schedlab
