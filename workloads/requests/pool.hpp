#pragma once
// Message threads and their worker pools: the part of the requests workload that runs and measures.
#include <cstdint>
#include <vector>

#include "core/histogram.hpp"
#include "workloads/common/task_setup.hpp"

namespace schedlab::requests {

struct PoolConfig {
  int message_threads = 1;
  int workers = 1;  // per message thread
  double rate = 0;  // requests/s over all message threads; 0: closed loop
  double duration_s = 1;
  long operations = 0, footprint_kb = 1, sleep_us = 0, timer_slack_ns = 50000;
  bool cpu_lock = true;
  SchedPolicy policy;
  int nice = 0;
};

struct WorkerTally {
  LatencyHistogram wakeup;   // the waker's stamp to this worker running
  LatencyHistogram request;  // handed over (closed loop) or scheduled (fixed rate) to done
  std::uint64_t requests = 0;
  std::uint64_t unfinished = 0;  // queued or abandoned when the drain limit passed
  std::int64_t last_done_ns = 0;
  std::uint64_t checksum = 0;
};

struct GroupTally {
  std::vector<WorkerTally> workers;
  std::uint64_t handed_over = 0;
  std::uint64_t unsent = 0;  // fixed rate: due before the end, never handed over (all queues full)
};

struct PoolResult {
  std::vector<GroupTally> groups;
  std::int64_t start_ns = 0, end_ns = 0;
  std::size_t matrix_side = 0;
};

// How long past the end queued (fixed-rate) or running requests may still finish.
constexpr std::int64_t kDrainNs = 1'000'000'000;

// Runs the pools for the configured duration; every thread is joined when it returns. Throws the
// first error a thread met.
PoolResult run_pool(const PoolConfig& config);

}  // namespace schedlab::requests
