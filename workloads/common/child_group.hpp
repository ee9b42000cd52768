#pragma once
// Child processes of a multi-process workload (tbench's server and clients, chat's server and
// clients), forked from the runner's repetition child so that they share its process group: the
// runner's time limit and cgroup.kill reach them. Each child sends one report back over a pipe;
// the parent waits for all of them under a deadline, and the first child that fails (non-zero
// exit, a signal, no report) ends the run with its name and the reason. Nothing is left behind:
// the destructor kills and reaps whatever is still running, and each child has PR_SET_PDEATHSIG.
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace schedlab {

struct ChildReport {
  std::string name;
  pid_t pid = -1;
  std::string report;  // what the child's body returned
  rusage usage{};      // of the child (all its threads), from wait4
};

class ChildGroup {
 public:
  ChildGroup() = default;
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;
  ~ChildGroup();

  // Forks a child that runs `body` and exits 0 after sending what it returned, or exits 1 after
  // sending the text of the exception it threw. Call before the parent starts any thread: the
  // child of a multi-threaded process may only call async-signal-safe functions.
  //
  // kOwn puts the child in a process group of its own, which whatever it starts inherits (sdet's users:
  // their shells and the shells' commands): killing the child then kills the group too, so a user that
  // died mid-script leaves no command of it running, which its shell's PR_SET_PDEATHSIG cannot reach.
  // The runner's process-group kill no longer reaches such a child directly; its PR_SET_PDEATHSIG and
  // the runner's cgroup do.
  enum class ProcessGroup { kShared, kOwn };
  void spawn(const std::string& name, const std::function<std::string()>& body,
             ProcessGroup group = ProcessGroup::kShared);

  // Waits until every child has exited; their reports in spawn order. Throws Error naming the
  // first child that failed (the others are then killed), or the ones still running at
  // `deadline_ns` (CLOCK_MONOTONIC).
  std::vector<ChildReport> wait_all(std::int64_t deadline_ns);

  // Throws Error (the others then killed) when a child has already ended, successfully or not:
  // for a parent that waits on its children's start-up, `when` says at what point ("before the
  // start").
  void throw_if_any_ended(const std::string& when);

  // SIGKILLs the children still running and reaps them.
  void kill_all();

 private:
  struct Child {
    ChildReport result;
    int report_fd = -1;
    int pidfd = -1;
    bool reaped = false;
    bool own_group = false;  // its pid is the id of a process group its descendants may outlive it in
    bool eof = false;
    int wait_status = 0;
  };
  void reap(Child& c, int options);
  static bool failed(const Child& c);  // exited non-zero or by a signal
  bool any_failed() const;
  void settle_after_failure();      // waits up to 0.5 s for the others to end
  std::string describe_failures();  // the cause first; kills the rest
  std::vector<Child> children_;
};

// A report that carries latency samples: a JSON line, then the samples in binary (a repetition
// can hold millions; as text they would cost more than the run's own work to write and read).
std::string pack_report(const nlohmann::json& summary, const std::vector<std::int64_t>& samples_ns);
// Throws Error naming `who` when the report is not one pack_report wrote.
void unpack_report(const std::string& report, const std::string& who, nlohmann::json& summary,
                   std::vector<std::int64_t>& samples_ns);

// How a child ended, as text: "exit status 1", "killed by signal 9 (SIGKILL)".
std::string describe_wait_status(int wait_status);

}  // namespace schedlab
