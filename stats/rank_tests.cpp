#include "stats/rank_tests.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "stats/distributions.hpp"
#include "stats/input.hpp"
#include "stats/null_distribution.hpp"

namespace schedlab::stats {
namespace {

using detail::NullDistribution;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> concatenated(std::span<const double> x, std::span<const double> y) {
  std::vector<double> v(x.begin(), x.end());
  v.insert(v.end(), y.begin(), y.end());
  return v;
}

double median_of_sorted(const std::vector<double>& v) {
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Two-sided p-value of a statistic with the given null mean and standard deviation, continuity corrected
// (R's wilcox.test(exact = FALSE, correct = TRUE)). The statistic lives on a half-integer grid, so the
// correction never crosses the mean.
double normal_two_sided(double statistic, double mean, double sigma) {
  if (!(sigma > 0)) return 1;
  const double z = statistic - mean;
  const double corrected = (std::fabs(z) - (z != 0 ? 0.5 : 0)) / sigma;
  return std::min(1.0, 2 * detail::normal_sf(corrected));
}

// Tail probabilities of the rank statistic U on the integers, from its exact null distribution ...
struct ExactTails {
  const NullDistribution& null;
  double at_most(std::int64_t j) const { return null.at_most(2 * j); }    // P(U <= j)
  double at_least(std::int64_t j) const { return null.at_least(2 * j); }  // P(U >= j)
};

// ... or from the continuity-corrected normal approximation.
struct NormalTails {
  double mean;
  double sigma;
  double at_most(std::int64_t j) const {
    const auto u = static_cast<double>(j);
    if (!(sigma > 0)) return u >= mean ? 1 : 0;
    return detail::normal_cdf((u + 0.5 - mean) / sigma);
  }
  double at_least(std::int64_t j) const {
    const auto u = static_cast<double>(j);
    if (!(sigma > 0)) return u <= mean ? 1 : 0;
    return detail::normal_sf((u - 0.5 - mean) / sigma);
  }
};

// The distribution-free interval for a location parameter by inverting the rank test (Moses). `sorted`
// holds the M pairwise differences (or Walsh averages) in order; for a shift D between two of them the
// test's statistic is U(D) = #(values > D), so the test accepts D unless U(D) lies in a tail of mass
// alpha/2. As R (qwilcox with its 10 DBL_EPSILON fuzz; qu == 0 becomes 1) but with each tail found on its
// own, since with ties the distribution need not be symmetric.
template <class Tails>
ShiftEstimate invert_rank_test(const std::vector<double>& sorted, const Tails& tails, double confidence) {
  const auto m = static_cast<std::int64_t>(sorted.size());
  const double half_alpha = (1 - confidence) / 2 - 10 * DBL_EPSILON;
  auto smallest = [m](auto&& holds) {  // smallest j in [0, m] where the monotone predicate holds
    std::int64_t lo = 0, hi = m;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (holds(mid))
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  };
  const std::int64_t k_upper =
      std::max<std::int64_t>(1, smallest([&](std::int64_t j) { return tails.at_most(j) >= half_alpha; }));
  const std::int64_t k_lower = std::max<std::int64_t>(
      1, smallest([&](std::int64_t j) { return tails.at_least(m - j) >= half_alpha; }));
  ShiftEstimate e;
  e.estimate = median_of_sorted(sorted);
  e.lower = sorted[static_cast<std::size_t>(k_lower - 1)];  // the k_lower-th smallest
  e.upper = sorted[static_cast<std::size_t>(m - k_upper)];  // the k_upper-th largest
  if (e.lower > e.upper) std::swap(e.lower, e.upper);       // only for levels near 0 with lopsided ties
  // The interval misses the true shift when U there falls below k_upper or above m - k_lower.
  e.confidence = std::clamp(1 - tails.at_most(k_upper - 1) - tails.at_least(m - k_lower + 1), 0.0, 1.0);
  return e;
}

ShiftEstimate undefined_shift() {
  return {kNaN, kNaN, kNaN, 0};
}

}  // namespace

TestResult mann_whitney(std::span<const double> x, std::span<const double> y) {
  detail::require_no_nan(x, "mann_whitney", "x");
  detail::require_no_nan(y, "mann_whitney", "y");
  TestResult r;
  const std::size_t n1 = x.size(), n2 = y.size(), n = n1 + n2;
  r.exact = n <= kExactRankLimit;
  if (n1 == 0 || n2 == 0) return r;

  const auto pooled = concatenated(x, y);
  const auto ranks = detail::doubled_midranks(pooled);
  std::int64_t rank_sum2 = 0;
  for (std::size_t i = 0; i < n1; ++i) rank_sum2 += ranks.doubled[i];
  const auto m1 = static_cast<std::int64_t>(n1);
  const std::int64_t u2 = rank_sum2 - m1 * (m1 + 1);  // 2U of x
  r.statistic = static_cast<double>(u2) / 2;
  if (std::all_of(pooled.begin(), pooled.end(), [&](double v) { return v == pooled[0]; })) return r;

  if (r.exact) {
    r.p_value = detail::rank_sum_null(ranks.doubled, n1).two_sided(u2);
  } else {
    const double n1n2 = static_cast<double>(n1) * static_cast<double>(n2), nn = static_cast<double>(n);
    const double sigma = std::sqrt(n1n2 / 12 * ((nn + 1) - ranks.tie_term / (nn * (nn - 1))));
    r.p_value = normal_two_sided(r.statistic, n1n2 / 2, sigma);
  }
  return r;
}

double mann_whitney_min_p(std::size_t n1, std::size_t n2) {
  const std::size_t k = std::min(n1, n2), n = n1 + n2;
  double choose = 1;  // C(n, k), built so that every partial product is itself a binomial coefficient
  for (std::size_t i = 1; i <= k; ++i)
    choose = choose * static_cast<double>(n - k + i) / static_cast<double>(i);
  return std::min(1.0, 2 / choose);
}

ShiftEstimate hodges_lehmann(std::span<const double> x, std::span<const double> y, double confidence) {
  detail::require_finite(x, "hodges_lehmann", "x");
  detail::require_finite(y, "hodges_lehmann", "y");
  detail::require_open_unit(confidence, "hodges_lehmann", "confidence");
  if (x.empty() || y.empty()) return undefined_shift();

  std::vector<double> diffs;
  diffs.reserve(x.size() * y.size());
  for (double yj : y)
    for (double xi : x) diffs.push_back(yj - xi);
  std::sort(diffs.begin(), diffs.end());

  // U(D) = #(y_j - D > x_i) is the U of the shifted y, so its null law is that of a y-sized rank subset,
  // with the tie structure observed in the pooled sample (the one the test uses).
  const auto ranks = detail::doubled_midranks(concatenated(x, y));
  const std::size_t n = x.size() + y.size();
  if (n <= kExactRankLimit) {
    const auto null = detail::rank_sum_null(ranks.doubled, y.size());
    return invert_rank_test(diffs, ExactTails{null}, confidence);
  }
  const double n1n2 = static_cast<double>(diffs.size()), nn = static_cast<double>(n);
  const double sigma = std::sqrt(n1n2 / 12 * ((nn + 1) - ranks.tie_term / (nn * (nn - 1))));
  return invert_rank_test(diffs, NormalTails{n1n2 / 2, sigma}, confidence);
}

TestResult wilcoxon_signed_rank(std::span<const double> d) {
  detail::require_no_nan(d, "wilcoxon_signed_rank", "d");
  std::vector<double> magnitude;
  std::vector<bool> positive;
  for (double v : d) {
    if (v == 0) continue;
    magnitude.push_back(std::fabs(v));
    positive.push_back(v > 0);
  }
  TestResult r;
  const std::size_t n = magnitude.size();
  r.exact = n <= kExactRankLimit;
  if (n == 0) return r;

  const auto ranks = detail::doubled_midranks(magnitude);
  std::int64_t v2 = 0;  // 2V
  for (std::size_t i = 0; i < n; ++i)
    if (positive[i]) v2 += ranks.doubled[i];
  r.statistic = static_cast<double>(v2) / 2;
  if (r.exact) {
    r.p_value = detail::signed_rank_null(ranks.doubled).two_sided(v2);
  } else {
    const auto nn = static_cast<double>(n);
    const double sigma = std::sqrt(nn * (nn + 1) * (2 * nn + 1) / 24 - ranks.tie_term / 48);
    r.p_value = normal_two_sided(r.statistic, nn * (nn + 1) / 4, sigma);
  }
  return r;
}

double wilcoxon_min_p(std::size_t n) {
  return std::min(1.0, std::ldexp(2.0, -static_cast<int>(std::min<std::size_t>(n, 2000))));
}

ShiftEstimate hodges_lehmann_paired(std::span<const double> d, double confidence) {
  detail::require_finite(d, "hodges_lehmann_paired", "d");
  detail::require_open_unit(confidence, "hodges_lehmann_paired", "confidence");
  const std::size_t n = d.size();
  if (n == 0) return undefined_shift();

  std::vector<double> walsh;
  walsh.reserve(n * (n + 1) / 2);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i; j < n; ++j) walsh.push_back((d[i] + d[j]) / 2);
  std::sort(walsh.begin(), walsh.end());

  // V of d - D is #(Walsh averages > D). Zeros are kept here: a shift D away from 0 moves them off zero,
  // and the estimate of a sample of mostly equal pairs should be 0 (R drops them, and moves it).
  std::vector<double> magnitude(n);
  std::transform(d.begin(), d.end(), magnitude.begin(), [](double v) { return std::fabs(v); });
  const auto ranks = detail::doubled_midranks(magnitude);
  if (n <= kExactRankLimit) {
    const auto null = detail::signed_rank_null(ranks.doubled);
    return invert_rank_test(walsh, ExactTails{null}, confidence);
  }
  const auto nn = static_cast<double>(n);
  const double sigma = std::sqrt(nn * (nn + 1) * (2 * nn + 1) / 24 - ranks.tie_term / 48);
  return invert_rank_test(walsh, NormalTails{nn * (nn + 1) / 4, sigma}, confidence);
}

}  // namespace schedlab::stats
