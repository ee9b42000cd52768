#pragma once
// Would a CPU-speed covariate earn its place (issue #19)? The pair's ln(b/a) set against the ln ratio of
// the probes taken next to its two trials (CUPED-style: d - θ·p). Recorded in every experiment, never
// used for the verdict: on this machine it did not help (experiment/README.md, "The CPU-speed probe").
#include <vector>

#include <nlohmann/json.hpp>

namespace schedlab {

// `d` and `p` pair by pair. θ is estimated on the first half and applied to the second (out of sample),
// so the reduction reported is one a rule fixed before the look would have had. The probe's own shift
// gets a 1-2α interval (TOST): a covariate is only fair where the probe is equivalent between the sides,
// since a kernel change can slow the probe too. Null below 8 pairs.
nlohmann::json covariate_json(const std::vector<double>& d, const std::vector<double>& p, double margin_pct,
                              double alpha);

}  // namespace schedlab
