#pragma once
// Rank tests for the diff (DESIGN.md "Statistics"): Mann–Whitney U and Wilcoxon signed-rank with
// their Hodges–Lehmann estimators. Ties are handled exactly (midranks) in the exact range.
#include <cstddef>
#include <span>

namespace schedlab::stats {

struct TestResult {
  double statistic = 0;  // U of x for Mann–Whitney; V (sum of positive ranks) for Wilcoxon; tau for Kendall
  double p_value = 1;    // two-sided
  bool exact = false;    // false: normal approximation (tie and continuity corrected)
};

struct ShiftEstimate {
  double estimate = 0;  // Hodges–Lehmann: median of the pairwise differences (or Walsh averages)
  double lower = 0;     // interval bounds, same units as the data
  double upper = 0;
  double confidence = 0;  // the level the interval achieves (can exceed the requested one at small n)
};

// Largest n1 + n2 (or n for signed-rank) for which p-values and intervals are computed exactly.
// Exact means the permutation distribution of the midrank statistic, ties included, counted by dynamic
// programming (polynomial: 25 vs 25 takes about a millisecond). Beyond it: the normal approximation.
//
// Input errors throw std::invalid_argument naming the function and argument: NaN anywhere; an infinite
// value where values are subtracted (the Hodges–Lehmann functions); a confidence outside (0, 1).
inline constexpr std::size_t kExactRankLimit = 50;

// Two-sided Mann–Whitney U test of x against y. statistic = #(x_i > y_j) + 0.5 #(x_i == y_j).
// Empty side or all values tied: p = 1. Exact two-sided p = min(1, 2 min(P(U <= u), P(U >= u))), as R.
TestResult mann_whitney(std::span<const double> x, std::span<const double> y);

// The smallest two-sided p-value Mann–Whitney can reach with these sizes (2 / C(n1+n2, n1), at most 1).
double mann_whitney_min_p(std::size_t n1, std::size_t n2);

// Hodges–Lehmann shift of y relative to x (median of y_j - x_i) and its distribution-free interval
// (Moses), as R's wilcox.test(y, x, conf.int = TRUE) gives it. When the sizes cannot reach the
// requested confidence the interval is [min, max] of the differences and `confidence` says what it is.
// With ties the order statistics come from the exact distribution with the observed ties (the test's),
// each tail found on its own; `confidence` is then the null probability of the accepted range of U.
// An empty side: estimate and bounds NaN, confidence 0. Holds all n1 n2 differences in memory.
ShiftEstimate hodges_lehmann(std::span<const double> x, std::span<const double> y, double confidence);

// Two-sided Wilcoxon signed-rank test of paired differences d against 0; zeros are dropped.
TestResult wilcoxon_signed_rank(std::span<const double> d);

// The smallest two-sided p-value the signed-rank test can reach with n non-zero pairs (2 / 2^n, at most 1).
double wilcoxon_min_p(std::size_t n);

// Median of the Walsh averages of d and its interval (R's wilcox.test(d, conf.int = TRUE)). Unlike R, zero
// differences are kept here (a shift away from 0 moves them off zero; R drops them, which pulls the
// estimate of mostly identical pairs away from 0); without zeros the two agree. Ties: as hodges_lehmann,
// with the ties of |d|. Empty d: estimate and bounds NaN, confidence 0.
ShiftEstimate hodges_lehmann_paired(std::span<const double> d, double confidence);

}  // namespace schedlab::stats
