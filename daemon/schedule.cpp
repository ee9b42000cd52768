#include "daemon/schedule.hpp"

#include <ctime>

#include <fmt/format.h>

#include "core/error.hpp"

namespace schedlab {

std::optional<TimePoint> latest_missed_elapse(const CalendarSpec& spec, TimePoint since, TimePoint now) {
  auto first = next_elapse(spec, since);
  if (!first || *first > now) return std::nullopt;
  // Not a walk from `since` (a minutely schedule missed for years is millions of elapses): windows
  // (now - w, now] doubling from one second find the latest elapse's neighbourhood. The first window
  // holding an elapse ends the search, so the walk within it covers only the elapses of (now - w,
  // now - w/2] plus those after: a handful for any real schedule.
  TimePoint from = *first;
  for (auto window = std::chrono::seconds(1); now - window > since; window *= 2) {
    if (auto e = next_elapse(spec, now - window); e && *e <= now) {
      from = *e;
      break;
    }
  }
  for (auto next = next_elapse(spec, from); next && *next <= now; next = next_elapse(spec, from))
    from = *next;
  return from;
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
