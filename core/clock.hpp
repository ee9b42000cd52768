#pragma once
#include <cstdint>
#include <string>

namespace schedlab {

std::string utc_timestamp();  // 2026-11-30T16:18:24.123Z, wall clock
double monotonic_seconds();   // CLOCK_MONOTONIC
std::int64_t monotonic_ns();  // CLOCK_MONOTONIC

}  // namespace schedlab
