#pragma once
// Running one external program (make, tar, gcc --version) from a workload: fork + execve in the
// caller's process group (the runner's time limit must reach it and everything it starts), wait4()
// for its rusage, which covers the program and every child it waited for.
#include <sys/resource.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "workloads/common/task_setup.hpp"

namespace schedlab::kernbench {

struct ProcessRequest {
  std::vector<std::string> argv;      // argv[0] is looked up in PATH
  bool capture_stdout = false;        // else stdout goes to /dev/null
  std::optional<SchedPolicy> policy;  // applied to the program (its children inherit it)
  int nice = 0;                       // applied with policy
};

struct ProcessResult {
  int wait_status = 0;
  rusage usage{};                   // of the program and all its waited-for descendants
  double elapsed_s = 0;             // fork to wait4 return, CLOCK_MONOTONIC
  std::string out, err;             // err is always captured (up to 1 MiB from its start)
  bool ok() const;                  // exited with status 0
  std::string status_text() const;  // "exit status 2", "killed by signal 9 (SIGKILL)"
};

// Throws SystemError when the program cannot be started (not found, exec failed, policy refused).
ProcessResult run_process(const ProcessRequest& request);

std::optional<std::filesystem::path> find_in_path(const std::string& program);

// What a failure message shows of a program's error output: its first `n` lines, followed by
// the first lines mentioning "error" when none of those did (make -j interleaves output).
std::string error_excerpt(const std::string& err, int n = 10);

// The first line of `PROGRAM --version`, or "unknown" when it cannot be run.
std::string program_version(const std::string& program);

}  // namespace schedlab::kernbench
