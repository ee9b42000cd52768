#pragma once
// The daemon's Prometheus face (prometheus-cpp): its health, and the latest headline metrics as
// gauges schedlab_<workload>_<metric in base units>{host, configuration, workload, instance_id}, bounded to
// the newest few configurations per host. The metric catalogue and the reasons: daemon/exporter/README.md.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "daemon/campaign/campaign.hpp"

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

  void set_state(DaemonState state);
  void set_current_step(const std::string& step_key, int index, int total);  // "" when none
  void set_next_run(std::optional<std::chrono::system_clock::time_point> when);
  void count_started();
  void count_finished();
  void count_failed();
  void count_timed_out();

  // The bundle's headline metrics (MetricInfo::headline) become gauges labelled with `configuration`
  // (a label such as "6.12-eevdf" or "running:6.18.44"); base units (_seconds). Series of
  // configurations older than the newest `configurations_per_host` are removed.
  void publish(const Bundle& bundle, const std::string& configuration);

  // POSTs the bundle's headline metrics to the Pushgateway (job "schedlab", grouped by host and
  // configuration) when one is configured, with the configuration's other published series (a POST
  // replaces whole families in its group). Waits at most push_timeout_s. Returns an error text, empty on
  // success; never throws.
  std::string push(const Bundle& bundle, const std::string& configuration);

  // The exposer's bound port (useful with listen "127.0.0.1:0").
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedlab
