#pragma once
// When a scheduled campaign runs, with systemd's Persistent=true rule: elapses missed while the
// daemon was down (or busy with an overrunning run) are made up by one run at once, never several,
// and a run never starts while another runs.
#include <chrono>
#include <optional>
#include <string>

#include "daemon/campaign/calendar.hpp"

namespace schedlab {

using TimePoint = std::chrono::system_clock::time_point;

// The latest elapse in (since, now], or nullopt when none fell in it.
std::optional<TimePoint> latest_missed_elapse(const CalendarSpec& spec, TimePoint since, TimePoint now);

// "2026-11-30T16:18:24.123Z" <-> time point (UTC, millisecond precision). Throws Error when malformed.
TimePoint parse_utc_timestamp(const std::string& text);
std::string format_utc_timestamp(TimePoint t);

}  // namespace schedlab
