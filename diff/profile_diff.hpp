#pragma once
// diffprofile, as in the 2.5/2.6-era scheduler reports: per kernel symbol, the change in samples
// from the baseline to another side, `total` first, then from the largest increase to the largest
// decrease. Counts come from the diagnostic repetitions' profiles, summed over trials, and the other
// side is scaled to the baseline's number of operations (per-second counts flip sign when
// throughput changes). A delta inside Poisson noise, |delta| < 2 sqrt(var), is marked hidden.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diff/samples.hpp"

namespace schedlab {

struct ProfileTotals {
  std::map<std::string, double> symbols;
  double samples = 0;
  double operations = 0;  // the workload's `operations`, or repetitions when it reports none
  std::string per;        // "operation" or "repetition"
  std::size_t repetitions = 0;
  std::string event;
  bool nmi = false;
  double lost_samples = 0;
};

// Sums the ok profiles of the side's diagnostic repetitions; repetitions == 0 when there are none.
ProfileTotals profile_totals(const InstanceSamples& side);

struct ProfileLine {
  std::string symbol;
  double base = 0;
  double other = 0;  // scaled to the baseline's operations
  double delta = 0;
  double pct = 0;  // of the baseline's count; 0.0 for a symbol the baseline lacks
  bool noise = false;
};

struct ProfileDiff {
  std::string side;
  std::string event;
  std::string per;
  double scale = 1;  // baseline operations / other operations
  std::size_t base_repetitions = 0, other_repetitions = 0;
  std::vector<ProfileLine> lines;  // total first, then by delta, largest increase first
  std::vector<std::string> warnings;
};

// nullopt-like: an empty `lines` when either side has no profile (with a warning saying why).
ProfileDiff diff_profiles(const std::string& side, const ProfileTotals& base, const ProfileTotals& other);

struct ProfileFormat {
  std::size_t lines = 0;  // head and tail lines each; 0: all
  bool all = false;       // show deltas within Poisson noise too
};
// The classic block: `total`, then `delta pct% symbol` lines (the head and tail with `...` between when
// limited), then how many were hidden as noise; format_diffprofile puts the warnings first.
std::string format_diffprofile_rows(const ProfileDiff& d, const ProfileFormat& f);
std::string format_diffprofile(const ProfileDiff& d, const ProfileFormat& f);
nlohmann::json to_json(const ProfileDiff& d);

}  // namespace schedlab
