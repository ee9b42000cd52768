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
  // How long a lab step that staged its boot waits for the machine to go down (the fault test
  // shortens it with SCHEDLAB_DAEMON_REBOOT_WAIT_S).
  double reboot_wait_s = 600;
  // "session": steps in a session even where a cgroup v2 is writable (SCHEDLAB_DAEMON_ISOLATION, for
  // the tests of the fallback); anything else: a cgroup where one is writable.
  std::string isolation;
};

// Returns the exit code, which describes the run, not the process: 0 when a "once" run finished
// without failed steps (also when a restart finds it finished: a once campaign never runs twice from
// one campaign file) or SIGTERM stopped the daemon cleanly, 1 when the "once" run finished with failed
// steps. Throws InputError for a bad campaign file or when another daemon holds the campaign's lock;
// other exceptions are the daemon's own failure (the CLI exits kExitDaemonFailed, and the unit
// restarts it to resume).
int run_daemon(const DaemonOptions& options);

// The daemon failed (store, disk): EX_TEMPFAIL, "try again later". The unit restarts on it, and not
// on 1 (a finished run's failed steps) or 2 (bad input).
inline constexpr int kExitDaemonFailed = 75;

}  // namespace schedlab
