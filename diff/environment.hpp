#pragma once
// What differs between the sides besides the configuration under test, and whether they may be
// compared at all (same hardware).
#include <span>
#include <string>
#include <vector>

#include "diff/diff.hpp"

namespace schedlab {

struct EnvironmentField {
  const char* name;      // as shown
  const char* pointer;   // JSON pointer into environment_head()
  const char* category;  // "configuration": what the diff is about; "environment": what should not differ;
                         // "method": how the timed repetitions were measured, which must not differ
};

// The bundle fields that change what a scheduler measurement means; the diff lists those that differ,
// the HTML report shows them all.
std::span<const EnvironmentField> environment_fields();

// The parts of a bundle the fields point into (not the repetitions: those are large).
nlohmann::json environment_head(const Bundle& b);

std::vector<EnvironmentDifference> environment_differences(const std::vector<Side>& sides);

// Different hardware fingerprints: an InputError, or with `force` a warning that heads the output.
void check_hardware(const std::vector<Side>& sides, bool force, std::vector<std::string>& warnings);

// What a side's bundles say the kernel did during their trials: tainted (a WARN, an Oops it survived),
// a clocksource switch, a pinned clocksource not in use. One warning per kind, naming the trials.
std::vector<std::string> trial_kernel_warnings(const Side& side);

// Warnings for setup differences that move timings without being the configuration under test: the
// root filesystem and the clocksource differing between sides (listed, never refused: the clocksource
// can be the kernel's own choice, and older bundles do not record the root), plus each side's
// trial_kernel_warnings.
void check_setup(const std::vector<Side>& sides, const std::vector<EnvironmentDifference>& differences,
                 std::vector<std::string>& warnings);

// A difference of category "method" (counters, their scope, isolation, profile or trace on timed
// repetitions): an InputError, or with `force` a warning that heads the output.
void check_method(const std::vector<EnvironmentDifference>& differences, bool force,
                  std::vector<std::string>& warnings);

}  // namespace schedlab
