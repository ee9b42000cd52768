#include "stats/null_distribution.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>

namespace schedlab::stats::detail {

Ranks doubled_midranks(std::span<const double> values) {
  const std::size_t n = values.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  Ranks r;
  r.doubled.resize(n);
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    while (j < n && values[order[j]] == values[order[i]]) ++j;
    // Sorted positions i+1 .. j (1-based) share the midrank (i+1 + j) / 2.
    const auto doubled = static_cast<std::int64_t>(i + 1 + j);
    for (std::size_t k = i; k < j; ++k) r.doubled[order[k]] = doubled;
    const auto t = static_cast<double>(j - i);
    r.tie_term += t * t * t - t;
    i = j;
  }
  return r;
}

NullDistribution::NullDistribution(std::vector<double> counts) : cumulative_(std::move(counts)) {
  std::partial_sum(cumulative_.begin(), cumulative_.end(), cumulative_.begin());
}

double NullDistribution::at_most(std::int64_t doubled) const {
  if (doubled < 0 || cumulative_.empty()) return 0;
  const auto last = static_cast<std::int64_t>(cumulative_.size()) - 1;
  return cumulative_[static_cast<std::size_t>(std::min(doubled, last))] / cumulative_.back();
}

double NullDistribution::at_least(std::int64_t doubled) const {
  return 1 - at_most(doubled - 1);
}

double NullDistribution::two_sided(std::int64_t doubled) const {
  // at_least through the complement loses nothing: the counts are exact and only the last division rounds.
  return std::min(1.0, 2 * std::min(at_most(doubled), at_least(doubled)));
}

NullDistribution rank_sum_null(std::span<const std::int64_t> doubled_ranks, std::size_t m) {
  const std::size_t n = doubled_ranks.size();
  const std::int64_t total = std::accumulate(doubled_ranks.begin(), doubled_ranks.end(), std::int64_t{0});
  // Count the smaller of the subset and its complement: the sums mirror (S_m = total - S_{N-m}).
  const std::size_t k_max = std::min(m, n - m);
  std::vector<std::int64_t> largest(doubled_ranks.begin(), doubled_ranks.end());
  std::sort(largest.begin(), largest.end(), std::greater<>());
  const std::int64_t s_max =
      std::accumulate(largest.begin(), largest.begin() + static_cast<std::ptrdiff_t>(k_max), std::int64_t{0});
  const auto width = static_cast<std::size_t>(s_max) + 1;

  // ways[k * width + s]: k-subsets of the ranks seen so far with doubled sum s; [lo[k], hi[k]] bounds the
  // sums reached, so each step only walks the occupied part of a row.
  std::vector<double> ways((k_max + 1) * width, 0.0);
  std::vector<std::int64_t> lo(k_max + 1, std::numeric_limits<std::int64_t>::max()), hi(k_max + 1, -1);
  ways[0] = 1;
  lo[0] = hi[0] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t w = doubled_ranks[i];
    // Rows that can no longer grow to k_max with the n - 1 - i ranks left are never read again.
    const std::size_t remaining = n - 1 - i;
    const std::size_t k_low = k_max > remaining ? k_max - remaining : 1;
    for (std::size_t k = std::min(i + 1, k_max); k >= std::max<std::size_t>(k_low, 1); --k) {
      if (hi[k - 1] < 0) continue;
      const double* from = &ways[(k - 1) * width];
      double* to = &ways[k * width];
      for (std::int64_t s = lo[k - 1]; s <= hi[k - 1]; ++s)
        to[static_cast<std::size_t>(s + w)] += from[static_cast<std::size_t>(s)];
      lo[k] = std::min(lo[k], lo[k - 1] + w);
      hi[k] = std::max(hi[k], hi[k - 1] + w);
    }
  }

  // Re-index by 2U = 2 * rank sum - m(m+1), which runs over 0 .. 2 m (N - m).
  const auto mm = static_cast<std::int64_t>(m);
  const auto offset = mm * (mm + 1);
  std::vector<double> counts(static_cast<std::size_t>(2 * mm * static_cast<std::int64_t>(n - m)) + 1, 0.0);
  for (std::int64_t s = lo[k_max]; s <= hi[k_max]; ++s) {
    const std::int64_t sum_m = k_max == m ? s : total - s;
    counts[static_cast<std::size_t>(sum_m - offset)] += ways[k_max * width + static_cast<std::size_t>(s)];
  }
  return NullDistribution(std::move(counts));
}

NullDistribution signed_rank_null(std::span<const std::int64_t> doubled_ranks) {
  const std::int64_t total = std::accumulate(doubled_ranks.begin(), doubled_ranks.end(), std::int64_t{0});
  std::vector<double> ways(static_cast<std::size_t>(total) + 1, 0.0);
  ways[0] = 1;
  std::int64_t reached = 0;
  for (std::int64_t w : doubled_ranks) {
    for (std::int64_t s = reached; s >= 0; --s)
      ways[static_cast<std::size_t>(s + w)] += ways[static_cast<std::size_t>(s)];
    reached += w;
  }
  return NullDistribution(std::move(ways));
}

}  // namespace schedlab::stats::detail
