#pragma once
// The loop each fairness task runs: spin on the monotonic clock until told to stop, and keep the
// intervals between two consecutive reads that were long enough to mean the task was off the CPU.
#include <atomic>
#include <cstdint>
#include <limits>

#include "core/histogram.hpp"

namespace schedlab::fairness {

// A read-to-read interval at least this long counts as time kept off the CPU: an iteration of the loop
// takes tens of ns and an interrupt a few us, while a scheduler switch away from a CPU-bound task
// lasts at least a tick or a slice (ms).
inline constexpr std::int64_t kOffCpuNs = 20'000;

// The measuring window, set by the thread that samples the tasks' CPU clocks: intervals outside it
// are ignored, those across its edges are clipped to it.
struct Window {
  std::atomic<std::int64_t> start_ns{std::numeric_limits<std::int64_t>::max()};
  std::atomic<std::int64_t> end_ns{std::numeric_limits<std::int64_t>::max()};
  std::atomic<bool> stop{false};
};

struct SpinStats {
  LatencyHistogram off_cpu;      // the off-CPU intervals inside the window
  std::int64_t longest_ns = 0;   // the longest of them (exact)
  std::uint64_t iterations = 0;  // clock reads over the whole run
};

void spin_until_stopped(const Window& window, SpinStats& stats);

}  // namespace schedlab::fairness
