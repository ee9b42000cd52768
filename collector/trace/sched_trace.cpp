#include "collector/trace/sched_trace.hpp"

#include <algorithm>
#include <set>

namespace schedlab {
namespace {

// prev_state's report bits (S D T t X Z P I) are the low byte; 0 is R, and 0x100 marks preemption.
bool still_runnable(std::int64_t state) {
  return (state & 0xff) == 0;
}

struct Live {
  std::uint64_t running_since = 0;
  std::uint64_t runnable_since = 0;
  bool woken = false;  // runnable because of a wakeup, not a preemption
};

}  // namespace

std::map<pid_t, TaskTrace> summarise_sched_events(const std::vector<SchedEvent>& events, pid_t root,
                                                  const std::map<pid_t, std::string>& comms) {
  std::set<pid_t> workload = {root};
  std::map<pid_t, TaskTrace> tasks;
  std::map<pid_t, Live> live;
  auto task = [&](pid_t pid) -> TaskTrace& {
    auto& t = tasks[pid];
    t.pid = pid;
    if (t.comm.empty())
      if (auto it = comms.find(pid); it != comms.end()) t.comm = it->second;
    return t;
  };
  const auto ns = [](std::uint64_t d) { return static_cast<double>(d) * 1e-9; };
  for (const auto& e : events) {
    switch (e.kind) {
      case SchedEvent::Kind::kFork:
        if (workload.count(e.pid)) workload.insert(e.other);
        break;
      case SchedEvent::Kind::kMigrate:
        if (workload.count(e.pid)) ++task(e.pid).migrations;
        break;
      case SchedEvent::Kind::kWakeup:
        if (workload.count(e.pid)) {
          auto& l = live[e.pid];
          if (l.running_since == 0 && l.runnable_since == 0) {
            l.runnable_since = e.time_ns;
            l.woken = true;
          }
        }
        break;
      case SchedEvent::Kind::kSwitch:
        if (workload.count(e.pid)) {
          auto& t = task(e.pid);
          auto& l = live[e.pid];
          ++t.switches;
          if (l.running_since) t.run_s += ns(e.time_ns - l.running_since);
          l.running_since = 0;
          if (still_runnable(e.state)) {
            ++t.preempted;
            l.runnable_since = e.time_ns;
            l.woken = false;
          }
        }
        if (workload.count(e.other)) {
          auto& t = task(e.other);
          auto& l = live[e.other];
          if (l.runnable_since) {
            const auto waited = ns(e.time_ns - l.runnable_since);
            t.wait_s += waited;
            if (l.woken) {
              ++t.wakeups;
              t.wakeup_latency_sum_s += waited;
              t.wakeup_latency_max_s = std::max(t.wakeup_latency_max_s, waited);
            }
          }
          l.runnable_since = 0;
          l.woken = false;
          l.running_since = e.time_ns;
        }
        break;
    }
  }
  return tasks;
}

nlohmann::json to_json(const std::map<pid_t, TaskTrace>& tasks) {
  nlohmann::json list = nlohmann::json::array();
  TaskTrace total;
  for (const auto& [pid, t] : tasks) {
    list.push_back({{"pid", pid},
                    {"comm", t.comm},
                    {"run_s", t.run_s},
                    {"wait_s", t.wait_s},
                    {"switches", t.switches},
                    {"preempted", t.preempted},
                    {"wakeups", t.wakeups},
                    {"wakeup_latency_mean_us",
                     t.wakeups ? t.wakeup_latency_sum_s / static_cast<double>(t.wakeups) * 1e6 : 0.0},
                    {"wakeup_latency_max_us", t.wakeup_latency_max_s * 1e6},
                    {"migrations", t.migrations}});
    total.run_s += t.run_s;
    total.wait_s += t.wait_s;
    total.switches += t.switches;
    total.preempted += t.preempted;
    total.wakeups += t.wakeups;
    total.wakeup_latency_sum_s += t.wakeup_latency_sum_s;
    total.wakeup_latency_max_s = std::max(total.wakeup_latency_max_s, t.wakeup_latency_max_s);
    total.migrations += t.migrations;
  }
  nlohmann::json totals = {
      {"tasks", tasks.size()},
      {"run_s", total.run_s},
      {"wait_s", total.wait_s},
      {"switches", total.switches},
      {"preempted", total.preempted},
      {"wakeups", total.wakeups},
      {"wakeup_latency_mean_us",
       total.wakeups ? total.wakeup_latency_sum_s / static_cast<double>(total.wakeups) * 1e6 : 0.0},
      {"wakeup_latency_max_us", total.wakeup_latency_max_s * 1e6},
      {"migrations", total.migrations}};
  return {{"tasks", list}, {"totals", totals}};
}

}  // namespace schedlab
