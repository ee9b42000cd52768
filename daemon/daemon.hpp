#pragma once
// `schedlab daemon --config FILE`: runs a campaign's plan step by step, recording each step's start
// and end in the store, so that a restart (after a crash, kill -9 or reboot) resumes at the first
// unfinished step: every result recorded once, a half-done step discarded (its attempt directory
// renamed *.discarded, kept) and rerun, and what the killed daemon left running killed first.
#include <filesystem>
#include <string>

#include "daemon/log.hpp"

namespace schedlab {

struct DaemonOptions {
  std::filesystem::path config;
  LogLevel log_level = LogLevel::kInfo;
  std::filesystem::path schedlab_binary = "/proc/self/exe";  // what runs each step
  // Test seam for the fault test: "store-write" (inside a step's store transaction, before its
  // commit), "between-steps" or "step-start" (a step begun in the store, its process not started); the
  // daemon logs "paused at POINT" and waits there to be killed. "publish-error" is a fault, not a pause:
  // publishing each recorded step's bundle fails as an exporter error would (the daemon must survive it).
  std::string pause_at;
};

// Returns the exit code: 0 when a "once" plan finished or SIGTERM stopped the daemon cleanly,
// 1 when steps failed in a "once" plan. Throws InputError for a bad campaign file.
int run_daemon(const DaemonOptions& options);

}  // namespace schedlab
