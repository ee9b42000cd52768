#include "cli/daemon_command.hpp"

#include <cstdlib>
#include <iostream>

#include "core/error.hpp"
#include "daemon/daemon.hpp"
#include "daemon/queue_worker.hpp"

namespace schedlab {

DaemonCommand::DaemonCommand(CLI::App& app) {
  command_ = app.add_subcommand("daemon",
                                "Run a campaign's plan on its schedule (or once), resuming after a restart; "
                                "serves Prometheus metrics");
  auto* config = command_->add_option("--config", config_, "Campaign file (TOML)");
  auto* queue = command_->add_option("--queue", queue_.url,
                                     "Serve the lab's work queue in this PostgreSQL database instead of one "
                                     "campaign (see `schedlab submit`)");
  config->excludes(queue);
  command_->add_option("--host", queue_.host,
                       "With --queue: this box's name in the queue (default: hostname)");
  command_->add_option("--host-label", queue_.host_label,
                       "With --queue: its host class's label (default: the class is its hardware shape)");
  command_->add_option("--output", output_,
                       "With --queue: where its bundles go (default: each submitted campaign's output)");
  command_->add_option("--lease", queue_.lease_s, "With --queue: seconds a claimed step's lease lasts")
      ->default_val(60);
  command_
      ->add_option("--reboot-lease", queue_.reboot_lease_s,
                   "With --queue: seconds a lab box's claim is held across the reboot its step staged")
      ->default_val(1800);
  command_->add_option("--poll", queue_.poll_s, "With --queue: seconds between looks at an empty queue")
      ->default_val(2);
  command_
      ->add_option("--listen", queue_.listen,
                   "With --queue: address of /metrics (\"\": none; 0.0.0.0 only when written so)")
      ->default_val("127.0.0.1:9464");
  command_->add_flag("--drain", queue_.drain,
                     "With --queue: exit once nothing this box could run is queued or claimed");
  command_->add_option("--log-level", log_level_, "error | warning | info | debug")->default_val("info");
  command_
      ->add_option("--isolation", isolation_,
                   "session: steps in a session of their own even where a cgroup v2 is writable (a daemon "
                   "started inside another's step, as a change point's kernel rerun is)")
      ->check(CLI::IsMember({"session", "cgroup"}));
}

int DaemonCommand::run() const {
  if (config_.empty() && queue_.url.empty())
    throw InputError("daemon: --config FILE or --queue URL is required");
  if (config_.empty()) return run_queue();
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

int DaemonCommand::run_queue() const {
  QueueWorkerOptions options = queue_;
  options.output = output_;
  if (const char* pause = std::getenv("SCHEDLAB_DAEMON_PAUSE")) options.pause_at = pause;
  if (const char* wait = std::getenv("SCHEDLAB_DAEMON_REBOOT_WAIT_S"))
    options.reboot_wait_s = std::atof(wait);
  options.log_level = parse_log_level(log_level_);
  if (const char* isolation = std::getenv("SCHEDLAB_DAEMON_ISOLATION")) options.isolation = isolation;
  if (!isolation_.empty()) options.isolation = isolation_;
  try {
    return run_queue_worker(options);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    std::cerr << "schedlab: " << e.what() << "\n";
    return kExitDaemonFailed;
  }
}

}  // namespace schedlab
