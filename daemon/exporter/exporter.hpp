#pragma once
// The daemon's Prometheus face (prometheus-cpp): its health, and the latest headline metrics as
// gauges schedlab_<workload>_<metric in base units>{host, configuration, workload, instance_id}, bounded to
// the newest few configurations per host. The metric catalogue and the reasons: daemon/exporter/README.md.
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "daemon/campaign/campaign.hpp"
#include "daemon/exporter/change_points.hpp"

namespace schedlab {

enum class DaemonState { kStarting, kIdle, kRunning, kBooting, kStopping };

class Exporter {
 public:
  // Binds settings.listen (refuses 0.0.0.0 / [::] unless written so in the settings: that is the
  // config saying so). Throws Error when the address does not bind.
  explicit Exporter(const ExporterSettings& settings);
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  void set_state(DaemonState state);  // atomic for a scrape: exactly one state is ever at 1
  void set_current_step(const std::string& step_key, int index, int total);  // "" when none
  void set_plan_steps(int total);  // the plan's size, from start-up (before any step)
  void set_next_run(std::optional<std::chrono::system_clock::time_point> when);
  // schedlab_daemon_disk_full{path}: the paths the daemon writes (its output directory, its store's
  // file), each 0 from start-up; set_disk_full(PATH) puts PATH at 1 (added when not among them) and the
  // others at 0 while the daemon waits for space there; "" puts them all back at 0.
  void set_disk_paths(const std::vector<std::string>& paths);
  void set_disk_full(const std::string& path);
  // schedlab_daemon_store_unavailable: 1 while the store's database does not answer (the daemon retries).
  void set_store_unavailable(bool unavailable);
  void count_started();
  // A step ended with its bundle recorded: finished, timed_out when a repetition timed out, and its
  // timed repetitions by status in schedlab_steps_repetitions_total.
  void count_step_recorded(const Bundle& bundle);
  // A step ended failed (no result recorded): finished and failed.
  void count_step_failed();

  // The campaign's instance ids: series of any other instance (one removed from the campaign) go
  // from every configuration, and later bundles' series of such instances are not published.
  void set_instances(const std::set<std::string>& instance_ids);

  // The bundle's headline metrics (MetricInfo::headline) become gauges labelled with `configuration`
  // (a label such as "6.12-eevdf" or "running:6.18.44"); base units (_seconds). Series of
  // configurations older than the newest `configurations_per_host` are removed. Throws Error after
  // publishing what it could; the caller logs it and counts it with count_publish_error().
  void publish(const Bundle& bundle, const std::string& configuration);
  void count_publish_error();  // schedlab_exporter_errors_total{operation="publish"}

  // Replaces every change-point series with these (the daemon's current list, newest last): the newest
  // kExportedChangesMax only, atomic for a scrape; a change the list no longer holds loses its series.
  // Not pushed to a Pushgateway (they are not a configuration's). A change whose `at` is not ISO 8601 UTC
  // is left out; after setting the others, throws Error naming it (log it, count_publish_error()).
  void set_change_points(const std::vector<ExportedChange>& changes);

  // PUTs the configuration's whole group to the Pushgateway (job "schedlab", grouped by host and
  // configuration) when one is configured: every series this exporter holds for it (the bundle's
  // own when it was not published), so the group holds no family or instance /metrics no longer has;
  // and DELETEs the groups of configurations evicted since. Waits at most push_timeout_s per request.
  // Returns an error text, empty on success (an error is counted, operation="push"); never throws.
  std::string push(const Bundle& bundle, const std::string& configuration);

  // The exposer's bound port (useful with listen "127.0.0.1:0").
  int port() const;

 private:
  std::string push_group(const Bundle& bundle, const std::string& configuration);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedlab
