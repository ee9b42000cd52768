#pragma once
// `schedlab daemon --queue postgresql://...`: a box's daemon serving the lab's work queue
// (store/work_queue.hpp) instead of one campaign file. It claims the next step its host class may run,
// runs it as the campaign daemon runs a step (its own cgroup or session, leftovers killed, the campaign's
// workload user), renews its lease meanwhile, and ends the step with its bundle indexed in the shared
// store. When the database goes away the step's bundle stays on disk, and the daemon retries with backoff
// until it can record it, saying so in the journal.
#include <filesystem>
#include <string>

#include "daemon/log.hpp"

namespace schedlab {

struct QueueWorkerOptions {
  std::string url;               // the queue's (and store's) database
  std::string host;              // this box's name in the queue; "" : the hostname
  std::string host_label;        // its class's label ("" : the class is its shape)
  std::filesystem::path output;  // where its bundles go; "" : each campaign's own output
  double lease_s = 60;           // a claim lasts this long unless renewed (every lease_s / 3)
  double poll_s = 2;             // between looks at an empty queue
  bool drain = false;            // exit 0 once nothing it could run is queued or claimed
  LogLevel log_level = LogLevel::kInfo;
  std::filesystem::path schedlab_binary = "/proc/self/exe";
  std::string isolation;  // as DaemonOptions::isolation
  // /metrics (the campaign daemon's exporter: state, steps, headline gauges labelled with this box's host
  // and class, schedlab_daemon_store_unavailable); "" : none.
  std::string listen = "127.0.0.1:9464";
  // A lab box's step that staged its boot: the claim's lease during the reboot, and how long the daemon
  // waits for the machine to go down before it fails the step (SCHEDLAB_DAEMON_REBOOT_WAIT_S in tests).
  double reboot_lease_s = 1800;
  double reboot_wait_s = 600;
  std::string pause_at;  // test seam, as DaemonOptions::pause_at: "step-start"
};

// 0 when stopped by SIGTERM/SIGINT or drained; throws InputError for bad options, other errors are the
// daemon's own failure (exit 75, restarted by the unit).
int run_queue_worker(const QueueWorkerOptions& options);

}  // namespace schedlab
