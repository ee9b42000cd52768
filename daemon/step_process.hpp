#pragma once
// A step's process (`schedlab run ...`, or `schedlab kernel boot ...` for a recipe) in a cgroup the
// daemon owns, so that everything it started can be killed, even after the daemon itself was killed:
// the cgroup's path is written to a marker file before the process starts, and the next daemon
// kills whatever the marker names before it reruns the step. Without a writable cgroup v2 the step
// runs in a session of its own ("session SID boot BOOT_ID" in the marker, written before the child
// may exec): every process it starts stays in that session, whatever process groups they make, and
// only a daemon in the same boot kills it.
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace schedlab {

struct StepExit {
  int exit_code = -1;  // -1 when ended by a signal
  int signal = 0;
  bool stopped = false;  // the daemon was asked to stop and ended it
  double seconds = 0;
};

class StepProcess {
 public:
  // `marker`: the file naming the cgroup (or session) of the step that runs.
  // `use_cgroup` false: a session even where a cgroup v2 is writable (the tests of the fallback).
  explicit StepProcess(std::filesystem::path marker, bool use_cgroup = true);

  // Kills what a previous daemon left running (the marker's cgroup, or its session when the marker
  // was written in this boot) and waits until it is gone (5 s at most). Returns the number of
  // processes killed.
  int kill_leftovers();

  // Runs argv with standard output and error to `log_file`, every signal disposition at its default
  // and no signal blocked; returns when it exits or, once `stop` is set, after SIGTERM (and SIGKILL to
  // everything it started after `grace_s`). What it leaves behind is killed before this returns.
  StepExit run(const std::vector<std::string>& argv, const std::filesystem::path& log_file,
               const std::function<bool()>& stop_requested, double grace_s);

  std::string isolation() const { return cgroup_.empty() ? "session" : "cgroup " + cgroup_.string(); }

 private:
  std::filesystem::path marker_;
  std::filesystem::path cgroup_;  // empty: no writable cgroup v2 here, process groups instead
};

}  // namespace schedlab
