#pragma once
// systemd calendar expressions (systemd.time(7)): "*-*-* 02:00:00", "Mon..Fri 02:00", "daily",
// "hourly", "*:0/15" and the like, evaluated in local time with DST handled as systemd does.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace schedlab {

struct CalendarSpec {
  std::string text;  // as written
  // Parsed components live in the implementation's representation.
  struct Parsed;
  std::shared_ptr<const Parsed> parsed;
};

// Throws InputError naming the expression and what is wrong with it.
CalendarSpec parse_calendar(const std::string& text);

// The first elapse strictly after `after`, or nullopt when there is none (a date in the past).
std::optional<std::chrono::system_clock::time_point> next_elapse(const CalendarSpec& spec,
                                                                 std::chrono::system_clock::time_point after);

}  // namespace schedlab
