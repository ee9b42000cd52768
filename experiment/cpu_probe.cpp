#include "experiment/cpu_probe.hpp"

#include <time.h>

namespace schedlab {
namespace {

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

CpuProbe run_cpu_probe(std::uint64_t steps) {
  // Each step needs the previous one's result (Knuth's MMIX LCG), so the time is the chain's latency,
  // not what out-of-order execution could overlap; the volatile sink keeps the compiler from folding it.
  static_assert(sizeof(std::uint64_t) == 8);
  std::uint64_t x = 0x9e3779b97f4a7c15ULL;
  const double start = now_s();
  for (std::uint64_t i = 0; i < steps; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  const double seconds = now_s() - start;
  volatile std::uint64_t sink = x;
  (void)sink;
  return {seconds * 1e9 / static_cast<double>(steps ? steps : 1), seconds};
}

}  // namespace schedlab
