#pragma once
// Welch's t (shown beside the rank test, on log values) and the distribution quantiles the diff needs.
#include <cstddef>
#include <span>

namespace schedlab::stats {

struct WelchResult {
  double t = 0;
  double df = 0;
  double p_value = 1;          // two-sided
  double mean_difference = 0;  // mean(y) - mean(x)
  double lower = 0;            // interval of mean(y) - mean(x) at the requested confidence
  double upper = 0;
};

// Welch's unequal-variance t test of y against x. Needs >= 2 values a side (else p = 1, df = 0).
// Both variances zero: p = 1 when the means are equal, else 0 (t = +-inf); df = n_x + n_y - 2 and the
// interval is the difference itself. Fewer than 2 a side: interval (-inf, +inf); an empty side also makes
// mean_difference NaN. NaN or infinite values and a confidence outside (0, 1) throw std::invalid_argument.
WelchResult welch_t(std::span<const double> x, std::span<const double> y, double confidence);

// One-sample t test of paired differences d against 0 (the paired design's secondary test);
// mean_difference is mean(d). Fewer than 2 values: p = 1; all equal: p = 1 at 0, else 0. Errors as welch_t.
WelchResult paired_t(std::span<const double> d, double confidence);

// p in [0, 1] (0 and 1 give -inf and +inf) and df > 0 (infinity: the normal); else std::invalid_argument.
double normal_quantile(double p);
double student_t_quantile(double p, double df);

// Smallest true shift of means (in the data's units) that a two-sided test at `alpha` detects with
// probability `power`, given the two sides' standard deviations and sizes (normal approximation,
// inflated by sqrt(pi/3) for the rank test's efficiency against t). Infinity when a side has n < 2.
// That is (z_{1-alpha/2} + z_power) sqrt(sd_x^2/n_x + sd_y^2/n_y) sqrt(pi/3). alpha and power must lie in
// (0, 1) and the standard deviations be finite and >= 0, else std::invalid_argument.
double minimum_detectable_shift(double sd_x, std::size_t n_x, double sd_y, std::size_t n_y, double alpha,
                                double power);

}  // namespace schedlab::stats
