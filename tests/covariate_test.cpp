// covariate_json, the CPU-speed covariate's record, on the ln ratios of real yield pairs
// (tests/fixtures/aa-pool-yield): what it reports when the probe carries the pair's noise, and when it
// carries none of it.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "aa_pool.hpp"
#include "experiment/covariate.hpp"

namespace schedlab {
namespace {

TEST(Covariate, AProbeCarryingHalfThePairsNoiseRemovesItOutOfSample) {
  const auto pool = testing::aa_pool_ln_ratios();
  std::vector<double> d(pool.begin(), pool.begin() + 200), own(pool.begin() + 200, pool.begin() + 400);
  // d = shared + own: a probe that sees the shared part (half the variance) and nothing of the rest.
  std::vector<double> sum, probe;
  for (std::size_t i = 0; i < d.size(); ++i) {
    sum.push_back(d[i] + own[i]);
    probe.push_back(d[i]);
  }
  const auto c = covariate_json(sum, probe, 5, 0.05);
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c["used"], false);
  EXPECT_EQ(c["pairs"], 200);
  EXPECT_NEAR(c["correlation"].get<double>(), std::sqrt(0.5), 0.15) << c.dump();
  EXPECT_NEAR(c["theta_first_half"].get<double>(), 1.0, 0.3) << c.dump();
  EXPECT_NEAR(c["variance_reduction_out_of_sample"].get<double>(), 0.5, 0.2) << c.dump();
}

TEST(Covariate, AnUnrelatedProbeRemovesNothingAndTooFewPairsGiveNoRecord) {
  const auto pool = testing::aa_pool_ln_ratios();
  std::vector<double> d(pool.begin(), pool.begin() + 200), probe(pool.begin() + 250, pool.begin() + 450);
  const auto c = covariate_json(d, probe, 5, 0.05);
  ASSERT_TRUE(c.is_object());
  EXPECT_LT(std::abs(c["correlation"].get<double>()), 0.2) << c.dump();
  EXPECT_LT(c["variance_reduction_out_of_sample"].get<double>(), 0.05) << c.dump();
  // The probe's ln ratios have a spread of ~9%, their mean within ±5% at 200 pairs: equivalent.
  EXPECT_TRUE(c["probe_equivalent"].get<bool>()) << c.dump();
  EXPECT_TRUE(covariate_json({0.1, 0.2, 0.3}, {0.1, 0.2, 0.3}, 5, 0.05).is_null());
  EXPECT_TRUE(covariate_json(d, {0.1}, 5, 0.05).is_null());
}

}  // namespace
}  // namespace schedlab
