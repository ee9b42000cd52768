#pragma once
// The normal and Student t distributions, from Boost.Math (internal to schedlab_stats; the only file that
// includes Boost). Boost's policy here reports nothing through exceptions or errno: callers validate
// their arguments first, and out-of-range results come back as the limits (0, 1, +-inf).
namespace schedlab::stats::detail {

double normal_cdf(double z);                        // P(Z <= z)
double normal_sf(double z);                         // P(Z > z), accurate in the upper tail
double normal_inverse_cdf(double p);                // p in [0, 1]; 0 -> -inf, 1 -> +inf
double student_t_sf(double t, double df);           // P(T > t), df > 0
double student_t_inverse_cdf(double p, double df);  // p in [0, 1], df > 0 (infinite: normal)

}  // namespace schedlab::stats::detail
