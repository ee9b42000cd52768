#include "daemon/log.hpp"

#include <cstdio>
#include <cstdlib>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace schedlab {

Log::Log(LogLevel threshold) : threshold_(threshold), journal_(std::getenv("JOURNAL_STREAM") != nullptr) {}

void Log::write(LogLevel level, const std::string& message) const {
  if (static_cast<int>(level) > static_cast<int>(threshold_)) return;
  std::string line;
  if (journal_) {
    line = "<" + std::to_string(static_cast<int>(level)) + ">" + message + "\n";
  } else {
    const char* word = level == LogLevel::kError     ? "error"
                       : level == LogLevel::kWarning ? "warning"
                       : level == LogLevel::kInfo    ? "info"
                                                     : "debug";
    line = utc_timestamp() + " schedlab-daemon " + word + ": " + message + "\n";
  }
  // One write per line, so lines from the daemon's threads never interleave mid-line.
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

LogLevel parse_log_level(const std::string& text) {
  if (text == "error") return LogLevel::kError;
  if (text == "warning") return LogLevel::kWarning;
  if (text == "info") return LogLevel::kInfo;
  if (text == "debug") return LogLevel::kDebug;
  throw InputError("--log-level '" + text + "': expected error, warning, info or debug");
}

}  // namespace schedlab
