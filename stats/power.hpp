#pragma once
// Power of the diff's rank tests, for the minimum detectable effect it prints (DESIGN.md "Statistics").
// The asymptotic formula (z_{1-a/2} + z_power) sigma sqrt(pi/3) / sqrt(n) promises 0.80 where the exact
// small-sample tests reach 0.46-0.70 (issue #29.4): the exact tests' discreteness, the level lowered by
// Benjamini-Hochberg and the margin a verdict is read against all cost power. So the power here is
// simulated for the test actually run: the exact null distribution's critical values at the level the
// comparison must reach, on normal samples with the observed spread, with fixed random draws so that
// the answer is deterministic and monotone in the shift.
#include <cstddef>

namespace schedlab::stats {

struct PowerTarget {
  double level = 0.05;       // the raw two-sided p the test must fall below (BH's threshold for it)
  double confidence = 0.95;  // the interval that must clear the margin
  double margin = 0;         // the interval's bound must lie beyond it (same units as the data), >= 0
  double power = 0.8;
};

// Smallest shift of paired differences (sd `sd`, n non-zero pairs) that makes the signed-rank test
// reject in the shift's direction at `level` and puts the Hodges-Lehmann interval's near bound beyond
// `margin`, with probability `power`. Infinity when no shift can (n too small for the level).
// sd must be finite and >= 0, the probabilities in (0, 1), else std::invalid_argument.
double signed_rank_detectable_shift(std::size_t n, double sd, const PowerTarget& target);

// The same for Mann-Whitney on two independent samples (sizes n_x, n_y, spreads sd_x, sd_y): the
// smallest shift of y against x.
double rank_sum_detectable_shift(std::size_t n_x, double sd_x, std::size_t n_y, double sd_y,
                                 const PowerTarget& target);

}  // namespace schedlab::stats
