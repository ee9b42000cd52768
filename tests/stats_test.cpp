// Statistics for the diff (DESIGN.md "Statistics"). Reference values come from scipy 1.10 (Debian 12's
// python3-scipy), from R's documented examples, from hand calculation, or from the brute-force oracles
// below, which enumerate every arrangement the null hypothesis allows and so share no code with the DP.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "stats/multiple.hpp"
#include "stats/parametric.hpp"
#include "stats/power.hpp"
#include "stats/rank_tests.hpp"

namespace schedlab::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// R's wilcox.test help example (?wilcox.test): "x <- c(0.80, ...); y <- c(1.15, ...)".
const std::vector<double> kRHelpX = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
const std::vector<double> kRHelpY = {1.15, 0.88, 0.90, 0.74, 1.21};

// ---- Brute-force oracles -------------------------------------------------------------------------------

// Midrank by definition: the number of smaller values plus the mean position among the equal ones.
std::vector<double> midranks(const std::vector<double>& v) {
  std::vector<double> r;
  for (double a : v) {
    double less = 0, equal = 0;
    for (double b : v) {
      less += b < a;
      equal += b == a;
    }
    r.push_back(less + (equal + 1) / 2);
  }
  return r;
}

std::vector<double> concat(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> v = x;
  v.insert(v.end(), y.begin(), y.end());
  return v;
}

// The null law of a statistic as the list of its values over all equally likely arrangements.
struct Enumerated {
  std::vector<double> values;
  double at_most(double t) const {
    return static_cast<double>(
               std::count_if(values.begin(), values.end(), [&](double v) { return v <= t; })) /
           static_cast<double>(values.size());
  }
  double at_least(double t) const {
    return static_cast<double>(
               std::count_if(values.begin(), values.end(), [&](double v) { return v >= t; })) /
           static_cast<double>(values.size());
  }
  double strictly_between(double a, double b) const {
    return static_cast<double>(
               std::count_if(values.begin(), values.end(), [&](double v) { return v > a && v < b; })) /
           static_cast<double>(values.size());
  }
  double two_sided(double t) const { return std::min(1.0, 2 * std::min(at_most(t), at_least(t))); }
};

// U = rank sum - m(m+1)/2 of every m-subset of the pooled midranks (all C(N, m) splits).
Enumerated enumerate_rank_sums(const std::vector<double>& pooled, std::size_t m) {
  const auto r = midranks(pooled);
  Enumerated e;
  for (std::uint32_t mask = 0; mask < (1u << pooled.size()); ++mask) {
    if (static_cast<std::size_t>(std::popcount(mask)) != m) continue;
    double sum = 0;
    for (std::size_t i = 0; i < pooled.size(); ++i)
      if (mask >> i & 1) sum += r[i];
    e.values.push_back(sum - static_cast<double>(m * (m + 1)) / 2);
  }
  return e;
}

// V = sum of the midranks of |d| that carry a + sign, over all 2^n sign patterns.
Enumerated enumerate_signed_ranks(const std::vector<double>& magnitudes) {
  const auto r = midranks(magnitudes);
  Enumerated e;
  for (std::uint32_t mask = 0; mask < (1u << magnitudes.size()); ++mask) {
    double sum = 0;
    for (std::size_t i = 0; i < magnitudes.size(); ++i)
      if (mask >> i & 1) sum += r[i];
    e.values.push_back(sum);
  }
  return e;
}

double brute_force_mann_whitney_p(const std::vector<double>& x, const std::vector<double>& y) {
  const auto r = midranks(concat(x, y));
  double u = -static_cast<double>(x.size() * (x.size() + 1)) / 2;
  for (std::size_t i = 0; i < x.size(); ++i) u += r[i];
  return enumerate_rank_sums(concat(x, y), x.size()).two_sided(u);
}

double brute_force_signed_rank_p(const std::vector<double>& d) {
  std::vector<double> magnitude, sign;
  for (double v : d)
    if (v != 0) {
      magnitude.push_back(std::fabs(v));
      sign.push_back(v > 0);
    }
  const auto r = midranks(magnitude);
  double v = 0;
  for (std::size_t i = 0; i < r.size(); ++i) v += sign[i] * r[i];
  return enumerate_signed_ranks(magnitude).two_sided(v);
}

// The interval by literally inverting the test: every shift D between two consecutive distinct values of
// `points` (pairwise differences or Walsh averages) where U(D) = #(points > D) is in neither alpha/2 tail
// of `null` is accepted; the interval is the closure of the accepted shifts. Its coverage is the null
// probability that U lands in the accepted range: strictly between the integers just outside it (a
// half-integer U, from a tie at the true shift, puts that shift on the interval's closed end).
ShiftEstimate invert_by_scanning(std::vector<double> points, const Enumerated& null, double confidence) {
  std::sort(points.begin(), points.end());
  const double half_alpha = (1 - confidence) / 2;
  auto accepted = [&](double u) { return null.at_most(u) >= half_alpha && null.at_least(u) >= half_alpha; };
  ShiftEstimate e{std::nan(""), kInf, -kInf, 0};
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    if (points[i] == points[i + 1]) continue;
    const double d = (points[i] + points[i + 1]) / 2;
    if (accepted(static_cast<double>(
            std::count_if(points.begin(), points.end(), [&](double p) { return p > d; })))) {
      e.lower = std::min(e.lower, points[i]);
      e.upper = std::max(e.upper, points[i + 1]);
    }
  }
  double u_min = kInf, u_max = -kInf;
  for (std::size_t u = 0; u <= points.size(); ++u)
    if (accepted(static_cast<double>(u))) {
      u_min = std::min(u_min, static_cast<double>(u));
      u_max = std::max(u_max, static_cast<double>(u));
    }
  e.confidence = null.strictly_between(u_min - 1, u_max + 1);
  return e;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<double> differences(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> d;
  for (double b : y)
    for (double a : x) d.push_back(b - a);
  return d;
}

std::vector<double> walsh_averages(const std::vector<double>& d) {
  std::vector<double> w;
  for (std::size_t i = 0; i < d.size(); ++i)
    for (std::size_t j = i; j < d.size(); ++j) w.push_back((d[i] + d[j]) / 2);
  return w;
}

template <class F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no std::invalid_argument thrown)";
}

// ---- Mann–Whitney ---------------------------------------------------------------------------------------

TEST(StatsMannWhitney, RHelpExampleExact) {
  // R ?wilcox.test: W = 35, two-sided p-value = 0.2544; scipy 1.10 mannwhitneyu(x, y, method='exact')
  // gives 0.2544122544122544.
  const auto r = mann_whitney(kRHelpX, kRHelpY);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 35);
  EXPECT_NEAR(r.p_value, 0.2544122544122544, 1e-12);
  const auto swapped = mann_whitney(kRHelpY, kRHelpX);  // U of the other side: 5 * 10 - 35
  EXPECT_DOUBLE_EQ(swapped.statistic, 15);
  EXPECT_NEAR(swapped.p_value, 0.2544122544122544, 1e-12);
}

TEST(StatsMannWhitney, ExactWithoutTiesMatchesScipy) {
  // scipy 1.10 mannwhitneyu(a, b, method='exact'): U = 8, p = 0.011538461538461539.
  const std::vector<double> a = {12.1, 14.3, 9.8, 11.5, 13.9, 10.2, 15.6};
  const std::vector<double> b = {16.2, 13.1, 17.4, 14.8, 18.0, 12.9, 19.3, 15.1, 16.7};
  const auto r = mann_whitney(a, b);
  EXPECT_DOUBLE_EQ(r.statistic, 8);
  EXPECT_NEAR(r.p_value, 0.011538461538461539, 1e-12);
  EXPECT_NEAR(r.p_value, brute_force_mann_whitney_p(a, b), 1e-12);

  // The largest exact case, 25 vs 25 (C(50, 25) ~ 1.3e14 splits: only a polynomial count finishes).
  // x_i = 17 i mod 53, y_j = 23 j mod 53 + 3.5 (i, j = 1..25): scipy 1.10 mannwhitneyu(method='exact')
  // gives U = 253, p = 0.2547760072736403.
  std::vector<double> x, y;
  for (int i = 1; i <= 25; ++i) {
    x.push_back((i * 17) % 53);
    y.push_back((i * 23) % 53 + 3.5);
  }
  const auto big = mann_whitney(x, y);
  EXPECT_TRUE(big.exact);
  EXPECT_DOUBLE_EQ(big.statistic, 253);
  EXPECT_NEAR(big.p_value, 0.2547760072736403, 1e-12);
}

TEST(StatsMannWhitney, ExactWithTiesByHand) {
  // x = {1, 2}, y = {2, 3}: midranks 1, 2.5 | 2.5, 4, so U = 3.5 - 3 = 0.5. The six 2-subsets of
  // {1, 2.5, 2.5, 4} have rank sums 3.5, 3.5, 5, 5, 6.5, 6.5: P(S <= 3.5) = 2/6, P(S >= 3.5) = 1, p = 2/3.
  const auto r = mann_whitney(std::vector<double>{1, 2}, std::vector<double>{2, 3});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 0.5);
  EXPECT_NEAR(r.p_value, 2.0 / 3, 1e-12);
}

TEST(StatsMannWhitney, ExactWithTiesMatchesEnumerationOfAllSplits) {
  // Tie patterns chosen so that the null distribution is asymmetric (lopsided tie groups).
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {{1, 1, 1, 2, 3}, {2, 3, 3, 4, 5, 5}},
      {{10, 10, 10, 10, 11}, {10, 12, 12, 13}},
      {{5, 5, 6, 7, 7, 7, 8}, {7, 8, 8, 9, 9, 9, 9}},
      {{0.5, 0.5, 0.5}, {0.5, 0.5, 0.5, 0.5, 1.5}},
      {{3, 1, 4, 1, 5, 9, 2, 6}, {5, 3, 5, 8, 9, 7, 9, 3}},
  };
  for (const auto& [x, y] : cases) {
    const auto r = mann_whitney(x, y);
    EXPECT_TRUE(r.exact);
    EXPECT_NEAR(r.p_value, brute_force_mann_whitney_p(x, y), 1e-12) << testing::PrintToString(x);
    const auto back = mann_whitney(y, x);
    EXPECT_NEAR(back.p_value, r.p_value, 1e-12);  // the two-sided p does not depend on which side is x
    EXPECT_DOUBLE_EQ(back.statistic, static_cast<double>(x.size() * y.size()) - r.statistic);
  }
}

TEST(StatsMannWhitney, NormalApproximationBeyondTheExactRange) {
  // 30 vs 26 values with many ties: x_i = (37 i mod 23) / 2, y_j = (29 j mod 19) / 2 + 3.
  // scipy 1.10 mannwhitneyu(x, y, method='asymptotic') (tie- and continuity-corrected): U = 276,
  // p = 0.06199100173416478.
  std::vector<double> x, y;
  for (int i = 0; i < 30; ++i) x.push_back((i * 37 % 23) / 2.0);
  for (int j = 0; j < 26; ++j) y.push_back((j * 29 % 19) / 2.0 + 3);
  const auto r = mann_whitney(x, y);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 276);
  EXPECT_NEAR(r.p_value, 0.06199100173416478, 1e-10);
}

TEST(StatsMannWhitney, SmallestReachablePValue) {
  EXPECT_NEAR(mann_whitney_min_p(3, 3), 0.1, 1e-15);       // 2 / C(6, 3) = 2 / 20: never below 0.05
  EXPECT_NEAR(mann_whitney_min_p(4, 4), 2.0 / 70, 1e-15);  // 0.0286
  EXPECT_NEAR(mann_whitney_min_p(9, 9), 2.0 / 48620, 1e-18);
  EXPECT_DOUBLE_EQ(mann_whitney_min_p(1, 1), 1);
  EXPECT_DOUBLE_EQ(mann_whitney_min_p(0, 5), 1);
  EXPECT_NEAR(mann_whitney_min_p(2, 5), 2.0 / 21, 1e-15);
  // Completely separated samples reach it.
  const auto r = mann_whitney(std::vector<double>{1, 2, 3, 4}, std::vector<double>{5, 6, 7, 8});
  EXPECT_DOUBLE_EQ(r.statistic, 0);
  EXPECT_NEAR(r.p_value, mann_whitney_min_p(4, 4), 1e-15);
}

TEST(StatsMannWhitney, DegenerateSamples) {
  const std::vector<double> empty;
  EXPECT_DOUBLE_EQ(mann_whitney(empty, kRHelpY).p_value, 1);
  EXPECT_DOUBLE_EQ(mann_whitney(kRHelpX, empty).p_value, 1);
  const auto one_each = mann_whitney(std::vector<double>{1}, std::vector<double>{2});
  EXPECT_DOUBLE_EQ(one_each.statistic, 0);
  EXPECT_DOUBLE_EQ(one_each.p_value, 1);  // P(U <= 0) = 1/2
  const auto tied = mann_whitney(std::vector<double>{7, 7, 7}, std::vector<double>{7, 7});
  EXPECT_DOUBLE_EQ(tied.statistic, 3);  // every pair counts one half
  EXPECT_DOUBLE_EQ(tied.p_value, 1);
  std::vector<double> many_tied(60, 2.5);
  EXPECT_DOUBLE_EQ(mann_whitney(many_tied, many_tied).p_value, 1);  // normal branch, zero variance
  const auto msg = invalid_argument_message([] {
    mann_whitney(std::vector<double>{1, std::nan("")}, std::vector<double>{2});
  });
  EXPECT_NE(msg.find("NaN"), std::string::npos) << msg;
  EXPECT_NE(msg.find("mann_whitney"), std::string::npos) << msg;
  // Infinities are just large values to a rank test.
  EXPECT_DOUBLE_EQ(mann_whitney(std::vector<double>{kInf}, std::vector<double>{1, 2}).statistic, 2);
}

// ---- Hodges–Lehmann -------------------------------------------------------------------------------------

TEST(StatsHodgesLehmann, RHelpExampleExactInterval) {
  // R's wilcox.test(y, x, conf.int = TRUE) algorithm for no ties (qu <- qwilcox(alpha/2, 5, 10),
  // cint <- c(diffs[qu], diffs[ql + 1]), achieved 1 - 2 pwilcox(qu - 1)), evaluated in Python with the exact
  // distribution enumerated over all C(15, 5) splits: estimate -0.305, qu = 9, [-0.76, 0.15], achieved
  // 0.96004; at 90 %: qu = 12, [-0.72, 0.08], achieved 0.90077.
  const auto e = hodges_lehmann(kRHelpX, kRHelpY, 0.95);
  EXPECT_NEAR(e.estimate, -0.305, 1e-12);
  EXPECT_NEAR(e.estimate, median_of(differences(kRHelpX, kRHelpY)), 1e-15);
  EXPECT_NEAR(e.lower, -0.76, 1e-12);
  EXPECT_NEAR(e.upper, 0.15, 1e-12);
  EXPECT_NEAR(e.confidence, 0.9600399600399601, 1e-12);
  const auto e90 = hodges_lehmann(kRHelpX, kRHelpY, 0.90);
  EXPECT_NEAR(e90.lower, -0.72, 1e-12);
  EXPECT_NEAR(e90.upper, 0.08, 1e-12);
  EXPECT_NEAR(e90.confidence, 0.9007659007659008, 1e-12);
  // The shift of x relative to y is the mirror image.
  const auto back = hodges_lehmann(kRHelpY, kRHelpX, 0.95);
  EXPECT_NEAR(back.estimate, 0.305, 1e-12);
  EXPECT_NEAR(back.lower, -0.15, 1e-12);
  EXPECT_NEAR(back.upper, 0.76, 1e-12);
}

TEST(StatsHodgesLehmann, ExactIntervalIsTheTestInverted) {
  // Without ties (R's algorithm as above: median 3.3, qu = 13, [0.9, 6.0], achieved 0.958217) and with
  // lopsided ties, against inverting the enumerated test shift by shift.
  const std::vector<double> a = {12.1, 14.3, 9.8, 11.5, 13.9, 10.2, 15.6};
  const std::vector<double> b = {16.2, 13.1, 17.4, 14.8, 18.0, 12.9, 19.3, 15.1, 16.7};
  const auto e = hodges_lehmann(a, b, 0.95);
  EXPECT_NEAR(e.estimate, 3.3, 1e-12);
  EXPECT_NEAR(e.lower, 0.9, 1e-12);
  EXPECT_NEAR(e.upper, 6.0, 1e-12);
  EXPECT_NEAR(e.confidence, 0.9582167832167832, 1e-12);

  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {a, b},
      {{1, 1, 1, 2, 3, 3}, {2, 3, 3, 4, 5, 5, 6}},
      {{5, 5, 6, 7, 7, 7, 8}, {7, 8, 8, 9, 9, 9, 9}},
      {{3, 1, 4, 1, 5, 9, 2, 6}, {5, 3, 5, 8, 9, 7, 9, 3}},
  };
  for (const auto& [x, y] : cases) {
    for (double level : {0.8, 0.9, 0.95}) {
      const auto got = hodges_lehmann(x, y, level);
      const auto want =
          invert_by_scanning(differences(x, y), enumerate_rank_sums(concat(x, y), y.size()), level);
      EXPECT_DOUBLE_EQ(got.estimate, median_of(differences(x, y)));
      EXPECT_DOUBLE_EQ(got.lower, want.lower) << testing::PrintToString(x) << " " << level;
      EXPECT_DOUBLE_EQ(got.upper, want.upper) << testing::PrintToString(x) << " " << level;
      EXPECT_NEAR(got.confidence, want.confidence, 1e-12) << testing::PrintToString(x) << " " << level;
      EXPECT_GE(got.confidence, level - 1e-12);  // never below the level asked for when it is reachable
    }
  }
}

TEST(StatsHodgesLehmann, SmallSamplesGiveTheFullRangeAndSayWhatItCovers) {
  // 3 vs 3 cannot reach 95 %: [min, max] of the nine differences covers 1 - 2 / C(6, 3) = 0.9.
  const auto e = hodges_lehmann(std::vector<double>{1, 2, 4}, std::vector<double>{3, 7, 8}, 0.95);
  EXPECT_DOUBLE_EQ(e.lower, -1);
  EXPECT_DOUBLE_EQ(e.upper, 7);
  EXPECT_DOUBLE_EQ(e.estimate, 4);  // median of {2, 1, -1, 6, 5, 3, 7, 6, 4}
  EXPECT_NEAR(e.confidence, 0.9, 1e-12);
  // One value a side: one difference, an interval of zero width that covers nothing.
  const auto one = hodges_lehmann(std::vector<double>{10}, std::vector<double>{12.5}, 0.95);
  EXPECT_DOUBLE_EQ(one.estimate, 2.5);
  EXPECT_DOUBLE_EQ(one.lower, 2.5);
  EXPECT_DOUBLE_EQ(one.upper, 2.5);
  EXPECT_DOUBLE_EQ(one.confidence, 0);
}

TEST(StatsHodgesLehmann, NormalApproximationInterval) {
  // 30 vs 30 distinct values, x_i = 41 i mod 61, y_j = 43 j mod 67 + 5.25 (i, j = 1..30). Reference:
  // inverting scipy 1.10 mannwhitneyu(y - D, x, method='asymptotic') at every midpoint D between
  // consecutive distinct differences, keeping p >= alpha: [4.25, 23.25] at 95 %, [7.25, 20.25] at 80 %;
  // median of the 900 differences 14.25; coverage 1 - 2 Phi((317 - 0.5 - 450) / sqrt(900 * 61 / 12)) =
  // 0.9515865 for the order statistic k = 317.
  std::vector<double> x, y;
  for (int i = 1; i <= 30; ++i) {
    x.push_back((i * 41) % 61);
    y.push_back((i * 43) % 67 + 5.25);
  }
  const auto e = hodges_lehmann(x, y, 0.95);
  EXPECT_DOUBLE_EQ(e.estimate, 14.25);
  EXPECT_DOUBLE_EQ(e.lower, 4.25);
  EXPECT_DOUBLE_EQ(e.upper, 23.25);
  EXPECT_NEAR(e.confidence, 0.9515865005351863, 1e-9);
  const auto e80 = hodges_lehmann(x, y, 0.80);
  EXPECT_DOUBLE_EQ(e80.lower, 7.25);
  EXPECT_DOUBLE_EQ(e80.upper, 20.25);
}

TEST(StatsHodgesLehmann, DegenerateAndInvalidInput) {
  const auto none = hodges_lehmann(std::vector<double>{}, kRHelpY, 0.95);
  EXPECT_TRUE(std::isnan(none.estimate));
  EXPECT_DOUBLE_EQ(none.confidence, 0);
  const auto same = hodges_lehmann(std::vector<double>{4, 4, 4, 4}, std::vector<double>{4, 4, 4, 4}, 0.95);
  EXPECT_DOUBLE_EQ(same.estimate, 0);
  EXPECT_DOUBLE_EQ(same.lower, 0);
  EXPECT_DOUBLE_EQ(same.upper, 0);
  EXPECT_NE(invalid_argument_message([] {
              hodges_lehmann(std::vector<double>{1}, std::vector<double>{kInf}, 0.9);
            }).find("infinite"),
            std::string::npos);
  EXPECT_NE(invalid_argument_message([] {
              hodges_lehmann(std::vector<double>{std::nan("")}, kRHelpY, 0.9);
            }).find("NaN"),
            std::string::npos);
  EXPECT_NE(invalid_argument_message([] { hodges_lehmann(kRHelpX, kRHelpY, 1.0); }).find("confidence"),
            std::string::npos);
  EXPECT_THROW(hodges_lehmann(kRHelpX, kRHelpY, std::nan("")), std::invalid_argument);
}

// ---- Wilcoxon signed-rank -------------------------------------------------------------------------------

const std::vector<double> kPaired = {1.83, 0.50, 1.62, 2.48,  1.68,  1.88,
                                     1.55, 3.06, 1.30, -0.41, -0.72, 0.25};

TEST(StatsSignedRank, ExactWithoutTiesMatchesScipy) {
  // scipy 1.10 wilcoxon(d, method='exact'): p = 0.0068359375 (its statistic is min(V+, V-) = 6, so
  // V = 78 - 6 = 72).
  const auto r = wilcoxon_signed_rank(kPaired);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 72);
  EXPECT_NEAR(r.p_value, 0.0068359375, 1e-15);
}

TEST(StatsSignedRank, TiesAndZerosByHand) {
  // d = {1, -1, 2}: |d| midranks 1.5, 1.5, 3; V = 1.5 + 3 = 4.5. Subset sums of {1.5, 1.5, 3} over the 8
  // sign patterns: 0, 1.5, 1.5, 3, 3, 4.5, 4.5, 6, so P(V >= 4.5) = 3/8 and p = 0.75. Zeros are dropped.
  for (const auto& d : {std::vector<double>{1, -1, 2}, std::vector<double>{0, 1, 0, -1, 2}}) {
    const auto r = wilcoxon_signed_rank(d);
    EXPECT_DOUBLE_EQ(r.statistic, 4.5);
    EXPECT_NEAR(r.p_value, 0.75, 1e-15);
  }
}

TEST(StatsSignedRank, ExactWithTiesAndZerosMatchesEnumerationOfAllSigns) {
  const std::vector<std::vector<double>> cases = {
      {1, 1, 1, 2, -2, 3, 3, 3, 3, 0},
      {0.5, -0.5, 0.5, 0.5, 1.5, 1.5, -2.5, 0, 0, 4},
      {2, 2, 2, 2, 2, 2, 2, 2},
      {-3, -3, -1, -1, -1, 2, 4, 4, 4, 4, 5, 6},
      {7, 0, 0, 0},
  };
  for (const auto& d : cases) {
    const auto r = wilcoxon_signed_rank(d);
    EXPECT_TRUE(r.exact);
    EXPECT_NEAR(r.p_value, brute_force_signed_rank_p(d), 1e-12) << testing::PrintToString(d);
  }
  // Eight equal positive differences reach the smallest p the test allows: 2 / 2^8.
  EXPECT_NEAR(wilcoxon_signed_rank(cases[2]).p_value, wilcoxon_min_p(8), 1e-15);
}

TEST(StatsSignedRank, NormalApproximationBeyondTheExactRange) {
  // d_k = ((13 k mod 11) - 4) / 2, k = 0..65: 60 non-zero values, heavily tied. scipy 1.10
  // wilcoxon(d, zero_method='wilcox', correction=True, method='approx'): p = 0.01579978133284247 (R's
  // wilcox.test(exact = FALSE) formula in Python agrees); V = 1242.
  std::vector<double> d;
  for (int k = 0; k < 66; ++k) d.push_back(((k * 13) % 11 - 4) / 2.0);
  const auto r = wilcoxon_signed_rank(d);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 1242);
  EXPECT_NEAR(r.p_value, 0.01579978133284247, 1e-10);
}

TEST(StatsSignedRank, SmallestReachablePValueAndDegenerateInput) {
  EXPECT_DOUBLE_EQ(wilcoxon_min_p(0), 1);
  EXPECT_DOUBLE_EQ(wilcoxon_min_p(1), 1);
  EXPECT_DOUBLE_EQ(wilcoxon_min_p(5), 0.0625);
  EXPECT_DOUBLE_EQ(wilcoxon_min_p(6), 0.03125);  // the first n that can reach 0.05
  EXPECT_DOUBLE_EQ(wilcoxon_min_p(100000), 0);
  const auto zeros = wilcoxon_signed_rank(std::vector<double>{0, 0, 0});
  EXPECT_DOUBLE_EQ(zeros.statistic, 0);
  EXPECT_DOUBLE_EQ(zeros.p_value, 1);
  EXPECT_DOUBLE_EQ(wilcoxon_signed_rank(std::vector<double>{}).p_value, 1);
  EXPECT_DOUBLE_EQ(wilcoxon_signed_rank(std::vector<double>{-2}).p_value, 1);
  EXPECT_NE(invalid_argument_message([] {
              wilcoxon_signed_rank(std::vector<double>{1, std::nan("")});
            }).find("NaN"),
            std::string::npos);
}

TEST(StatsHodgesLehmannPaired, ExactIntervalWithoutTies) {
  // R's wilcox.test(d, conf.int = TRUE) algorithm for no ties (qu <- qsignrank(alpha/2, n), cint <-
  // c(diffs[qu], diffs[ql + 1]), achieved 1 - 2 psignrank(qu - 1, n)), evaluated in Python with the
  // distribution enumerated over all 2^12 signs: (pseudo)median 1.345; 95 %: qu = 14, [0.48, 2.015],
  // achieved 0.95751953125; 99 %: qu = 8, [0.25, 2.305], achieved 0.99072265625.
  const auto e = hodges_lehmann_paired(kPaired, 0.95);
  EXPECT_NEAR(e.estimate, 1.345, 1e-12);
  EXPECT_NEAR(e.estimate, median_of(walsh_averages(kPaired)), 1e-15);
  EXPECT_NEAR(e.lower, 0.48, 1e-12);
  EXPECT_NEAR(e.upper, 2.015, 1e-12);
  EXPECT_NEAR(e.confidence, 0.95751953125, 1e-15);
  const auto e99 = hodges_lehmann_paired(kPaired, 0.99);
  EXPECT_NEAR(e99.lower, 0.25, 1e-12);
  EXPECT_NEAR(e99.upper, 2.305, 1e-12);
  EXPECT_NEAR(e99.confidence, 0.99072265625, 1e-15);
  // Four pairs cannot reach 95 % (2 / 2^4 = 0.125): the range of the Walsh averages, covering 0.875.
  const auto four = hodges_lehmann_paired(std::vector<double>{0.3, -0.1, 0.5, 0.9}, 0.95);
  EXPECT_NEAR(four.estimate, 0.4, 1e-12);
  EXPECT_NEAR(four.lower, -0.1, 1e-12);
  EXPECT_NEAR(four.upper, 0.9, 1e-12);
  EXPECT_NEAR(four.confidence, 0.875, 1e-15);
}

TEST(StatsHodgesLehmannPaired, TiedIntervalIsTheTestInverted) {
  const std::vector<std::vector<double>> cases = {
      kPaired,
      {1, 1, 1, 2, -2, 3, 3, 3, 3, 0.5},
      {-3, -3, -1, -1, -1, 2, 4, 4, 4, 4, 5, 6},
      {0.5, -0.5, 0.5, 0.5, 1.5, 1.5, -2.5, 0.25, 0.25, 4},
  };
  for (const auto& d : cases) {
    std::vector<double> magnitude;
    for (double v : d) magnitude.push_back(std::fabs(v));
    for (double level : {0.8, 0.9, 0.95}) {
      const auto got = hodges_lehmann_paired(d, level);
      const auto want = invert_by_scanning(walsh_averages(d), enumerate_signed_ranks(magnitude), level);
      EXPECT_DOUBLE_EQ(got.estimate, median_of(walsh_averages(d)));
      EXPECT_DOUBLE_EQ(got.lower, want.lower) << testing::PrintToString(d) << " " << level;
      EXPECT_DOUBLE_EQ(got.upper, want.upper) << testing::PrintToString(d) << " " << level;
      EXPECT_NEAR(got.confidence, want.confidence, 1e-12) << testing::PrintToString(d) << " " << level;
    }
  }
}

TEST(StatsHodgesLehmannPaired, ZeroDifferencesCountAsData) {
  // Mostly identical pairs: the pseudo-median is 0 (R's wilcox.test drops the zeros and would say 1).
  const auto e = hodges_lehmann_paired(std::vector<double>{0, 0, 0, 0, 0, 0, 0, 1}, 0.9);
  EXPECT_DOUBLE_EQ(e.estimate, 0);
  EXPECT_DOUBLE_EQ(e.lower, 0);
  const auto one = hodges_lehmann_paired(std::vector<double>{0.7}, 0.95);
  EXPECT_DOUBLE_EQ(one.estimate, 0.7);
  EXPECT_DOUBLE_EQ(one.confidence, 0);
  EXPECT_TRUE(std::isnan(hodges_lehmann_paired(std::vector<double>{}, 0.95).estimate));
  // Beyond the exact range the median of the Walsh averages is unchanged and the interval contains it.
  std::vector<double> d;
  for (int k = 0; k < 80; ++k) d.push_back(((k * 13) % 11 - 4) / 2.0);
  const auto big = hodges_lehmann_paired(d, 0.95);
  EXPECT_DOUBLE_EQ(big.estimate, median_of(walsh_averages(d)));
  EXPECT_LE(big.lower, big.estimate);
  EXPECT_GE(big.upper, big.estimate);
  EXPECT_GT(big.confidence, 0.9);
  EXPECT_LT(big.confidence, 1);
}

// ---- Welch ------------------------------------------------------------------------------------------------

TEST(StatsWelch, RSleepData) {
  // R's t.test(extra ~ group, data = sleep), Welch: t = -1.8608, df = 17.776, p-value = 0.07939,
  // 95 percent CI -3.3654832 0.2054832 (group 1 - group 2). Here y - x with x = group 1, so signs flip.
  // scipy 1.10 ttest_ind(g2, g1, equal_var=False): t = 1.8608134674868526, p = 0.07939414018735823; the
  // interval from scipy's t.ppf(0.975, df): [-0.20548323071163632, 3.365483230711636].
  const std::vector<double> g1 = {0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0};
  const std::vector<double> g2 = {1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4};
  const auto r = welch_t(g1, g2, 0.95);
  EXPECT_NEAR(r.t, 1.8608134674868526, 1e-12);
  EXPECT_NEAR(r.df, 17.776473516178495, 1e-10);
  EXPECT_NEAR(r.p_value, 0.07939414018735823, 1e-10);
  EXPECT_NEAR(r.mean_difference, 1.58, 1e-12);
  EXPECT_NEAR(r.lower, -0.20548323071163632, 1e-9);
  EXPECT_NEAR(r.upper, 3.365483230711636, 1e-9);
  const auto r90 = welch_t(g1, g2, 0.90);  // scipy t.ppf(0.95, df): [0.10661850266839656, 3.0533814973316025]
  EXPECT_NEAR(r90.lower, 0.10661850266839656, 1e-9);
  EXPECT_NEAR(r90.upper, 3.0533814973316025, 1e-9);
}

TEST(StatsWelch, TooFewValuesAndZeroVariance) {
  const auto one = welch_t(std::vector<double>{1}, std::vector<double>{2, 3}, 0.95);
  EXPECT_DOUBLE_EQ(one.p_value, 1);
  EXPECT_DOUBLE_EQ(one.df, 0);
  EXPECT_DOUBLE_EQ(one.mean_difference, 1.5);
  EXPECT_EQ(one.lower, -kInf);
  EXPECT_EQ(one.upper, kInf);
  EXPECT_TRUE(std::isnan(welch_t(std::vector<double>{}, std::vector<double>{2, 3}, 0.95).mean_difference));

  // 0.1 + 0.1 + 0.1 is not 0.3: constant samples must still have exactly zero variance.
  const auto same = welch_t(std::vector<double>{0.1, 0.1, 0.1}, std::vector<double>{0.1, 0.1}, 0.95);
  EXPECT_DOUBLE_EQ(same.t, 0);
  EXPECT_DOUBLE_EQ(same.p_value, 1);
  EXPECT_DOUBLE_EQ(same.mean_difference, 0);
  const auto apart = welch_t(std::vector<double>{0.1, 0.1, 0.1}, std::vector<double>{0.3, 0.3}, 0.95);
  EXPECT_EQ(apart.t, kInf);
  EXPECT_DOUBLE_EQ(apart.p_value, 0);
  EXPECT_DOUBLE_EQ(apart.lower, apart.upper);
  // One constant side is fine: the other side's variance carries the test.
  const auto half = welch_t(std::vector<double>{1, 1, 1}, std::vector<double>{1, 2, 3}, 0.95);
  EXPECT_NEAR(half.df, 2, 1e-12);  // all the variance is y's, df = n_y - 1
  EXPECT_NEAR(half.t, 1 / std::sqrt(1.0 / 3), 1e-12);
  EXPECT_THROW(welch_t(std::vector<double>{1, std::nan("")}, std::vector<double>{2, 3}, 0.95),
               std::invalid_argument);
}

// ---- Quantiles and minimum detectable shift
// ----------------------------------------------------------------

TEST(StatsQuantiles, NormalAndStudentT) {
  // scipy 1.10 norm.ppf(0.975) = 1.959963984540054, norm.ppf(0.001) = -3.090232306167813,
  // t.ppf(0.975, 10) = 2.2281388519649385, t.ppf(0.975, 2.5) = 3.5746548420118773,
  // t.ppf(0.025, 1) = -12.706204736432102, t.ppf(0.9, 1e6) = 1.2815524121299386. scipy 1.10's t.ppf is
  // off in the 11th digit (its own t.sf at 2.2281388519649385 is 0.025 + 9e-13; Boost's 2.2281388519862744
  // gives 0.025 to 1e-17; for df = 1 the closed form -cot(pi 0.025) = -12.7062047361747), hence 1e-9.
  EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-12);
  EXPECT_NEAR(normal_quantile(0.001), -3.090232306167813, 1e-12);
  EXPECT_DOUBLE_EQ(normal_quantile(0.5), 0);
  EXPECT_EQ(normal_quantile(0), -kInf);
  EXPECT_EQ(normal_quantile(1), kInf);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.2281388519649385, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 2.5), 3.5746548420118773, 1e-10);
  EXPECT_NEAR(student_t_quantile(0.025, 1), -12.706204736432102, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.025, 1), -1 / std::tan(std::numbers::pi * 0.025), 1e-12);
  EXPECT_NEAR(student_t_quantile(0.9, 1e6), 1.2815524121299386, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, kInf), 1.959963984540054, 1e-12);
  EXPECT_EQ(student_t_quantile(1, 3), kInf);
  EXPECT_THROW(normal_quantile(1.5), std::invalid_argument);
  EXPECT_THROW(normal_quantile(std::nan("")), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(0.5, 0), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(0.5, std::nan("")), std::invalid_argument);
}

TEST(StatsMinimumDetectableShift, FormulaAndSanity) {
  // (z_0.975 + z_0.8) sqrt(sd_x^2/n_x + sd_y^2/n_y) sqrt(pi/3) with scipy 1.10 norm.ppf:
  // sd 1, n 10 a side: 1.282133194129765; sd 2 n 9 vs sd 1 n 5: 2.301499518362187.
  EXPECT_NEAR(minimum_detectable_shift(1, 10, 1, 10, 0.05, 0.8), 1.282133194129765, 1e-12);
  EXPECT_NEAR(minimum_detectable_shift(2, 9, 1, 5, 0.05, 0.8), 2.301499518362187, 1e-12);
  double previous = kInf;
  for (std::size_t n : {2, 3, 5, 9, 30, 100, 1000}) {
    const double shift = minimum_detectable_shift(1, n, 1, n, 0.05, 0.8);
    EXPECT_LT(shift, previous) << n;
    previous = shift;
  }
  EXPECT_EQ(minimum_detectable_shift(1, 1, 1, 10, 0.05, 0.8), kInf);
  EXPECT_EQ(minimum_detectable_shift(1, 10, 1, 0, 0.05, 0.8), kInf);
  EXPECT_DOUBLE_EQ(minimum_detectable_shift(0, 10, 0, 10, 0.05, 0.8), 0);
  EXPECT_GT(minimum_detectable_shift(1, 10, 1, 10, 0.05, 0.9),
            minimum_detectable_shift(1, 10, 1, 10, 0.05, 0.8));
  EXPECT_GT(minimum_detectable_shift(1, 10, 1, 10, 0.01, 0.8),
            minimum_detectable_shift(1, 10, 1, 10, 0.05, 0.8));
  EXPECT_THROW(minimum_detectable_shift(std::nan(""), 10, 1, 10, 0.05, 0.8), std::invalid_argument);
  EXPECT_THROW(minimum_detectable_shift(1, 10, 1, 10, 0, 0.8), std::invalid_argument);
}

// ---- Benjamini–Hochberg -----------------------------------------------------------------------------------

TEST(StatsBenjaminiHochberg, ByHandAndAgainstTheTextbookFormula) {
  // p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "BH"): n/i p = 0.05 for every i, so all are 0.05.
  for (double q : benjamini_hochberg(std::vector<double>{0.01, 0.02, 0.03, 0.04, 0.05}))
    EXPECT_NEAR(q, 0.05, 1e-15);
  // By hand, in input order: sorted 0.005, 0.01, 0.03, 0.04 -> 4/i p = 0.02, 0.02, 0.04, 0.04, then the
  // running minimum from the top.
  const auto q = benjamini_hochberg(std::vector<double>{0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(q.size(), 4u);
  EXPECT_NEAR(q[0], 0.02, 1e-15);
  EXPECT_NEAR(q[1], 0.04, 1e-15);
  EXPECT_NEAR(q[2], 0.04, 1e-15);
  EXPECT_NEAR(q[3], 0.02, 1e-15);
  // McDonald's Handbook of Biological Statistics example (25 p-values); reference by R's formula
  // pmin(1, cummin(n / i * p[o]))[order(o)] in numpy.
  const std::vector<double> p = {0.001, 0.008, 0.039, 0.041, 0.042, 0.06,  0.074, 0.205, 0.212,
                                 0.216, 0.222, 0.251, 0.269, 0.275, 0.34,  0.341, 0.384, 0.569,
                                 0.594, 0.696, 0.762, 0.94,  0.942, 0.975, 0.986};
  const std::vector<double> want = {
      0.025,     0.1,       0.21,      0.21,      0.21,      0.25,      0.2642857, 0.4910714, 0.4910714,
      0.4910714, 0.4910714, 0.4910714, 0.4910714, 0.4910714, 0.5328125, 0.5328125, 0.5647059, 0.7815789,
      0.7815789, 0.87,      0.9071429, 0.986,     0.986,     0.986,     0.986};
  const auto got = benjamini_hochberg(p);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-7) << i;
  EXPECT_TRUE(benjamini_hochberg(std::vector<double>{}).empty());
  EXPECT_DOUBLE_EQ(benjamini_hochberg(std::vector<double>{0.3})[0], 0.3);
  EXPECT_THROW(benjamini_hochberg(std::vector<double>{0.2, std::nan("")}), std::invalid_argument);
  EXPECT_THROW(benjamini_hochberg(std::vector<double>{1.2}), std::invalid_argument);
}

// ---- Fisher -----------------------------------------------------------------------------------------------

TEST(StatsFisherExact, TeaTastingAndScipy) {
  // Fisher's lady tasting tea, [[3, 1], [1, 3]]: p = 0.4857 (R ?fisher.test, TeaTasting).
  EXPECT_NEAR(fisher_exact(3, 1, 1, 3), 0.48571428571428565, 1e-12);
  // scipy 1.10 fisher_exact(table).pvalue.
  EXPECT_NEAR(fisher_exact(8, 2, 1, 5), 0.034965034965034975, 1e-12);
  EXPECT_NEAR(fisher_exact(0, 5, 5, 0), 0.007936507936507938, 1e-12);
  EXPECT_NEAR(fisher_exact(10, 0, 3, 7), 0.0030959752321981426, 1e-12);
  EXPECT_NEAR(fisher_exact(2, 7, 8, 2), 0.02301413756522116, 1e-12);
  EXPECT_NEAR(fisher_exact(1, 9, 11, 3), 0.0027594561852200836, 1e-12);
  EXPECT_NEAR(fisher_exact(0, 30, 3, 27), 0.23728813559322035, 1e-12);  // 0 vs 3 failures in 30 runs
  EXPECT_DOUBLE_EQ(fisher_exact(0, 0, 0, 0), 1);
  EXPECT_DOUBLE_EQ(fisher_exact(0, 9, 0, 9), 1);  // no failures anywhere
  EXPECT_THROW(fisher_exact(-1, 2, 3, 4), std::invalid_argument);
}

// ---- Mann–Kendall -----------------------------------------------------------------------------------------

TEST(StatsMannKendall, ExactWithoutTies) {
  // scipy 1.10 kendalltau(range(8), v, method='exact'): tau = 0.7142857142857142, p = 0.014136904761904762.
  const auto r = mann_kendall(std::vector<double>{4.1, 3.9, 5.2, 5.0, 6.3, 5.9, 7.4, 6.8});
  EXPECT_TRUE(r.exact);
  EXPECT_NEAR(r.statistic, 0.7142857142857142, 1e-12);
  EXPECT_NEAR(r.p_value, 0.014136904761904762, 1e-12);
  // Three values in order: S = 3 happens for 1 of 6 permutations, p = 2/6.
  const auto three = mann_kendall(std::vector<double>{1, 2, 3});
  EXPECT_DOUBLE_EQ(three.statistic, 1);
  EXPECT_NEAR(three.p_value, 1.0 / 3, 1e-15);
}

TEST(StatsMannKendall, NormalApproximationWithTies) {
  // v = 3, 5, 4, 4, 6, 7, 7, 8, 9, 7, 10, 12: scipy 1.10 kendalltau(range(12), v) gives tau-b =
  // 0.8441622892989752. Mann–Kendall's Z = (|S| - 1) / sqrt(Var S) (continuity corrected; Var S =
  // [n(n-1)(2n+5) - sum t(t-1)(2t+5)] / 18, Hipel & McLeod 1994), evaluated in Python: S = 54,
  // Var S = 208, p = 2 norm.sf(53 / sqrt(208)) = 0.00023795303007904166 (scipy's uncorrected 0.000181).
  const auto r = mann_kendall(std::vector<double>{3, 5, 4, 4, 6, 7, 7, 8, 9, 7, 10, 12});
  EXPECT_FALSE(r.exact);
  EXPECT_NEAR(r.statistic, 0.8441622892989752, 1e-12);
  EXPECT_NEAR(r.p_value, 0.00023795303007904166, 1e-12);
  // 15 distinct values, v_k = (7 k mod 15) + 0.3 k: scipy's tau = -0.2; S = -21, Var S = 15 14 35 / 18,
  // corrected p = 0.32229959587191925.
  std::vector<double> v;
  for (int k = 0; k < 15; ++k) v.push_back((k * 7) % 15 + k * 0.3);
  const auto big = mann_kendall(v);
  EXPECT_NEAR(big.statistic, -0.2, 1e-12);
  EXPECT_NEAR(big.p_value, 0.32229959587191925, 1e-12);
}

TEST(StatsMannKendall, DegenerateInput) {
  EXPECT_DOUBLE_EQ(mann_kendall(std::vector<double>{}).p_value, 1);
  EXPECT_DOUBLE_EQ(mann_kendall(std::vector<double>{1, 2}).p_value, 1);
  const auto flat = mann_kendall(std::vector<double>{5, 5, 5, 5, 5});
  EXPECT_DOUBLE_EQ(flat.statistic, 0);
  EXPECT_DOUBLE_EQ(flat.p_value, 1);
  EXPECT_NE(invalid_argument_message([] {
              mann_kendall(std::vector<double>{1, std::nan(""), 3});
            }).find("NaN"),
            std::string::npos);
}

// R: t.test(1:5)$p.value = 0.01324. The paired design's secondary test.
TEST(StatsPairedT, MatchesR) {
  const std::vector<double> d{1, 2, 3, 4, 5};
  const auto r = paired_t(d, 0.95);
  EXPECT_NEAR(r.t, 4.242640687119285, 1e-12);
  EXPECT_DOUBLE_EQ(r.df, 4);
  EXPECT_NEAR(r.p_value, 0.01324, 1e-5);
  EXPECT_NEAR(r.lower, 1.036757, 1e-6);  // R's 95 percent confidence interval: 1.036757 4.963243
  EXPECT_DOUBLE_EQ(paired_t(std::vector<double>{2, 2, 2}, 0.95).p_value, 0);
  EXPECT_DOUBLE_EQ(paired_t(std::vector<double>{0, 0}, 0.95).p_value, 1);
}

// The MDE's shortcut (critical values of the statistic and of the interval's bound) against the real
// test and interval functions on fresh draws: at the returned shift, the signed-rank test rejects
// upwards at `level` and the Hodges-Lehmann interval clears the margin in 80% of samples.
TEST(StatsPower, SignedRankShiftHasTheTargetPowerForTheRealTestAndInterval) {
  for (std::size_t n : {6, 9, 12}) {
    const PowerTarget target{0.05, 0.95, 0.02, 0.8};
    const double sd = 0.1;
    const double shift = signed_rank_detectable_shift(n, sd, target);
    ASSERT_TRUE(std::isfinite(shift)) << n;
    std::mt19937_64 rng(n * 1000 + 7);
    std::normal_distribution<double> z;
    int hits = 0;
    constexpr int kSamples = 1500;
    for (int s = 0; s < kSamples; ++s) {
      std::vector<double> d(n);
      for (auto& v : d) v = shift + sd * z(rng);
      const bool up =
          wilcoxon_signed_rank(d).p_value < target.level && hodges_lehmann_paired(d, 0.5).estimate > 0;
      hits += up && hodges_lehmann_paired(d, target.confidence).lower > target.margin;
    }
    EXPECT_NEAR(static_cast<double>(hits) / kSamples, 0.8, 0.04) << n << " pairs, shift " << shift;
  }
}

TEST(StatsPower, RankSumShiftHasTheTargetPowerForTheRealTestAndInterval) {
  for (std::size_t n : {5, 8}) {
    const PowerTarget target{0.05, 0.95, 0.0, 0.8};
    const double shift = rank_sum_detectable_shift(n, 1.0, n, 2.0, target);
    ASSERT_TRUE(std::isfinite(shift)) << n;
    std::mt19937_64 rng(n * 1000 + 11);
    std::normal_distribution<double> z;
    int hits = 0;
    constexpr int kSamples = 1500;
    for (int s = 0; s < kSamples; ++s) {
      std::vector<double> x(n), y(n);
      for (auto& v : x) v = z(rng);
      for (auto& v : y) v = shift + 2.0 * z(rng);
      hits += mann_whitney(x, y).p_value < target.level && hodges_lehmann(x, y, target.confidence).lower > 0;
    }
    EXPECT_NEAR(static_cast<double>(hits) / kSamples, 0.8, 0.04) << n << " a side, shift " << shift;
  }
}

TEST(StatsPower, UnreachableLevelsNoSpreadAndMoreData) {
  const PowerTarget target{0.05, 0.95, 0.02, 0.8};
  // 5 pairs reach p = 2/32 at best: no shift is detectable at 0.05.
  EXPECT_TRUE(std::isinf(signed_rank_detectable_shift(5, 1.0, target)));
  EXPECT_TRUE(std::isinf(rank_sum_detectable_shift(3, 1.0, 3, 1.0, target)));
  EXPECT_DOUBLE_EQ(signed_rank_detectable_shift(8, 0.0, target), 0.02);  // no spread: the margin
  const double at_6 = signed_rank_detectable_shift(6, 1.0, target),
               at_12 = signed_rank_detectable_shift(12, 1.0, target);
  EXPECT_LT(at_12, at_6);
  // A lower level (a larger BH family) costs power.
  EXPECT_GT(signed_rank_detectable_shift(12, 1.0, {0.025, 0.95, 0.02, 0.8}), at_12);
  EXPECT_THROW(signed_rank_detectable_shift(6, -1.0, target), std::invalid_argument);
  EXPECT_THROW(signed_rank_detectable_shift(6, 1.0, {0.0, 0.95, 0.02, 0.8}), std::invalid_argument);
}

}  // namespace
}  // namespace schedlab::stats
