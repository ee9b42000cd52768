// The sequential analysis of experiments (stats/sequential.hpp): the confidence sequence against its
// closed form, its tuning and plan, and its error rate under repeated looks on real A/A trials, next to
// the naive rule that the sequence replaces.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "aa_pool.hpp"
#include "stats/sequential.hpp"

namespace schedlab::stats {
namespace {

TEST(Sequence, HalfWidthIsTheGaussianMixtureBoundary) {
  // sqrt(2 (t r + 1) / (t^2 r) log(sqrt(t r + 1) / alpha)) for unit variance, as drconfseq's
  // std_conjmix_margin computes it (values from that formula in Python's math module).
  EXPECT_NEAR(sequence_half_width(100, 1, 0.1, 0.05), 0.30378110214259524, 1e-12);
  EXPECT_NEAR(sequence_half_width(10, 1, 1.0, 0.05), 0.9606401928868574, 1e-12);
  // The spread enters as t sd^2 r, and the width scales with sd when r scales as 1 / sd^2.
  EXPECT_NEAR(sequence_half_width(100, 0.02, 0.1 / (0.02 * 0.02), 0.05), 0.02 * 0.30378110214259524, 1e-12);
  EXPECT_THROW(sequence_half_width(0, 1, 1, 0.05), std::invalid_argument);
  EXPECT_THROW(sequence_half_width(10, 1, 0, 0.05), std::invalid_argument);
  EXPECT_THROW(sequence_half_width(10, 1, 1, 1.0), std::invalid_argument);
}

TEST(Sequence, TuningMakesTheSequenceNarrowestAtItsTime) {
  for (double t : {6.0, 40.0, 500.0}) {
    const double sd = 0.03;
    const double r = sequence_tuning(t, sd, 0.05);
    const double at = sequence_half_width(t, sd, r, 0.05);
    EXPECT_LE(at, sequence_half_width(t, sd, r * 1.5, 0.05)) << t;
    EXPECT_LE(at, sequence_half_width(t, sd, r / 1.5, 0.05)) << t;
    // Wider than the fixed-n interval at t (the price of looking at every n), but not by more than 2x.
    const double fixed = 1.959964 * sd / std::sqrt(t);
    EXPECT_GT(at, fixed) << t;
    EXPECT_LT(at, 2 * fixed) << t;
  }
}

TEST(Sequence, PlanIsTheFirstPairCountThatReachesTheTarget) {
  const double sd = 0.02, target = std::log1p(0.03);
  const auto plan = plan_sequential(sd, target, 0.05, 0.8, 10000);
  ASSERT_TRUE(plan.reachable);
  EXPECT_LE(plan.detectable, target);
  const double before =
      sequence_detectable_shift(static_cast<double>(plan.pairs - 1), sd,
                                sequence_tuning(static_cast<double>(plan.pairs - 1), sd, 0.05), 0.05, 0.8);
  EXPECT_GT(before, target);
  // Four times the spread needs about sixteen times the pairs.
  const auto wide = plan_sequential(4 * sd, target, 0.05, 0.8, 10000);
  EXPECT_NEAR(static_cast<double>(wide.pairs) / static_cast<double>(plan.pairs), 16, 3);
  const auto capped = plan_sequential(4 * sd, target, 0.05, 0.8, 20);
  EXPECT_FALSE(capped.reachable);
  EXPECT_EQ(capped.pairs, 20u);
  EXPECT_THROW(plan_sequential(sd, 0, 0.05, 0.8, 100), std::invalid_argument);
}

TEST(Sequence, LookDecidesIncreaseDecreaseAndEquivalence) {
  const std::vector<double> up{0.031, 0.029, 0.030, 0.032, 0.028, 0.030, 0.031, 0.029};
  const double r = sequence_tuning(8, 0.0014, 0.05);
  const auto l = look(up, r, 0.05, std::log1p(-0.02), std::log1p(0.02));
  EXPECT_EQ(l.state, SequentialState::kIncrease);
  EXPECT_FALSE(l.within_margin);  // the interval reaches beyond +2%
  std::vector<double> down;
  for (double x : up) down.push_back(-x);
  EXPECT_EQ(look(down, r, 0.05, std::log1p(-0.02), std::log1p(0.02)).state, SequentialState::kDecrease);
  const std::vector<double> flat{0.001, -0.001, 0.0005, -0.0005, 0.0, 0.001, -0.001, 0.0};
  EXPECT_EQ(look(flat, sequence_tuning(8, 0.0008, 0.05), 0.05, std::log1p(-0.02), std::log1p(0.02)).state,
            SequentialState::kEquivalent);
  EXPECT_THROW(look(flat, r, 0.05, 0.01, 0.02), std::invalid_argument);
}

// A/A on real trials: the ln ratios of 500 pairs of yield trials (b the same configuration as a), run
// in pairs of seeded random order on this VM (tests/fixtures/aa-pool-yield/README.md). Experiments are
// resampled from them, centred on 0 so that the null holds exactly.
std::vector<double> pool_ln_ratios() {
  auto d = testing::aa_pool_ln_ratios();
  double mean = 0;
  for (double x : d) mean += x / static_cast<double>(d.size());
  for (double& x : d) x -= mean;
  return d;
}

struct Rates {
  double false_alarm = 0;  // increase or decrease
  double equivalent = 0;
};

// The experiment's rule as run_experiment applies it: a pilot, the plan from its spread, looks every
// `every` pairs up to max_pairs; or the naive rule at the same looks.
Rates resample(const std::vector<double>& pool, bool naive, double target_pct, double margin_pct,
               std::size_t max_pairs, int experiments) {
  std::mt19937_64 rng(19);
  std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1);
  const std::size_t pilot = 6, every = 2;
  int alarms = 0, equivalent = 0;
  for (int e = 0; e < experiments; ++e) {
    std::vector<double> d;
    double r = 0;
    while (d.size() < max_pairs) {
      d.push_back(pool[pick(rng)]);
      if (d.size() < pilot || (d.size() - pilot) % every != 0) continue;
      if (r == 0)
        r = sequence_tuning(
            static_cast<double>(plan_sequential(std::max(look(d, 1, 0.05, -1, 1).sd, 1e-6),
                                                std::log1p(target_pct / 100), 0.05, 0.8, max_pairs)
                                    .pairs),
            std::max(look(d, 1, 0.05, -1, 1).sd, 1e-6), 0.05);
      const auto l = naive ? naive_look(d, 0.05)
                           : look(d, r, 0.05, std::log1p(-margin_pct / 100), std::log1p(margin_pct / 100));
      if (l.state == SequentialState::kIncrease || l.state == SequentialState::kDecrease) {
        ++alarms;
        break;
      }
      if (!naive && l.state == SequentialState::kEquivalent) {
        ++equivalent;
        break;
      }
    }
  }
  return {static_cast<double>(alarms) / experiments, static_cast<double>(equivalent) / experiments};
}

TEST(SequentialAA, RepeatedLooksKeepAlphaWhereTheNaiveRuleDoesNot) {
  const auto pool = pool_ln_ratios();
  ASSERT_GE(pool.size(), 490u);  // 500 pairs, 1000 trials, a few possibly lost
  const auto sequential = resample(pool, false, 3, 3, 200, 2000);
  const auto naive = resample(pool, true, 3, 3, 200, 2000);
  std::cout << "A/A, 2000 resampled experiments of up to 200 pairs: sequential false alarms "
            << sequential.false_alarm << ", equivalent (±3%) " << sequential.equivalent
            << "; naive rule false alarms " << naive.false_alarm << "\n";
  EXPECT_LE(sequential.false_alarm, 0.05);
  EXPECT_GT(naive.false_alarm, 0.10);  // the guard matters: looking without it more than doubles alpha
}

}  // namespace
}  // namespace schedlab::stats
