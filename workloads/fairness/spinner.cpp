#include "workloads/fairness/spinner.hpp"

#include <algorithm>

#include "core/clock.hpp"

namespace schedlab::fairness {

void spin_until_stopped(const Window& window, SpinStats& stats) {
  std::uint64_t iterations = 0;
  std::int64_t prev = monotonic_ns();
  while (!window.stop.load(std::memory_order_relaxed)) {
    const std::int64_t now = monotonic_ns();
    ++iterations;
    // The window is only looked at for the rare long interval, so the loop stays a clock read.
    if (now - prev >= kOffCpuNs) {
      const std::int64_t lo = std::max(prev, window.start_ns.load(std::memory_order_acquire));
      const std::int64_t hi = std::min(now, window.end_ns.load(std::memory_order_acquire));
      if (hi - lo >= kOffCpuNs) {
        stats.off_cpu.add(hi - lo);
        stats.longest_ns = std::max(stats.longest_ns, hi - lo);
      }
    }
    prev = now;
  }
  stats.iterations = iterations;
}

}  // namespace schedlab::fairness
