#include "stats/power.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "stats/input.hpp"
#include "stats/null_distribution.hpp"
#include "stats/parametric.hpp"
#include "stats/rank_tests.hpp"

namespace schedlab::stats {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// 1000 draws: the power at the returned shift is within about +-0.025 (two standard errors) of the
// target, well inside what the spread estimated from a handful of trials moves it by anyway.
constexpr std::size_t kDraws = 1000;
constexpr std::uint64_t kSeed = 0x5eed'd1ffULL;

// The statistic's two thresholds, both as counts of pairwise values (Walsh averages, or differences
// y_j - x_i) above a point, which is what the rank statistic is when there are no ties.
struct Critical {
  std::int64_t test = 0;      // the test rejects upwards when #(values > 0) >= test
  std::int64_t interval = 0;  // the interval's lower bound exceeds m when #(values > m) >= interval
  bool reachable = false;
};

// From the exact null distribution of the statistic over 0 .. pairs (no ties): the same order
// statistics as invert_rank_test and the same two-sided p as the test (rank_tests.cpp).
Critical critical_values(const detail::NullDistribution& null, std::int64_t pairs, const PowerTarget& t) {
  auto at_least = [&](std::int64_t u) { return null.at_least(2 * u); };
  Critical c;
  c.test = pairs + 1;
  for (std::int64_t u = pairs; u >= 0; --u) {
    if (std::min(1.0, 2 * at_least(u)) < t.level)
      c.test = u;
    else
      break;
  }
  c.reachable = c.test <= pairs;
  const double half_alpha = (1 - t.confidence) / 2 - 10 * DBL_EPSILON;
  std::int64_t k_lower = pairs;
  for (std::int64_t j = 0; j <= pairs; ++j) {
    if (at_least(pairs - j) >= half_alpha) {
      k_lower = j;
      break;
    }
  }
  k_lower = std::max<std::int64_t>(1, k_lower);
  c.interval = pairs - k_lower + 1;
  return c;
}

// With no ties a draw detects a shift c when its count above 0 reaches `test` and its count above the
// margin reaches `interval`, i.e. when c exceeds the draw's threshold
//   max(-q(test), margin - q(interval)),  q(k) = the k-th largest pairwise value of the unshifted draw,
// so the power at c is the fraction of thresholds below c, and the smallest shift with the target
// power is a quantile of the thresholds: no search, and exactly monotone.
double kth_largest(std::vector<double>& values, std::int64_t k) {
  const auto at = values.size() - static_cast<std::size_t>(k);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(at), values.end());
  return values[at];
}

double threshold_quantile(std::vector<double>& thresholds, double power) {
  std::sort(thresholds.begin(), thresholds.end());
  const auto k = static_cast<std::size_t>(std::ceil(power * static_cast<double>(thresholds.size())));
  const double c = thresholds[std::min(thresholds.size(), std::max<std::size_t>(k, 1)) - 1];
  return std::nextafter(c, kInfinity);  // detection needs the shift strictly above the threshold
}

std::vector<double> standard_normals(std::size_t count, std::uint64_t stream) {
  std::mt19937_64 rng(kSeed ^ stream);
  std::normal_distribution<double> z;
  std::vector<double> out(count);
  for (auto& v : out) v = z(rng);
  return out;
}

void check(const PowerTarget& t, double sd, const char* function) {
  detail::require_open_unit(t.level, function, "level");
  detail::require_open_unit(t.confidence, function, "confidence");
  detail::require_open_unit(t.power, function, "power");
  if (!(sd >= 0) || !std::isfinite(sd) || !(t.margin >= 0) || !std::isfinite(t.margin))
    throw std::invalid_argument(std::string(function) + ": sd or margin negative, NaN or infinite");
}

// Beyond the exact range: the normal approximation of both conditions, with the rank tests'
// efficiency against t (sqrt(pi/3) on the standard error).
double asymptotic_shift(double standard_error, const PowerTarget& t) {
  const double se = standard_error * std::sqrt(M_PI / 3);
  const double z_power = normal_quantile(t.power);
  return std::max(normal_quantile(1 - t.level / 2) * se,
                  t.margin + normal_quantile(1 - (1 - t.confidence) / 2) * se) +
         z_power * se;
}

}  // namespace

double signed_rank_detectable_shift(std::size_t n, double sd, const PowerTarget& t) {
  check(t, sd, "signed_rank_detectable_shift");
  if (n == 0) return kInfinity;
  if (n > kExactRankLimit) return asymptotic_shift(sd / std::sqrt(static_cast<double>(n)), t);
  std::vector<std::int64_t> ranks(n);
  for (std::size_t i = 0; i < n; ++i) ranks[i] = 2 * static_cast<std::int64_t>(i + 1);
  const auto pairs = static_cast<std::int64_t>(n * (n + 1) / 2);
  const auto crit = critical_values(detail::signed_rank_null(ranks), pairs, t);
  if (!crit.reachable) return kInfinity;
  if (!(sd > 0)) return t.margin;  // no spread: any shift beyond the margin is seen
  const auto z = standard_normals(kDraws * n, n);
  std::vector<double> walsh(static_cast<std::size_t>(pairs)), thresholds(kDraws);
  for (std::size_t r = 0; r < kDraws; ++r) {
    walsh.clear();
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i; j < n; ++j) walsh.push_back(sd * (z[r * n + i] + z[r * n + j]) / 2);
    const double q_test = kth_largest(walsh, crit.test);
    const double q_interval = kth_largest(walsh, crit.interval);
    thresholds[r] = std::max(-q_test, t.margin - q_interval);
  }
  return threshold_quantile(thresholds, t.power);
}

double rank_sum_detectable_shift(std::size_t n_x, double sd_x, std::size_t n_y, double sd_y,
                                 const PowerTarget& t) {
  check(t, sd_x, "rank_sum_detectable_shift");
  check(t, sd_y, "rank_sum_detectable_shift");
  if (n_x == 0 || n_y == 0) return kInfinity;
  const std::size_t n = n_x + n_y;
  if (n > kExactRankLimit)
    return asymptotic_shift(
        std::sqrt(sd_x * sd_x / static_cast<double>(n_x) + sd_y * sd_y / static_cast<double>(n_y)), t);
  std::vector<std::int64_t> ranks(n);
  for (std::size_t i = 0; i < n; ++i) ranks[i] = 2 * static_cast<std::int64_t>(i + 1);
  const auto pairs = static_cast<std::int64_t>(n_x * n_y);
  const auto crit = critical_values(detail::rank_sum_null(ranks, n_y), pairs, t);
  if (!crit.reachable) return kInfinity;
  if (!(sd_x > 0) && !(sd_y > 0)) return t.margin;
  const auto z = standard_normals(kDraws * n, (n_x << 16) ^ n_y);
  std::vector<double> differences(static_cast<std::size_t>(pairs)), thresholds(kDraws);
  for (std::size_t r = 0; r < kDraws; ++r) {
    differences.clear();
    for (std::size_t j = 0; j < n_y; ++j)
      for (std::size_t i = 0; i < n_x; ++i)
        differences.push_back(sd_y * z[r * n + n_x + j] - sd_x * z[r * n + i]);
    const double q_test = kth_largest(differences, crit.test);
    const double q_interval = kth_largest(differences, crit.interval);
    thresholds[r] = std::max(-q_test, t.margin - q_interval);
  }
  return threshold_quantile(thresholds, t.power);
}

}  // namespace schedlab::stats
