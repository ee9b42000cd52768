#pragma once
// One sdet user: a process that runs its scripts one after another, each as `/bin/sh FILE` in the
// user's own directory, as a person at a terminal would.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace schedlab::sdet {

struct UserPlan {
  int user = 0;
  std::vector<std::string> names;            // the scripts, in this user's order
  std::vector<std::filesystem::path> files;  // the same, as files to give /bin/sh
  std::filesystem::path dir;                 // the working directory (empty, the user's own)
  std::filesystem::path err_file;            // each script's standard error, kept for a failure's message
  std::vector<std::string> env;              // the scripts' whole environment, KEY=VALUE
  std::int64_t deadline_ns = 0;              // CLOCK_MONOTONIC: no script starts after it
};

inline const char* const kShell = "/bin/sh";

// Runs the plan in the calling (single-threaded) process and returns a pack_report(): {"scripts",
// "start_ns", "end_ns"} and each script's time from the fork of its shell to its reaping. Throws
// Error naming the script, the user and how it ended when a script exits non-zero or is killed, and
// when the deadline passes first. Each shell gets PR_SET_PDEATHSIG: a user that is killed takes its
// current shell with it.
std::string run_user(const UserPlan& plan);

}  // namespace schedlab::sdet
