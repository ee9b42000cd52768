#pragma once
// Sequential analysis for experiments that stop when they can answer (issue #19): an always-valid
// confidence sequence for the mean of paired log ratios, the plan that picks its tuning and the number
// of pairs for a target effect, and the decision read from it at each look.
//
// The sequence is the two-sided asymptotic confidence sequence of Waudby-Smith, Arnold, Wu, Ramdas and
// Howard, "Time-uniform central limit theory and asymptotic confidence sequences" (Ann. Statist. 2024),
// Gaussian-mixture boundary with the variance estimated as the data arrive:
//
//     mean_t +- sqrt( 2 (t s_t^2 r + 1) / (t^2 r) * log( sqrt(t s_t^2 r + 1) / alpha ) )
//
// with s_t the running standard deviation and r (their rho^2) fixed before the first look. Its
// coverage holds at every t at once, so any number of looks, and stopping on what they show, keeps the
// chance that the sequence ever misses the true mean at alpha (asymptotically; tests/sequential_test.cpp
// checks it on real A/A trials, and that the naive rule does not).
#include <cstddef>
#include <span>
#include <string>

namespace schedlab::stats {

// Half-width of the sequence after t observations with running standard deviation sd, for tuning r > 0.
// t >= 1, sd >= 0 finite, alpha in (0, 1), else std::invalid_argument.
double sequence_half_width(double t, double sd, double r, double alpha);

// The tuning that makes the sequence narrowest at t_opt for data of standard deviation sd (r scales as
// 1 / sd^2): found numerically, since the closed forms are approximations. sd > 0.
double sequence_tuning(double t_opt, double sd, double alpha);

// Smallest true shift that the sequence excludes 0 for by t observations with probability `power`
// (normal approximation: half-width + z_power sd / sqrt(t)); it ignores earlier crossings, so it is
// slightly pessimistic.
double sequence_detectable_shift(double t, double sd, double r, double alpha, double power);

struct SequentialPlan {
  std::size_t pairs = 0;  // planned: the smallest n whose detectable shift is at most the target
  double tuning = 0;      // r, tuned for that n
  double detectable = 0;  // the detectable shift at the planned n (log units)
  bool reachable = true;  // false: even max_pairs does not reach the target; pairs = max_pairs
};

// The plan for a target shift (log units, > 0) given the spread of pair differences sd (> 0).
SequentialPlan plan_sequential(double sd, double target, double alpha, double power, std::size_t max_pairs);

enum class SequentialState {
  kContinue,    // nothing decided yet
  kIncrease,    // the whole interval above 0
  kDecrease,    // the whole interval below 0
  kEquivalent,  // the whole interval inside (-margin, +margin), 0 included
};
std::string to_string(SequentialState s);

struct SequentialLook {
  std::size_t n = 0;
  double mean = 0;  // of the differences (log units)
  double sd = 0;
  double lower = 0, upper = 0;  // the sequence at n
  SequentialState state = SequentialState::kContinue;
  bool within_margin = false;  // an increase or decrease whose interval stays inside +-margin
};

// The look after the differences d (n >= 2), against margins (log units) lower < 0 < upper.
SequentialLook look(std::span<const double> d, double r, double alpha, double margin_lower,
                    double margin_upper);

// The rule the sequence replaces, for tests and the bench: a fixed-n t interval at 1 - alpha read at
// every look, stopping the first time it excludes 0 (its false-alarm rate grows with the looks).
SequentialLook naive_look(std::span<const double> d, double alpha);

}  // namespace schedlab::stats
