#pragma once
// Why a workload instance needs root. The runner stays root (counters on CPUs, cgroups, tunables, the
// schedstats sysctl and the profile are its work); the workload's own process drops to an unprivileged
// user when asked (`run --workload-user`, the daemon's default) unless its parameters need a privilege.
#include <string>

#include "workloads/params.hpp"

namespace schedlab {

// From the scheduling parameters every workload takes (any key `policy`/`*_policy`, `nice`/`*_nice`):
// a real-time policy or a negative nice needs CAP_SYS_NICE. "" when none does.
std::string root_needed_for_scheduling(const ParamValues& params);

}  // namespace schedlab
