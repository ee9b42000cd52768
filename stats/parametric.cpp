#include "stats/parametric.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

#include "stats/distributions.hpp"
#include "stats/input.hpp"

namespace schedlab::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Moments {
  double mean = 0;
  double variance = 0;  // sample variance (n - 1); 0 for n < 2
};

// The mean is taken about the first value, so a constant sample has exactly its value as mean and exactly
// zero variance (sum / n of 0.1, 0.1, 0.1 is not 0.1).
Moments moments(std::span<const double> v) {
  Moments m;
  if (v.empty()) return m;
  const double origin = v[0];
  double sum = 0;
  for (double x : v) sum += x - origin;
  const auto n = static_cast<double>(v.size());
  m.mean = origin + sum / n;
  if (v.size() < 2) return m;
  double ss = 0;
  for (double x : v) ss += (x - m.mean) * (x - m.mean);
  m.variance = ss / (n - 1);
  return m;
}

void require_probability(double p, const char* function) {
  if (!(p >= 0 && p <= 1))
    throw std::invalid_argument(std::string(function) + ": p must lie in [0, 1], got " + std::to_string(p));
}

}  // namespace

WelchResult welch_t(std::span<const double> x, std::span<const double> y, double confidence) {
  detail::require_finite(x, "welch_t", "x");
  detail::require_finite(y, "welch_t", "y");
  detail::require_open_unit(confidence, "welch_t", "confidence");
  WelchResult r;
  r.lower = -kInf;
  r.upper = kInf;
  if (x.empty() || y.empty()) {
    r.mean_difference = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  const Moments mx = moments(x), my = moments(y);
  r.mean_difference = my.mean - mx.mean;
  if (x.size() < 2 || y.size() < 2) return r;

  const auto nx = static_cast<double>(x.size()), ny = static_cast<double>(y.size());
  const double vx = mx.variance / nx, vy = my.variance / ny, se2 = vx + vy;
  if (se2 == 0) {  // both sides constant: the difference is known exactly
    r.df = nx + ny - 2;
    r.t = r.mean_difference == 0 ? 0 : std::copysign(kInf, r.mean_difference);
    r.p_value = r.mean_difference == 0 ? 1 : 0;
    r.lower = r.upper = r.mean_difference;
    return r;
  }
  const double se = std::sqrt(se2);
  r.t = r.mean_difference / se;
  r.df = se2 * se2 / (vx * vx / (nx - 1) + vy * vy / (ny - 1));
  r.p_value = std::min(1.0, 2 * detail::student_t_sf(std::fabs(r.t), r.df));
  const double q = detail::student_t_inverse_cdf(1 - (1 - confidence) / 2, r.df);
  r.lower = r.mean_difference - q * se;
  r.upper = r.mean_difference + q * se;
  return r;
}

WelchResult paired_t(std::span<const double> d, double confidence) {
  detail::require_finite(d, "paired_t", "d");
  detail::require_open_unit(confidence, "paired_t", "confidence");
  WelchResult r;
  r.lower = -kInf;
  r.upper = kInf;
  if (d.empty()) {
    r.mean_difference = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  const Moments m = moments(d);
  r.mean_difference = m.mean;
  if (d.size() < 2) return r;
  const auto n = static_cast<double>(d.size());
  r.df = n - 1;
  const double se = std::sqrt(m.variance / n);
  if (se == 0) {
    r.t = m.mean == 0 ? 0 : std::copysign(kInf, m.mean);
    r.p_value = m.mean == 0 ? 1 : 0;
    r.lower = r.upper = m.mean;
    return r;
  }
  r.t = m.mean / se;
  r.p_value = std::min(1.0, 2 * detail::student_t_sf(std::fabs(r.t), r.df));
  const double q = detail::student_t_inverse_cdf(1 - (1 - confidence) / 2, r.df);
  r.lower = m.mean - q * se;
  r.upper = m.mean + q * se;
  return r;
}

double normal_quantile(double p) {
  require_probability(p, "normal_quantile");
  return detail::normal_inverse_cdf(p);
}

double student_t_quantile(double p, double df) {
  require_probability(p, "student_t_quantile");
  if (!(df > 0))
    throw std::invalid_argument("student_t_quantile: df must be positive, got " + std::to_string(df));
  return detail::student_t_inverse_cdf(p, df);
}

double minimum_detectable_shift(double sd_x, std::size_t n_x, double sd_y, std::size_t n_y, double alpha,
                                double power) {
  detail::require_open_unit(alpha, "minimum_detectable_shift", "alpha");
  detail::require_open_unit(power, "minimum_detectable_shift", "power");
  for (double sd : {sd_x, sd_y})
    if (!(sd >= 0) || std::isinf(sd))
      throw std::invalid_argument(
          "minimum_detectable_shift: a standard deviation is negative, NaN or infinite");
  if (n_x < 2 || n_y < 2) return kInf;
  const double se =
      std::sqrt(sd_x * sd_x / static_cast<double>(n_x) + sd_y * sd_y / static_cast<double>(n_y));
  const double z = detail::normal_inverse_cdf(1 - alpha / 2) + detail::normal_inverse_cdf(power);
  // Mann–Whitney's asymptotic efficiency against t is 3/pi for normal data: it needs pi/3 times the samples.
  return z * se * std::sqrt(std::numbers::pi / 3);
}

}  // namespace schedlab::stats
