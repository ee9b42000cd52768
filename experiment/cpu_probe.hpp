#pragma once
// A short CPU-speed probe taken next to every trial of an experiment (issue #19's covariate): a
// dependent chain of integer multiply-adds, timed on the monotonic clock. It sees what slows a trial
// without being the trial: another tenant on the core, frequency, a noisy sibling thread.
#include <cstdint>

namespace schedlab {

struct CpuProbe {
  double ns_per_step = 0;
  double seconds = 0;  // its own cost, which the pair's machine time includes
};

// `steps` links of the chain (the default took 4.5 ms on this 2-vCPU EPYC guest).
CpuProbe run_cpu_probe(std::uint64_t steps = 4'000'000);

}  // namespace schedlab
