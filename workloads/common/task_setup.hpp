#pragma once
// What a workload thread does to itself before it starts measuring.
#include <string>
#include <vector>

#include "workloads/params.hpp"

namespace schedlab {

struct SchedPolicy {
  int policy = 0;  // SCHED_OTHER
  int priority = 0;
};

// "other", "batch", "idle", "fifo:PRIO" (1-99); throws InputError.
SchedPolicy parse_policy(const std::string& text);
std::vector<std::string> policy_choices();

// The `policy` and `nice` parameters every workload takes; `whom` says which tasks they apply to.
ParamSpec policy_param(const std::string& whom);
ParamSpec nice_param(const std::string& whom);

// Each throws SystemError naming the call and the value.
void pin_current_thread(int cpu);  // cpu < 0: leave as is
void apply_policy_to_current_thread(const SchedPolicy& policy, int nice);
void name_current_thread(const std::string& comm);  // visible in traces and profiles

// What every workload thread does first: its name, its CPU (-1: any), and, when given, its
// policy and nice value. Throws SystemError.
struct ThreadSetup {
  std::string comm;
  int cpu = -1;
  const SchedPolicy* policy = nullptr;  // nullptr: leave as inherited
  int nice = 0;
};
void setup_current_thread(const ThreadSetup& setup);

std::vector<int> current_affinity();
int current_tid();

}  // namespace schedlab
