#include "workloads/common/task_setup.hpp"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "core/error.hpp"

namespace schedlab {

std::vector<std::string> policy_choices() {
  return {"other", "batch", "idle", "fifo:PRIO"};
}

ParamSpec policy_param(const std::string& whom) {
  return {"policy",     ParamKind::kChoice, "other",         "", "scheduling policy of " + whom,
          std::nullopt, std::nullopt,       policy_choices()};
}

ParamSpec nice_param(const std::string& whom) {
  return {"nice", ParamKind::kInteger, 0, "", "nice value of " + whom, -20.0, 19.0, {}};
}

SchedPolicy parse_policy(const std::string& text) {
  if (text == "other") return {SCHED_OTHER, 0};
  if (text == "batch") return {SCHED_BATCH, 0};
  if (text == "idle") return {SCHED_IDLE, 0};
  if (text.rfind("fifo:", 0) == 0) {
    int prio = 0;
    const char* b = text.data() + 5;
    const char* e = text.data() + text.size();
    auto [p, ec] = std::from_chars(b, e, prio);
    if (ec == std::errc() && p == e && prio >= 1 && prio <= 99) return {SCHED_FIFO, prio};
    throw InputError("policy '" + text + "': fifo priority must be an integer from 1 to 99");
  }
  throw InputError("policy '" + text + "' is not one of other, batch, idle, fifo:PRIO");
}

int current_tid() {
  return static_cast<int>(::gettid());
}

void pin_current_thread(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(cpu), &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0)
    throw SystemError("sched_setaffinity(CPU " + std::to_string(cpu) + ")", errno);
}

void apply_policy_to_current_thread(const SchedPolicy& policy, int nice) {
  sched_param param{};
  param.sched_priority = policy.priority;
  if (::sched_setscheduler(0, policy.policy, &param) != 0)
    throw SystemError("sched_setscheduler(policy " + std::to_string(policy.policy) + ", priority " +
                          std::to_string(policy.priority) + ")",
                      errno);
  // On Linux setpriority(PRIO_PROCESS, tid) sets the nice value of one thread.
  if (policy.policy != SCHED_FIFO && ::setpriority(PRIO_PROCESS, static_cast<id_t>(current_tid()), nice) != 0)
    throw SystemError("setpriority(nice " + std::to_string(nice) + ")", errno);
}

void name_current_thread(const std::string& comm) {
  ::prctl(PR_SET_NAME, comm.substr(0, 15).c_str());
}

void setup_current_thread(const ThreadSetup& setup) {
  name_current_thread(setup.comm);
  pin_current_thread(setup.cpu);
  if (setup.policy) apply_policy_to_current_thread(*setup.policy, setup.nice);
}

std::vector<int> current_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(static_cast<unsigned>(c), &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace schedlab
