// What the workload and the schedlab-grp-tasks helper say to each other: the options as arguments,
// the outcome as bytes (both sides are the same build, so the layout is shared).
#include <charconv>
#include <cstring>

#include "core/error.hpp"
#include "workloads/groups/tasks.hpp"

namespace schedlab::groups {
namespace {

struct OutcomeHeader {
  std::int64_t start_ns, end_ns;
  long voluntary_switches, involuntary_switches;
  std::uint64_t slots;
};

template <typename T>
T number(const std::string& text, const char* what) {
  T v{};
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size())
    throw Error(std::string("schedlab-grp-tasks: bad ") + what + " '" + text + "'");
  return v;
}

}  // namespace

std::vector<std::string> helper_arguments(const Options& o, const std::vector<int>& cpus, pid_t parent) {
  std::string cpu_list;
  for (const int c : cpus) cpu_list += (cpu_list.empty() ? "" : ",") + std::to_string(c);
  return {std::to_string(parent),
          std::to_string(o.groups),
          std::to_string(o.fds),
          std::to_string(o.loops),
          std::to_string(o.message_bytes),
          o.transport == Transport::kPipe ? "pipe" : "socket",
          std::to_string(static_cast<long long>(o.max_duration_s * 1e9)),
          std::to_string(o.policy.policy),
          std::to_string(o.policy.priority),
          std::to_string(o.nice),
          o.tasks == TaskKind::kThread ? "thread" : "process",
          cpu_list};
}

Options options_from_arguments(const std::vector<std::string>& a, std::vector<int>& cpus, pid_t& parent) {
  if (a.size() != 12)
    throw Error("schedlab-grp-tasks: expected 12 arguments, got " + std::to_string(a.size()));
  parent = number<pid_t>(a[0], "parent");
  Options o{};
  o.groups = number<int>(a[1], "groups");
  o.fds = number<int>(a[2], "fds");
  o.loops = number<int>(a[3], "loops");
  o.message_bytes = number<int>(a[4], "message_bytes");
  o.transport = a[5] == "pipe" ? Transport::kPipe : Transport::kSocket;
  o.max_duration_s = static_cast<double>(number<long long>(a[6], "time limit")) / 1e9;
  o.policy = {number<int>(a[7], "policy"), number<int>(a[8], "priority")};
  o.nice = number<int>(a[9], "nice");
  o.tasks = a[10] == "thread" ? TaskKind::kThread : TaskKind::kProcess;
  o.placement = Placement::kUnpinned;  // the CPUs come resolved
  cpus.clear();
  std::size_t pos = 0;
  while (pos <= a[11].size() && !a[11].empty()) {
    const auto comma = a[11].find(',', pos);
    const auto end = comma == std::string::npos ? a[11].size() : comma;
    cpus.push_back(number<int>(a[11].substr(pos, end - pos), "cpu"));
    pos = end + 1;
  }
  if (o.groups < 1 || o.fds < 1 || o.loops < 1 || o.message_bytes < 1 ||
      cpus.size() != static_cast<std::size_t>(o.task_count()))
    throw Error("schedlab-grp-tasks: inconsistent arguments");
  return o;
}

std::string encode_outcome(const RunOutcome& out) {
  const OutcomeHeader h{out.start_ns, out.end_ns, out.voluntary_switches, out.involuntary_switches,
                        out.slots.size()};
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof h);
  bytes.append(reinterpret_cast<const char*>(out.slots.data()), out.slots.size() * sizeof(TaskSlot));
  return bytes;
}

RunOutcome decode_outcome(const std::string& bytes, std::size_t slots) {
  OutcomeHeader h{};
  if (bytes.size() != sizeof h + slots * sizeof(TaskSlot))
    throw Error("schedlab-grp-tasks: a report of " + std::to_string(bytes.size()) + " bytes, expected " +
                std::to_string(sizeof h + slots * sizeof(TaskSlot)));
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.slots != slots) throw Error("schedlab-grp-tasks: a report of another run");
  RunOutcome out;
  out.start_ns = h.start_ns;
  out.end_ns = h.end_ns;
  out.voluntary_switches = h.voluntary_switches;
  out.involuntary_switches = h.involuntary_switches;
  out.slots.resize(slots);
  std::memcpy(out.slots.data(), bytes.data() + sizeof h, slots * sizeof(TaskSlot));
  return out;
}

}  // namespace schedlab::groups
