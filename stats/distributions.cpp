#include "stats/distributions.hpp"

#include <cmath>
#include <limits>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

namespace schedlab::stats::detail {
namespace {

namespace bmp = boost::math::policies;
// Boost's default policy throws (and its errno policy writes a global): ignore_error instead returns
// NaN for a domain error and +-inf for an overflow, which the callers below rule out or want.
using Quiet =
    bmp::policy<bmp::domain_error<bmp::ignore_error>, bmp::pole_error<bmp::ignore_error>,
                bmp::overflow_error<bmp::ignore_error>, bmp::underflow_error<bmp::ignore_error>,
                bmp::denorm_error<bmp::ignore_error>, bmp::evaluation_error<bmp::ignore_error>,
                bmp::rounding_error<bmp::ignore_error>, bmp::indeterminate_result_error<bmp::ignore_error>>;
using Normal = boost::math::normal_distribution<double, Quiet>;
using StudentT = boost::math::students_t_distribution<double, Quiet>;

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

double normal_cdf(double z) {
  if (std::isinf(z)) return z > 0 ? 1 : 0;
  return boost::math::cdf(Normal(), z);
}

double normal_sf(double z) {
  if (std::isinf(z)) return z > 0 ? 0 : 1;
  return boost::math::cdf(boost::math::complement(Normal(), z));
}

double normal_inverse_cdf(double p) {
  if (p <= 0) return -kInf;
  if (p >= 1) return kInf;
  return boost::math::quantile(Normal(), p);
}

double student_t_sf(double t, double df) {
  if (std::isinf(t)) return t > 0 ? 0 : 1;
  if (std::isinf(df)) return normal_sf(t);
  return boost::math::cdf(boost::math::complement(StudentT(df), t));
}

double student_t_inverse_cdf(double p, double df) {
  if (p <= 0) return -kInf;
  if (p >= 1) return kInf;
  if (std::isinf(df)) return normal_inverse_cdf(p);
  return boost::math::quantile(StudentT(df), p);
}

}  // namespace schedlab::stats::detail
