#include "daemon/database_wait.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

namespace schedlab {

bool DatabaseBackoff::wait(const std::string& doing, const std::exception& e) {
  const std::string text =
      fmt::format("database unavailable while {}: {}; retrying in {:g} s", doing, e.what(), delay_s_);
  if (!since_) {
    since_ = std::chrono::steady_clock::now();
    log_.warning(text);
    if (unavailable_) unavailable_(true);
  } else {
    log_.debug(text);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(delay_s_);
  while (!stopping_() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  delay_s_ = std::min(delay_s_ * 2, kMaxDelaySeconds);
  return !stopping_();
}

void DatabaseBackoff::answered(const std::string& what) {
  if (!since_) return;
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - *since_).count();
  log_.info(fmt::format("database is back after {:.0f} s: {}", waited, what));
  since_.reset();
  delay_s_ = 1;
  if (unavailable_) unavailable_(false);
}

}  // namespace schedlab
