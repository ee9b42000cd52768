#pragma once
// The daemon's log on standard error: under systemd (JOURNAL_STREAM set) each line carries its
// syslog priority as "<N>" so journald files it at that level; elsewhere a UTC time and a level word.
#include <string>

namespace schedlab {

enum class LogLevel { kError = 3, kWarning = 4, kInfo = 6, kDebug = 7 };

class Log {
 public:
  explicit Log(LogLevel threshold = LogLevel::kInfo);
  void write(LogLevel level, const std::string& message) const;
  void error(const std::string& m) const { write(LogLevel::kError, m); }
  void warning(const std::string& m) const { write(LogLevel::kWarning, m); }
  void info(const std::string& m) const { write(LogLevel::kInfo, m); }
  void debug(const std::string& m) const { write(LogLevel::kDebug, m); }

 private:
  LogLevel threshold_;
  bool journal_;
};

LogLevel parse_log_level(const std::string& text);  // error | warning | info | debug

}  // namespace schedlab
