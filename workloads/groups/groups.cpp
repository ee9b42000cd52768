#include "workloads/groups/groups.hpp"

#include <sys/resource.h>

#include <algorithm>

#include "core/error.hpp"
#include "workloads/groups/tasks.hpp"

namespace schedlab {
namespace {

using groups::Options;
using groups::TaskKind;
using groups::Transport;

constexpr std::int64_t kMaxMessageBytes = 1 << 20;
constexpr int kMaxTasks = 100000;
// Descriptors a process needs beyond the channels (stdio, the start pipes, the runner's, ...).
constexpr long kSpareDescriptors = 64;

Options options_from_params(const ParamValues& p) {
  return {p.at("groups").get<int>(),
          p.at("fds").get<int>(),
          p.at("loops").get<int>(),
          p.at("message_bytes").get<int>(),
          p.at("nice").get<int>(),
          p.at("transport").get<std::string>() == "pipe" ? Transport::kPipe : Transport::kSocket,
          p.at("tasks").get<std::string>() == "thread" ? TaskKind::kThread : TaskKind::kProcess,
          p.at("max_duration_s").get<double>(),
          parse_placement(p.at("placement").get<std::string>()),
          parse_policy(p.at("policy").get<std::string>())};
}

std::vector<int> task_cpus(const Options& o, const WorkloadContext& ctx) {
  if (o.placement == Placement::kSameThread)
    throw InputError("groups.placement: same-thread applies to tbench only");
  return assign_cpus(o.placement, o.task_count(), ctx.topology, ctx.allowed_cpus);
}

}  // namespace

std::string GroupsWorkload::summary() const {
  return "hackbench: G groups of F sender and F receiver tasks (processes or threads); each sender writes "
         "`loops` messages to every receiver of its group over AF_UNIX socketpairs or pipes";
}

std::string GroupsWorkload::experiment() const {
  return "hackbench (Rusty Russell, 2001; rt-tests' version): the scheduler's wakeup and load-balancing "
         "paths under many communicating tasks, the figure every CFS, EEVDF and sched_ext patch series "
         "quotes.";
}

std::vector<ParamSpec> GroupsWorkload::params() const {
  std::vector<ParamSpec> p;
  p.push_back({"groups", ParamKind::kInteger, 10, "", "groups (hackbench -g)", 1.0, 1000.0, {}});
  p.push_back({"fds",
               ParamKind::kInteger,
               20,
               "",
               "senders and receivers per group, one channel per receiver (hackbench -f)",
               1.0,
               1000.0,
               {}});
  p.push_back({"loops",
               ParamKind::kInteger,
               100,
               "",
               "messages each sender writes to each receiver of its group (hackbench -l)",
               1.0,
               1e8,
               {}});
  p.push_back({"message_bytes",
               ParamKind::kInteger,
               100,
               "bytes",
               "bytes of a message (hackbench -s)",
               1.0,
               static_cast<double>(kMaxMessageBytes),
               {}});
  p.push_back({"transport",
               ParamKind::kChoice,
               "socket",
               "",
               "AF_UNIX stream socketpairs (hackbench's default) or pipes (hackbench -p)",
               std::nullopt,
               std::nullopt,
               {"socket", "pipe"}});
  p.push_back({"tasks",
               ParamKind::kChoice,
               "process",
               "",
               "each sender and receiver a forked process (hackbench's default, -P) or a thread (-T)",
               std::nullopt,
               std::nullopt,
               {"process", "thread"}});
  p.push_back({"max_duration_s",
               ParamKind::kNumber,
               100.0,
               "s",
               "time limit: a run not finished by then is stopped (processes killed) and failed",
               0.1,
               86400.0,
               {}});
  p.push_back(
      placement_param("each task in hackbench's creation order: a group's receivers, then its senders"));
  p.push_back(policy_param("the senders and receivers"));
  p.push_back(nice_param("the senders and receivers"));
  return p;
}

std::vector<MetricDesc> GroupsWorkload::metrics() const {
  const auto higher = Direction::kHigherIsBetter, lower = Direction::kLowerIsBetter;
  return {
      {"elapsed_s", "s", lower, true,
       "from the start signal to the last task reaped (processes) or joined (threads): hackbench's Time"},
      {"ns_per_message", "ns", lower, true, "elapsed_s / messages"},
      {"messages", "count", higher, false,
       "messages read in full by the receivers: groups x fds x fds x loops when all went"},
      {"operations", "count", higher, false, "= messages (counters per operation divide by it)"},
      {"receive_s", "s", lower, false,
       "from the start signal to the last receiver's last message, without the tasks' exits"},
      {"voluntary_switches", "count", lower, false,
       "voluntary context switches of the senders and receivers over their lives (rusage)"},
      {"involuntary_switches", "count", lower, false,
       "involuntary context switches (preemptions) of the senders and receivers over their lives (rusage)"},
      {"context_switches_per_message", "count", lower, false,
       "(voluntary + involuntary switches) / messages"},
  };
}

std::map<std::string, std::map<std::string, std::string>> GroupsWorkload::quick_instances() const {
  return {{"groups", {{"groups", "4"}}},
          {"groups-threads-pipe", {{"groups", "4"}, {"tasks", "thread"}, {"transport", "pipe"}}}};
}

void GroupsWorkload::validate(const ParamValues& params, const WorkloadContext& ctx) const {
  const auto o = options_from_params(params);
  if (o.task_count() > kMaxTasks)
    throw InputError("groups.fds: " + std::to_string(o.groups) + " groups x " + std::to_string(o.fds) +
                     " fds are " + std::to_string(o.task_count()) + " tasks, more than " +
                     std::to_string(kMaxTasks));
  task_cpus(o, ctx);
  // Threads share one descriptor table holding every group's channels; a process-mode parent holds
  // one group's at a time (hackbench closes each group's after forking it).
  const long channels = o.tasks == TaskKind::kThread ? static_cast<long>(o.groups) * o.fds : o.fds;
  const long needed = 2 * channels + kSpareDescriptors;
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      static_cast<long>(nofile.rlim_cur) < needed)
    throw InputError("groups.fds: " + std::to_string(o.groups) + " groups x " + std::to_string(o.fds) +
                     " fds in " + (o.tasks == TaskKind::kThread ? "threads" : "processes") + " need " +
                     std::to_string(needed) + " descriptors per process, the limit is " +
                     std::to_string(nofile.rlim_cur) + " (ulimit -n)");
}

WorkloadResult GroupsWorkload::run(const ParamValues& params, const WorkloadContext& ctx) {
  const auto o = options_from_params(params);
  const auto cpus = task_cpus(o, ctx);
  const auto outcome = groups::run_in_helper(o, cpus);

  std::uint64_t messages = 0;
  std::int64_t last_receive_ns = outcome.start_ns;
  for (int k = 0; k < o.task_count(); ++k) {
    const auto& slot = outcome.slots[static_cast<std::size_t>(k)];
    if (groups::task_id(o, k).sender) continue;
    messages += slot.messages;
    last_receive_ns = std::max(last_receive_ns, slot.done_ns);
  }
  if (messages != o.expected_messages())
    throw Error("groups: the receivers read " + std::to_string(messages) + " messages, expected " +
                std::to_string(o.expected_messages()));
  const double elapsed_s = static_cast<double>(outcome.end_ns - outcome.start_ns) / 1e9;
  const auto msgs = static_cast<double>(messages);
  const auto switches = static_cast<double>(outcome.voluntary_switches + outcome.involuntary_switches);

  WorkloadResult result;
  auto& m = result.metrics;
  m["elapsed_s"] = {elapsed_s, "s"};
  m["ns_per_message"] = {elapsed_s * 1e9 / msgs, "ns"};
  m["messages"] = {msgs, "count"};
  m["operations"] = {msgs, "count"};
  m["receive_s"] = {static_cast<double>(last_receive_ns - outcome.start_ns) / 1e9, "s"};
  m["voluntary_switches"] = {static_cast<double>(outcome.voluntary_switches), "count"};
  m["involuntary_switches"] = {static_cast<double>(outcome.involuntary_switches), "count"};
  m["context_switches_per_message"] = {switches / msgs, "count"};
  auto& d = result.details;
  d["tasks"] = o.task_count();
  d["mode"] = o.tasks == TaskKind::kThread ? "thread" : "process";
  d["transport"] = o.transport == Transport::kPipe ? "pipe" : "socket";
  d["hackbench_equivalent"] = std::string("hackbench ") + (o.tasks == TaskKind::kThread ? "-T" : "-P") +
                              (o.transport == Transport::kPipe ? " -p" : "") + " -g " +
                              std::to_string(o.groups) + " -f " + std::to_string(o.fds) + " -l " +
                              std::to_string(o.loops) + " -s " + std::to_string(o.message_bytes);
  if (std::any_of(cpus.begin(), cpus.end(), [](int c) { return c >= 0; })) d["cpus"] = cpus;
  return result;
}

}  // namespace schedlab
