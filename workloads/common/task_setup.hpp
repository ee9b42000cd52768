#pragma once
// What a workload thread does to itself before it starts measuring.
#include <string>
#include <vector>

namespace schedlab {

struct SchedPolicy {
  int policy = 0;  // SCHED_OTHER
  int priority = 0;
};

// "other", "batch", "idle", "fifo:PRIO" (1-99); throws InputError.
SchedPolicy parse_policy(const std::string& text);
std::vector<std::string> policy_choices();

// Each throws SystemError naming the call and the value.
void pin_current_thread(int cpu);  // cpu < 0: leave as is
void apply_policy_to_current_thread(const SchedPolicy& policy, int nice);
void name_current_thread(const std::string& comm);  // visible in traces and profiles

std::vector<int> current_affinity();
int current_tid();

}  // namespace schedlab
