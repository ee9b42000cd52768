#include "stats/change_points.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "stats/input.hpp"

namespace schedlab::stats {
namespace {

constexpr const char* kFunction = "change_points";

double median_of(std::span<const double> v) {
  std::vector<double> s(v.begin(), v.end());
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// Midranks (1-based): the statistic sees only the order of the values, so one spike night weighs as
// much as the most extreme ordinary night, however far out it is.
std::vector<double> midranks(std::span<const double> v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double rank = (static_cast<double>(i + j) + 2) / 2;
    for (std::size_t k = i; k <= j; ++k) r[order[k]] = rank;
    i = j + 1;
  }
  return r;
}

struct Split {
  std::size_t at = 0;  // relative to the segment
  double q = -std::numeric_limits<double>::infinity();
};

// The best split of x by the E-Divisive statistic (exponent 1):
//   Q(t) = m k / (m + k) * (2 E|X - Y| - E|X - X'| - E|Y - Y'|), X = x[0, t), Y = x[t, n), m = t, k = n - t,
// with the within and between sums updated as each value moves from Y to X: O(n^2) for all t.
Split best_split(std::span<const double> x, std::size_t min_segment) {
  const std::size_t n = x.size();
  double within_left = 0, within_right = 0, between = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) within_right += std::abs(x[i] - x[j]);
  Split best;
  for (std::size_t t = 0; t + min_segment <= n; ++t) {
    if (t >= min_segment) {
      const auto m = static_cast<double>(t), k = static_cast<double>(n - t);
      const double d =
          2 * between / (m * k) - 2 * within_left / (m * (m - 1)) - 2 * within_right / (k * (k - 1));
      const double q = m * k / (m + k) * d;
      if (q > best.q) best = {t, q};
    }
    double to_left = 0, to_right = 0;  // x[t] against the values already left of it, and right of it
    for (std::size_t i = 0; i < t; ++i) to_left += std::abs(x[t] - x[i]);
    for (std::size_t j = t + 1; j < n; ++j) to_right += std::abs(x[t] - x[j]);
    within_left += to_left;
    within_right -= to_right;
    between += to_right - to_left;
  }
  return best;
}

// splitmix64: a segment's permutations are seeded from the seed and the segment alone, so a segment
// gets the same p-value whichever order the recursion reaches it in.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The share of permutations of the segment whose best split is at least as strong as the observed one
// ((count + 1) / (R + 1): never 0). Fisher–Yates on our own generator, not std::shuffle, whose
// algorithm the standard leaves to the library: the output must not change with the toolchain.
double permutation_p(std::vector<double> x, double observed, std::size_t min_segment,
                     std::size_t permutations, std::uint64_t seed) {
  std::uint64_t state = seed;
  std::size_t at_least = 0;
  // Q is a sum of rank distances: a permuted split equal to the observed one may differ in the last bits.
  const double tolerance = 1e-9 * std::max(1.0, std::abs(observed));
  for (std::size_t r = 0; r < permutations; ++r) {
    for (std::size_t i = x.size() - 1; i > 0; --i) {
      state = mix(state);
      std::swap(x[i], x[state % (i + 1)]);
    }
    if (best_split(x, min_segment).q >= observed - tolerance) ++at_least;
  }
  return static_cast<double>(at_least + 1) / static_cast<double>(permutations + 1);
}

double relative_change(double before, double after) {
  if (before == 0) return after == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), after);
  return after / before - 1;
}

ChangePoint describe(std::span<const double> values, std::size_t begin, std::size_t index, std::size_t end,
                     double p_value, double confidence) {
  ChangePoint c;
  c.index = index;
  c.before_begin = begin;
  c.after_end = end;
  const auto before = values.subspan(begin, index - begin), after = values.subspan(index, end - index);
  c.before_median = median_of(before);
  c.after_median = median_of(after);
  c.relative = relative_change(c.before_median, c.after_median);
  c.shift = hodges_lehmann(before, after, confidence);
  const double scale = std::abs(c.before_median);
  c.relative_lower = scale > 0 ? c.shift.lower / scale : std::numeric_limits<double>::quiet_NaN();
  c.relative_upper = scale > 0 ? c.shift.upper / scale : std::numeric_limits<double>::quiet_NaN();
  c.p_value = p_value;
  return c;
}

void check(std::span<const double> values, const ChangePointOptions& o) {
  detail::require_finite(values, kFunction, "values");
  detail::require_open_unit(o.alpha, kFunction, "alpha");
  detail::require_open_unit(o.confidence, kFunction, "confidence");
  if (o.min_segment < 3)
    throw std::invalid_argument(std::string(kFunction) +
                                ": min_segment must be at least 3 (one outlier must " +
                                "not make a segment), got " + std::to_string(o.min_segment));
  if (!(o.min_effect >= 0) || !std::isfinite(o.min_effect))
    throw std::invalid_argument(std::string(kFunction) + ": min_effect must be a finite number >= 0, got " +
                                std::to_string(o.min_effect));
}

}  // namespace

std::size_t permutation_count(const ChangePointOptions& options) {
  if (options.permutations > 0) return options.permutations;
  // 20 / alpha: the p-value's step is alpha / 20, so a p near alpha is not decided by one permutation.
  return static_cast<std::size_t>(std::ceil(20 / options.alpha)) - 1;
}

std::vector<ChangePoint> change_points(std::span<const double> values, const ChangePointOptions& options) {
  check(values, options);
  const std::size_t permutations = permutation_count(options);
  struct Accepted {
    std::size_t index;
    double p_value;
  };
  std::vector<Accepted> accepted;
  // Recursive bisection (an explicit stack): a segment is split at its strongest point when that split
  // is significant and moves the median by min_effect or more; each side is then searched again.
  std::vector<std::pair<std::size_t, std::size_t>> segments{{0, values.size()}};
  while (!segments.empty()) {
    const auto [begin, end] = segments.back();
    segments.pop_back();
    if (end - begin < 2 * options.min_segment) continue;
    const auto segment = values.subspan(begin, end - begin);
    const auto ranks = midranks(segment);
    const Split split = best_split(ranks, options.min_segment);
    if (!(split.q > 0)) continue;  // no split separates the ranks at all (e.g. a constant segment)
    const double effect =
        relative_change(median_of(segment.first(split.at)), median_of(segment.subspan(split.at)));
    if (!(std::abs(effect) >= options.min_effect)) continue;
    const double p = permutation_p(ranks, split.q, options.min_segment, permutations,
                                   mix(options.seed ^ mix(begin) ^ mix(end << 1)));
    if (p > options.alpha) continue;
    accepted.push_back({begin + split.at, p});
    segments.push_back({begin, begin + split.at});
    segments.push_back({begin + split.at, end});
  }
  std::sort(accepted.begin(), accepted.end(),
            [](const Accepted& a, const Accepted& b) { return a.index < b.index; });
  // Sizes are measured between the neighbouring change points. A change that falls below min_effect
  // there (two half-steps found one inside the other) is dropped, the smallest first, and the rest
  // remeasured.
  for (;;) {
    std::vector<ChangePoint> out;
    for (std::size_t i = 0; i < accepted.size(); ++i)
      out.push_back(describe(values, i == 0 ? 0 : accepted[i - 1].index, accepted[i].index,
                             i + 1 == accepted.size() ? values.size() : accepted[i + 1].index,
                             accepted[i].p_value, options.confidence));
    std::size_t weakest = out.size();
    for (std::size_t i = 0; i < out.size(); ++i)
      if (std::abs(out[i].relative) < options.min_effect &&
          (weakest == out.size() || std::abs(out[i].relative) < std::abs(out[weakest].relative)))
        weakest = i;
    if (weakest == out.size()) return out;
    accepted.erase(accepted.begin() + static_cast<std::ptrdiff_t>(weakest));
  }
}

}  // namespace schedlab::stats
