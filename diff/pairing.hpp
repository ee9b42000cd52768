#pragma once
// Which trials of two sides form the pairs of the paired test, decided per workload instance: a
// campaign writes one bundle per step (A_x A_y B_x B_y ...), so the sides' bundles never alternate
// even when each instance's trials do (issue #29.1, #29.2).
#include <cstddef>
#include <utility>
#include <vector>

#include "diff/samples.hpp"

namespace schedlab {

struct TrialPairing {
  std::vector<std::pair<std::size_t, std::size_t>>
      pairs;                                // (base slot, other slot) in InstanceSamples::trials
  std::vector<std::size_t> unmatched_base;  // slots with no partner
  std::vector<std::size_t> unmatched_other;
  bool by_trial_index = false;  // matched on the bundles' trial index, else on adjacency in time
  bool interleaved = false;     // the pairs ran next to each other: the paired test applies
};

// Pairs match on the bundles' trial index when each side's trials carry distinct indices that the
// two sides share (a campaign's trial t of A with trial t of B); otherwise (steps written as separate
// runs, all trial 0; sides cut from one run) on adjacency: walking both sides' trials in start order,
// two neighbours from different sides are a pair, in either order (AB or BA). The design is
// interleaved when there are >= 2 pairs, every pair is adjacent in time, and at most one trial in five
// is left without a partner (a lost trial leaves its partner alone; a blocked design leaves nearly all).
TrialPairing pair_trials(const InstanceSamples& base, const InstanceSamples& other);

}  // namespace schedlab
