#pragma once
// Change points in a series of values (one per night or run, oldest first): E-Divisive means
// (Matteson & James 2014, as MongoDB and Apache Otava use it) on the ranks of the values, found by
// recursive bisection and tested by a seeded permutation test. Ranks, a minimum segment length and a
// minimum change of medians keep one spike night from being a change (stats/README.md).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "stats/rank_tests.hpp"

namespace schedlab::stats {

struct ChangePointOptions {
  double alpha = 0.05;           // a split is kept when its permutation p-value is <= alpha
  std::size_t min_segment = 3;   // values on each side of a split, at least 3
  double min_effect = 0.02;      // |after median / before median - 1| below this is not a change
  std::uint64_t seed = 1;        // the same seed and series give the same change points
  std::size_t permutations = 0;  // 0: sized from alpha (ceil(20 / alpha) - 1: 399 at 0.05)
  double confidence = 0.95;      // of the Hodges–Lehmann interval of each change's size
};

struct ChangePoint {
  std::size_t index = 0;  // first value after the change
  std::size_t before_begin = 0,
              after_end = 0;  // the segments compared: [before_begin, index), [index, after_end)
  double before_median = 0, after_median = 0;
  double relative = 0;  // after_median / before_median - 1
  ShiftEstimate shift;  // Hodges–Lehmann shift of after relative to before, in the values' units
  double relative_lower = 0, relative_upper = 0;  // shift.lower and shift.upper over before_median
  double p_value = 1;                             // of the permutation test that accepted the split
};

// The permutations used for `options` (resolution 1 / (permutations + 1) of the p-value).
std::size_t permutation_count(const ChangePointOptions& options);

// Change points of `values`, in index order. Throws std::invalid_argument naming the option or value at
// fault: NaN or infinite values, alpha outside (0, 1), min_segment < 3, min_effect < 0.
std::vector<ChangePoint> change_points(std::span<const double> values, const ChangePointOptions& options);

}  // namespace schedlab::stats
