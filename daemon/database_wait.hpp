#pragma once
// Waiting out a database that does not answer (a PostgreSQL store restarted, its network gone): doubling
// waits from 1 s to 30 s, the first failure logged at warning, the ones after at debug, and the recovery
// at info with how long it took. The campaign daemon and the queue daemon share it.
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>

#include "daemon/log.hpp"

namespace schedlab {

class DatabaseBackoff {
 public:
  static constexpr double kMaxDelaySeconds = 30;

  explicit DatabaseBackoff(const Log& log) : log_(log) {}
  // Logs the failure and waits; false when `stopping` turned true meanwhile.
  bool wait(const std::string& doing, const std::exception& e, const std::function<bool()>& stopping);
  // The database answered: logs the recovery (once per outage) and resets the delay.
  void answered(const std::string& what);
  bool waiting() const { return since_.has_value(); }

 private:
  const Log& log_;
  std::optional<std::chrono::steady_clock::time_point> since_;
  double delay_s_ = 1;
};

}  // namespace schedlab
