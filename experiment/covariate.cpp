#include "experiment/covariate.hpp"

#include <cmath>
#include <span>

#include "stats/parametric.hpp"

namespace schedlab {
namespace {

double mean_of(std::span<const double> x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

double covariance(std::span<const double> x, std::span<const double> y) {
  const double mx = mean_of(x), my = mean_of(y);
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += (x[i] - mx) * (y[i] - my);
  return s / static_cast<double>(x.size() - 1);
}

double log_ratio_pct(double log_ratio) {
  return std::expm1(log_ratio) * 100;
}

}  // namespace

nlohmann::json covariate_json(const std::vector<double>& d, const std::vector<double>& p, double margin_pct,
                              double alpha) {
  if (d.size() != p.size() || d.size() < 8) return nullptr;
  const std::span<const double> sd(d), sp(p);
  const double var_d = covariance(sd, sd), var_p = covariance(sp, sp);
  const double r = var_d > 0 && var_p > 0 ? covariance(sd, sp) / std::sqrt(var_d * var_p) : 0;
  const std::size_t half = d.size() / 2;
  const auto d1 = sd.first(half), p1 = sp.first(half), d2 = sd.subspan(half), p2 = sp.subspan(half);
  const double var_p1 = covariance(p1, p1);
  const double theta = var_p1 > 0 ? covariance(d1, p1) / var_p1 : 0;
  std::vector<double> adjusted;
  for (std::size_t i = 0; i < d2.size(); ++i) adjusted.push_back(d2[i] - theta * p2[i]);
  const double var_d2 = covariance(d2, d2);
  const double out_of_sample = var_d2 > 0 ? 1 - covariance(adjusted, adjusted) / var_d2 : 0;
  const auto shift = stats::paired_t(sp, 1 - 2 * alpha);
  nlohmann::json j = {
      {"probe",
       "dependent integer multiply-add chain, ~5 ms, next to each trial; ln(b/a) of its ns per step"},
      {"used", false},
      {"pairs", d.size()},
      {"correlation", r},
      {"variance_reduction_in_sample", r * r},
      {"theta_first_half", theta},
      {"variance_reduction_out_of_sample", out_of_sample},
      {"probe_shift_pct", log_ratio_pct(shift.mean_difference)},
      {"probe_interval_pct", {log_ratio_pct(shift.lower), log_ratio_pct(shift.upper)}},
      {"probe_sd_log_ratio", std::sqrt(var_p)}};
  if (margin_pct > 0)
    j["probe_equivalent"] =
        shift.lower > std::log1p(-margin_pct / 100) && shift.upper < std::log1p(margin_pct / 100);
  return j;
}

}  // namespace schedlab
