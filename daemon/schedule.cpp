#include "daemon/schedule.hpp"

#include <ctime>

#include <fmt/format.h>

#include "core/error.hpp"

namespace schedlab {

std::optional<TimePoint> latest_missed_elapse(const CalendarSpec& spec, TimePoint since, TimePoint now) {
  std::optional<TimePoint> latest;
  // Bounded: a minutely schedule missed for a year is half a million elapses; beyond that the
  // answer is still "run once now", so stop walking and take the last one seen.
  for (int i = 0; i < 1'000'000; ++i) {
    auto next = next_elapse(spec, latest.value_or(since));
    if (!next || *next > now) break;
    latest = next;
  }
  return latest;
}

TimePoint parse_utc_timestamp(const std::string& text) {
  std::tm tm{};
  int millis = 0;
  char zone = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &millis, &zone) != 8 ||
      zone != 'Z')
    throw Error("'" + text + "' is not a UTC timestamp such as 2026-11-30T16:18:24.123Z");
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return std::chrono::system_clock::from_time_t(::timegm(&tm)) + std::chrono::milliseconds(millis);
}

std::string format_utc_timestamp(TimePoint t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

}  // namespace schedlab
