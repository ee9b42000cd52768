#pragma once
// Waiting out a database that does not answer (a PostgreSQL store restarted, its network gone): doubling
// waits from 1 s to 30 s, the first failure logged at warning, the ones after at debug, and the recovery
// at info with how long it took, and each change said to the exporter (schedlab_daemon_store_unavailable).
// The campaign daemon and the queue daemon share it.
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "daemon/log.hpp"

namespace schedlab {

class DatabaseBackoff {
 public:
  static constexpr double kMaxDelaySeconds = 30;

  // `stopping` ends a wait early; `unavailable` (may be empty) is told when an outage begins (true) and
  // ends (false).
  DatabaseBackoff(const Log& log, std::function<bool()> stopping, std::function<void(bool)> unavailable)
      : log_(log), stopping_(std::move(stopping)), unavailable_(std::move(unavailable)) {}
  // Logs the failure and waits; false when the daemon is stopping.
  bool wait(const std::string& doing, const std::exception& e);
  // The database answered: after an outage, logs the recovery and resets the delay; otherwise nothing.
  void answered(const std::string& what);

 private:
  const Log& log_;
  std::function<bool()> stopping_;
  std::function<void(bool)> unavailable_;
  std::optional<std::chrono::steady_clock::time_point> since_;
  double delay_s_ = 1;
};

}  // namespace schedlab
