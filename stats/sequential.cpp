#include "stats/sequential.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "stats/distributions.hpp"
#include "stats/input.hpp"
#include "stats/parametric.hpp"

namespace schedlab::stats {
namespace {

struct Moments {
  double mean = 0, sd = 0;
};

// Two-pass, about the first value, as parametric.cpp does: a constant sample has exactly zero spread.
Moments moments(std::span<const double> v) {
  Moments m;
  if (v.empty()) return m;
  double sum = 0;
  for (double x : v) sum += x - v[0];
  const auto n = static_cast<double>(v.size());
  m.mean = v[0] + sum / n;
  if (v.size() < 2) return m;
  double ss = 0;
  for (double x : v) ss += (x - m.mean) * (x - m.mean);
  m.sd = std::sqrt(ss / (n - 1));
  return m;
}

void require_positive(double v, const char* function, const char* name) {
  if (!(v > 0) || !std::isfinite(v))
    throw std::invalid_argument(std::string(function) + ": " + name +
                                " must be a positive finite number, got " + std::to_string(v));
}

SequentialState state_of(const SequentialLook& l, double margin_lower, double margin_upper) {
  if (l.lower > 0) return SequentialState::kIncrease;
  if (l.upper < 0) return SequentialState::kDecrease;
  if (l.lower > margin_lower && l.upper < margin_upper) return SequentialState::kEquivalent;
  return SequentialState::kContinue;
}

}  // namespace

double sequence_half_width(double t, double sd, double r, double alpha) {
  if (!(t >= 1)) throw std::invalid_argument("sequence_half_width: t must be at least 1");
  if (!(sd >= 0) || !std::isfinite(sd))
    throw std::invalid_argument("sequence_half_width: sd must be finite and >= 0");
  require_positive(r, "sequence_half_width", "r");
  detail::require_open_unit(alpha, "sequence_half_width", "alpha");
  const double v = t * sd * sd * r + 1;
  return std::sqrt(2 * v / (t * t * r) * std::log(std::sqrt(v) / alpha));
}

double sequence_tuning(double t_opt, double sd, double alpha) {
  if (!(t_opt >= 1)) throw std::invalid_argument("sequence_tuning: t_opt must be at least 1");
  require_positive(sd, "sequence_tuning", "sd");
  detail::require_open_unit(alpha, "sequence_tuning", "alpha");
  // The width at t_opt is unimodal in log r: golden-section search over a range wide enough for any t.
  auto width = [&](double log_r) { return sequence_half_width(t_opt, sd, std::exp(log_r), alpha); };
  const double scale = -2 * std::log(sd);  // r scales as 1 / sd^2
  double a = scale - std::log(t_opt) - 12, b = scale - std::log(t_opt) + 12;
  const double g = (std::sqrt(5.0) - 1) / 2;
  double c = b - g * (b - a), d = a + g * (b - a);
  for (int i = 0; i < 200 && b - a > 1e-9; ++i) {
    if (width(c) < width(d))
      b = d;
    else
      a = c;
    c = b - g * (b - a);
    d = a + g * (b - a);
  }
  return std::exp((a + b) / 2);
}

double sequence_detectable_shift(double t, double sd, double r, double alpha, double power) {
  detail::require_open_unit(power, "sequence_detectable_shift", "power");
  return sequence_half_width(t, sd, r, alpha) + detail::normal_inverse_cdf(power) * sd / std::sqrt(t);
}

SequentialPlan plan_sequential(double sd, double target, double alpha, double power, std::size_t max_pairs) {
  require_positive(sd, "plan_sequential", "sd");
  require_positive(target, "plan_sequential", "target");
  if (max_pairs < 2) throw std::invalid_argument("plan_sequential: max_pairs must be at least 2");
  SequentialPlan plan;
  // The detectable shift falls with n; doubling then bisecting finds the first n that reaches the target.
  auto shift_at = [&](std::size_t n, double* tuning) {
    const double r = sequence_tuning(static_cast<double>(n), sd, alpha);
    if (tuning) *tuning = r;
    return sequence_detectable_shift(static_cast<double>(n), sd, r, alpha, power);
  };
  std::size_t hi = 2;
  while (hi < max_pairs && shift_at(hi, nullptr) > target) hi = std::min(max_pairs, hi * 2);
  if (shift_at(hi, nullptr) > target) {
    plan.pairs = max_pairs;
    plan.reachable = false;
  } else {
    std::size_t lo = std::max<std::size_t>(2, hi / 2);  // shift_at(lo) > target unless lo == 2
    if (shift_at(lo, nullptr) <= target) hi = lo;
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      (shift_at(mid, nullptr) > target ? lo : hi) = mid;
    }
    plan.pairs = hi;
  }
  plan.detectable = shift_at(plan.pairs, &plan.tuning);
  return plan;
}

std::string to_string(SequentialState s) {
  switch (s) {
    case SequentialState::kContinue:
      return "continue";
    case SequentialState::kIncrease:
      return "increase";
    case SequentialState::kDecrease:
      return "decrease";
    case SequentialState::kEquivalent:
      return "equivalent";
  }
  return "?";
}

SequentialLook look(std::span<const double> d, double r, double alpha, double margin_lower,
                    double margin_upper) {
  detail::require_finite(d, "look", "d");
  if (d.size() < 2) throw std::invalid_argument("look: needs at least 2 differences");
  if (!(margin_lower < 0 && margin_upper > 0))
    throw std::invalid_argument("look: the margins must lie on either side of 0");
  SequentialLook l;
  l.n = d.size();
  const auto m = moments(d);
  l.mean = m.mean;
  l.sd = m.sd;
  const double w = sequence_half_width(static_cast<double>(l.n), m.sd, r, alpha);
  l.lower = m.mean - w;
  l.upper = m.mean + w;
  l.state = state_of(l, margin_lower, margin_upper);
  l.within_margin = (l.state == SequentialState::kIncrease || l.state == SequentialState::kDecrease) &&
                    l.lower > margin_lower && l.upper < margin_upper;
  return l;
}

SequentialLook naive_look(std::span<const double> d, double alpha) {
  detail::require_finite(d, "naive_look", "d");
  if (d.size() < 2) throw std::invalid_argument("naive_look: needs at least 2 differences");
  const auto t = paired_t(d, 1 - alpha);
  SequentialLook l;
  l.n = d.size();
  const auto m = moments(d);
  l.mean = m.mean;
  l.sd = m.sd;
  l.lower = t.lower;
  l.upper = t.upper;
  l.state = l.lower > 0   ? SequentialState::kIncrease
            : l.upper < 0 ? SequentialState::kDecrease
                          : SequentialState::kContinue;
  return l;
}

}  // namespace schedlab::stats
