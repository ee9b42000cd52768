#include "cli/daemon_command.hpp"

#include <cstdlib>
#include <iostream>

#include "core/error.hpp"
#include "daemon/daemon.hpp"

namespace schedlab {

DaemonCommand::DaemonCommand(CLI::App& app) {
  command_ = app.add_subcommand("daemon",
                                "Run a campaign's plan on its schedule (or once), resuming after a restart; "
                                "serves Prometheus metrics");
  command_->add_option("--config", config_, "Campaign file (TOML)")->required();
  command_->add_option("--log-level", log_level_, "error | warning | info | debug")->default_val("info");
  command_
      ->add_option("--isolation", isolation_,
                   "session: steps in a session of their own even where a cgroup v2 is writable (a daemon "
                   "started inside another's step, as a change point's kernel rerun is)")
      ->check(CLI::IsMember({"session", "cgroup"}));
}

int DaemonCommand::run() const {
  DaemonOptions options;
  options.config = config_;
  options.log_level = parse_log_level(log_level_);
  // The fault test's seam: where the daemon stops and waits to be killed (see daemon.hpp).
  if (const char* pause = std::getenv("SCHEDLAB_DAEMON_PAUSE")) options.pause_at = pause;
  if (const char* wait = std::getenv("SCHEDLAB_DAEMON_REBOOT_WAIT_S"))
    options.reboot_wait_s = std::atof(wait);
  if (const char* isolation = std::getenv("SCHEDLAB_DAEMON_ISOLATION")) options.isolation = isolation;
  if (!isolation_.empty()) options.isolation = isolation_;
  try {
    return run_daemon(options);
  } catch (const InputError&) {
    throw;  // exit 2: a bad campaign file, or the campaign already run by another daemon
  } catch (const std::exception& e) {
    // The daemon itself failed (the store, the disk): not the run's outcome, which stays resumable.
    // Its own exit status lets the unit restart it on this and never on a finished run's 1.
    std::cerr << "schedlab: " << e.what() << "\n";
    return kExitDaemonFailed;
  }
}

}  // namespace schedlab
