#pragma once
// The scheduler primitives the micro workload measures, each a Google Benchmark function.
// One operation (one benchmark iteration) is named by `op` in the table below.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "workloads/common/task_setup.hpp"

namespace schedlab::micro {

// What a primitive's threads need; read-only while it runs.
struct PrimitiveConfig {
  int cpu0 = -1;  // the benchmark's own thread (-1: not pinned)
  int cpu1 = -1;  // the partner thread, the created thread, or the other CPU of a migration
  SchedPolicy policy;
  int nice = 0;
  std::int64_t sleep_ns = 100000;       // nanosleep's request
  std::int64_t timer_slack_ns = 50000;  // nanosleep's PR_SET_TIMERSLACK (real-time threads have none)
};

using PrimitiveFn = void (*)(benchmark::State&, const PrimitiveConfig&);

struct Primitive {
  const char* name;
  const char* op;       // what one iteration is
  bool needs_two_cpus;  // refuses an unpinned placement (a migration needs two CPUs)
  PrimitiveFn fn;
};

// The primitives, in listing order.
const std::vector<Primitive>& primitives();
const Primitive* find_primitive(std::string_view name);  // nullptr when unknown

}  // namespace schedlab::micro
