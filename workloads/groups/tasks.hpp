#pragma once
// The tasks of the groups workload, as hackbench has them: in each group F receivers, each reading
// from its own channel (a pipe or an AF_UNIX stream socketpair), and F senders, each writing `loops`
// rounds of one message to every receiver of its group. Every task announces itself on a ready pipe
// and waits in poll() for a byte on a wake pipe; the clock runs from that byte to the last task
// reaped (processes) or joined (threads). These pieces are shared by the process and thread drivers.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/common/placement.hpp"
#include "workloads/common/task_setup.hpp"
#include "workloads/params.hpp"

namespace schedlab::groups {

enum class Transport { kSocket, kPipe };
enum class TaskKind { kProcess, kThread };

// "0.3", "100": a time limit as the user gave it.
std::string seconds_text(double s);

struct Options {
  int groups, fds, loops, message_bytes, nice;
  Transport transport;
  TaskKind tasks;
  double max_duration_s;
  Placement placement;
  SchedPolicy policy;

  int task_count() const { return 2 * groups * fds; }
  std::uint64_t expected_messages() const {
    return static_cast<std::uint64_t>(groups) * static_cast<std::uint64_t>(fds) *
           static_cast<std::uint64_t>(fds) * static_cast<std::uint64_t>(loops);
  }
};

// Task k in hackbench's creation order: per group its F receivers, then its F senders.
struct TaskId {
  int group, index;
  bool sender;
  std::string describe() const;  // "group 2 receiver 5"
  const char* comm() const { return sender ? "schedlab-grpsnd" : "schedlab-grprcv"; }
};
TaskId task_id(const Options& o, int k);

// What a task leaves for the driver; in process mode it lives in memory shared with the parent.
struct TaskSlot {
  std::uint64_t messages;                         // receivers: messages read in full
  std::int64_t done_ns;                           // CLOCK_MONOTONIC when its loop ended
  long voluntary_switches, involuntary_switches;  // thread mode (process mode has wait4's)
  bool failed;
  char error[240];
  void fail(const char* what);
};

// One channel per receiver: read end for the receiver, write end shared by the group's senders.
struct Channel {
  int read = -1, write = -1;
};
// Creates a group's F channels; the caller owns (and closes) the descriptors.
std::vector<Channel> open_channels(Transport t, int count);
void close_channels(std::vector<Channel>& channels);

// The start barrier. `stop` (thread mode) is looked at when a call is interrupted by a signal:
// set, the task gives up with an Error; null, the call is retried.
struct Gate {
  int ready_write, wake_read;
  const std::atomic<bool>* stop;
};
void announce_and_wait(const TaskId& id, const Gate& g);

// The work itself (after the gate). Throw Error on a failed call or a stream that ended early.
void receive_all(const TaskId& id, int in_fd, const Options& o, const Gate& g, TaskSlot& slot);
void send_all(const TaskId& id, const std::vector<int>& out_fds, const Options& o, const Gate& g);

// Result of one run, from either driver.
struct RunOutcome {
  std::int64_t start_ns = 0, end_ns = 0;  // the go, and the last task reaped/joined
  std::vector<TaskSlot> slots;
  long voluntary_switches = 0, involuntary_switches = 0;
};
// In the calling process: the tasks are its forks (it must have no thread), or its threads.
RunOutcome run_in_processes(const Options& o, const std::vector<int>& cpus);
RunOutcome run_in_threads(const Options& o, const std::vector<int>& cpus);
// Either of the above in a small process of its own, the schedlab-grp-tasks helper (libc only), so
// that the tasks live in a process as small as hackbench's rather than in schedlab's: the cost of
// fork and exit grows with the address space, and schedlab's (about 250 mappings, 40 libraries) made
// hackbench -p take 0.42 s instead of 0.19 s when hackbench was given them by LD_PRELOAD.
RunOutcome run_in_helper(const Options& o, const std::vector<int>& cpus);
// The helper's protocol: its arguments, and its report on standard output.
std::vector<std::string> helper_arguments(const Options& o, const std::vector<int>& cpus, pid_t parent);
Options options_from_arguments(const std::vector<std::string>& args, std::vector<int>& cpus, pid_t& parent);
std::string encode_outcome(const RunOutcome& out);
RunOutcome decode_outcome(const std::string& bytes, std::size_t slots);

}  // namespace schedlab::groups
