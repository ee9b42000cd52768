#pragma once
// Tests on counts and sets of p-values: Benjamini–Hochberg, Fisher's exact test, and a trend test.
#include <span>
#include <vector>

#include "stats/rank_tests.hpp"

namespace schedlab::stats {

// Benjamini–Hochberg adjusted p-values in the input's order (R's p.adjust(p, "BH")). A p-value that is NaN
// or outside [0, 1] throws std::invalid_argument.
std::vector<double> benjamini_hochberg(std::span<const double> p);

// Two-sided Fisher's exact test of the 2x2 table [[a, b], [c, d]] (R's fisher.test: sums the tables
// no more probable than the observed one, with R's relative tolerance 1e-7). Negative counts throw.
double fisher_exact(long a, long b, long c, long d);

// Mann–Kendall trend test of values against their order: statistic = Kendall's tau-b, p two-sided from
// the normal approximation with tie correction (exact for n <= 10 without ties). n < 3: p = 1.
// The approximation is continuity corrected, Z = (|S| - 1) / sqrt(Var S), as Mann–Kendall is usually
// stated (scipy's kendalltau omits the correction). NaN throws std::invalid_argument.
TestResult mann_kendall(std::span<const double> values_in_order);

}  // namespace schedlab::stats
