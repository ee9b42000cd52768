#pragma once
// Scheduler tracepoint events of one repetition, summarised per task the way `perf sched timehist`
// users read them: time running, time runnable but waiting for a CPU, wakeup-to-run latency,
// switches (and how many were preemptions), migrations.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace schedlab {

struct SchedEvent {
  enum class Kind : std::uint8_t { kSwitch, kWakeup, kMigrate, kFork };
  std::uint64_t time_ns = 0;
  Kind kind = Kind::kSwitch;
  std::uint32_t cpu = 0;
  pid_t pid = 0;           // switch: prev; wakeup, migrate: the task; fork: the parent
  pid_t other = 0;         // switch: next; fork: the child
  std::int64_t state = 0;  // switch: prev_state
};

struct TaskTrace {
  pid_t pid = 0;
  std::string comm;
  double run_s = 0;
  double wait_s = 0;  // runnable (woken or preempted) until it ran
  std::uint64_t switches = 0;
  std::uint64_t preempted = 0;  // switched out while still runnable
  std::uint64_t wakeups = 0;    // woken and then ran within the trace
  double wakeup_latency_sum_s = 0;
  double wakeup_latency_max_s = 0;
  std::uint64_t migrations = 0;
};

// Tasks of the workload (`root` and everything it forked during the trace), by pid; events must be
// in time order. Intervals cut by the trace's start or end are not counted.
std::map<pid_t, TaskTrace> summarise_sched_events(const std::vector<SchedEvent>& events, pid_t root,
                                                  const std::map<pid_t, std::string>& comms);

nlohmann::json to_json(const std::map<pid_t, TaskTrace>& tasks);

}  // namespace schedlab
