#include "cli/daemon_command.hpp"

#include <cstdlib>

#include "daemon/daemon.hpp"

namespace schedlab {

DaemonCommand::DaemonCommand(CLI::App& app) {
  command_ = app.add_subcommand("daemon",
                                "Run a campaign's plan on its schedule (or once), resuming after a restart; "
                                "serves Prometheus metrics");
  command_->add_option("--config", config_, "Campaign file (TOML)")->required();
  command_->add_option("--log-level", log_level_, "error | warning | info | debug")->default_val("info");
}

int DaemonCommand::run() const {
  DaemonOptions options;
  options.config = config_;
  options.log_level = parse_log_level(log_level_);
  // The fault test's seam: where the daemon stops and waits to be killed (see daemon.hpp).
  if (const char* pause = std::getenv("SCHEDLAB_DAEMON_PAUSE")) options.pause_at = pause;
  return run_daemon(options);
}

}  // namespace schedlab
