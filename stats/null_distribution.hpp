#pragma once
// Midranks and the exact permutation distributions of the rank statistics (internal to schedlab_stats).
// Ranks are kept doubled so that midranks of ties are integers and every count below is exact.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace schedlab::stats::detail {

struct Ranks {
  std::vector<std::int64_t> doubled;  // in input order; a tie over sorted positions i..j (1-based) gets i + j
  double tie_term = 0;                // sum over tie groups of t^3 - t, for the normal approximations
};

Ranks doubled_midranks(std::span<const double> values);  // values must not contain NaN

// The null distribution of a statistic T that takes values on the half-integer grid, held as counts of 2T.
// Counts are integers held in doubles: exact while the number of arrangements stays below 2^53, which
// kExactRankLimit (C(50, 25) ~ 1.3e14, 2^50 ~ 1.1e15) guarantees.
class NullDistribution {
 public:
  explicit NullDistribution(std::vector<double> counts);  // counts[k]: arrangements with 2T == k

  double at_most(std::int64_t doubled) const;   // P(2T <= doubled)
  double at_least(std::int64_t doubled) const;  // P(2T >= doubled)
  // Two-sided p-value of an observed 2T: min(1, 2 min(P(2T <= t), P(2T >= t))), as R computes it; the
  // distribution is asymmetric when ties are.
  double two_sided(std::int64_t doubled) const;

 private:
  std::vector<double> cumulative_;  // cumulative_[k] = arrangements with 2T <= k
};

// Mann–Whitney: U = (rank sum of a random m-subset) - m(m+1)/2, all C(N, m) subsets of the N ranks equally
// likely. Dynamic programming over the subsets' doubled rank sums: O(N min(m, N-m)^2 (N-m)) at worst.
NullDistribution rank_sum_null(std::span<const std::int64_t> doubled_ranks, std::size_t m);

// Signed rank: V = sum of the ranks that carry a + sign, all 2^n sign patterns equally likely.
NullDistribution signed_rank_null(std::span<const std::int64_t> doubled_ranks);

}  // namespace schedlab::stats::detail
