#pragma once
// What differs between the sides besides the configuration under test, and whether they may be
// compared at all (same hardware).
#include <string>
#include <vector>

#include "diff/diff.hpp"

namespace schedlab {

std::vector<EnvironmentDifference> environment_differences(const std::vector<Side>& sides);

// Different hardware fingerprints: an InputError, or with `force` a warning that heads the output.
void check_hardware(const std::vector<Side>& sides, bool force, std::vector<std::string>& warnings);

}  // namespace schedlab
