#include "stats/multiple.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>

#include "stats/distributions.hpp"
#include "stats/input.hpp"

namespace schedlab::stats {

std::vector<double> benjamini_hochberg(std::span<const double> p) {
  for (double v : p)
    if (!(v >= 0 && v <= 1))
      throw std::invalid_argument("benjamini_hochberg: p-value outside [0, 1] (or NaN): " +
                                  std::to_string(v));
  const std::size_t n = p.size();
  std::vector<std::size_t> order(n);  // largest p first
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
  std::vector<double> adjusted(n);
  double running_min = 1;
  for (std::size_t k = 0; k < n; ++k) {  // the k-th largest has rank n - k
    const double scaled = static_cast<double>(n) / static_cast<double>(n - k) * p[order[k]];
    running_min = std::min(running_min, scaled);
    adjusted[order[k]] = running_min;
  }
  return adjusted;
}

double fisher_exact(long a, long b, long c, long d) {
  if (a < 0 || b < 0 || c < 0 || d < 0) throw std::invalid_argument("fisher_exact: a count is negative");
  // With the margins fixed, the top-left cell is hypergeometric: P(k) ~ C(col1, k) C(n - col1, row1 - k).
  const long row1 = a + b, col1 = a + c, n = a + b + c + d;
  const long lo = std::max(0L, row1 + col1 - n), hi = std::min(row1, col1);
  // Log weights from the ratio P(k+1)/P(k), relative to P(lo); no lgamma (it writes the global signgam).
  std::vector<double> log_w(static_cast<std::size_t>(hi - lo + 1), 0.0);
  for (long k = lo; k < hi; ++k) {
    const double ratio = static_cast<double>(col1 - k) * static_cast<double>(row1 - k) /
                         (static_cast<double>(k + 1) * static_cast<double>(n - col1 - row1 + k + 1));
    log_w[static_cast<std::size_t>(k - lo + 1)] = log_w[static_cast<std::size_t>(k - lo)] + std::log(ratio);
  }
  const double top = *std::max_element(log_w.begin(), log_w.end());
  double total = 0;
  for (double& w : log_w) total += (w = std::exp(w - top));
  // R's fisher.test: the tables no more probable than the observed one, with a relative tolerance of 1e-7.
  const double observed = log_w[static_cast<std::size_t>(a - lo)] * (1 + 1e-7);
  double p = 0;
  for (double w : log_w)
    if (w <= observed) p += w;
  return std::min(1.0, p / total);
}

TestResult mann_kendall(std::span<const double> values_in_order) {
  const auto& v = values_in_order;
  detail::require_no_nan(v, "mann_kendall", "values");
  TestResult r;
  const std::size_t n = v.size();
  if (n < 2) return r;

  std::int64_t s = 0;  // concordant minus discordant pairs against the order
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) s += (v[j] > v[i]) - (v[j] < v[i]);
  std::map<double, std::int64_t> tie_sizes;
  for (double x : v) ++tie_sizes[x];
  double tied_pairs = 0, variance_ties = 0;
  for (const auto& [value, count] : tie_sizes) {
    const auto t = static_cast<double>(count);
    tied_pairs += t * (t - 1) / 2;
    variance_ties += t * (t - 1) * (2 * t + 5);
  }
  const auto nn = static_cast<double>(n);
  const double pairs = nn * (nn - 1) / 2;
  const double denominator = std::sqrt(pairs * (pairs - tied_pairs));  // tau-b; the order has no ties
  r.statistic = denominator > 0 ? static_cast<double>(s) / denominator : 0;
  if (n < 3) return r;

  if (tied_pairs == 0 && n <= 10) {
    // S = pairs - 2 * inversions; inversions of a random permutation follow the Mahonian numbers.
    r.exact = true;
    const auto max_inv = static_cast<std::size_t>(pairs);
    std::vector<double> ways(max_inv + 1, 0.0);
    ways[0] = 1;
    for (std::size_t m = 2; m <= n; ++m) {  // inserting the m-th element adds 0 .. m-1 inversions
      std::vector<double> next(max_inv + 1, 0.0);
      for (std::size_t k = 0; k <= max_inv; ++k)
        for (std::size_t add = 0; add < m && k + add <= max_inv; ++add) next[k + add] += ways[k];
      ways.swap(next);
    }
    // P(S >= |s|) = P(inversions <= (pairs - |s|) / 2); S is symmetric about 0.
    const auto cut = static_cast<std::size_t>((static_cast<std::int64_t>(max_inv) - std::llabs(s)) / 2);
    const double total = std::accumulate(ways.begin(), ways.end(), 0.0);
    const double tail =
        std::accumulate(ways.begin(), ways.begin() + static_cast<std::ptrdiff_t>(cut) + 1, 0.0);
    r.p_value = std::min(1.0, 2 * tail / total);
    return r;
  }
  const double variance = (nn * (nn - 1) * (2 * nn + 5) - variance_ties) / 18;
  if (!(variance > 0) || s == 0) return r;
  // Continuity corrected, as Mann–Kendall is usually stated (Kendall 1975; R's Kendall::MannKendall).
  const double z = (static_cast<double>(std::llabs(s)) - 1) / std::sqrt(variance);
  r.p_value = std::min(1.0, 2 * detail::normal_sf(z));
  return r;
}

}  // namespace schedlab::stats
