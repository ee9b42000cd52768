#pragma once
// The fixed work of one request, as schbench's "think time": `operations` naive multiplications of
// two square matrices into a third, all three together filling the worker's cache footprint, done
// while holding a spin lock of the CPU the worker is on (so that a worker preempted inside its
// work makes the others queued on that CPU spin, which is what schbench's locking exposes).
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace schedlab::requests {

// One spin lock per possible CPU, each on its own cache line.
class CpuLocks {
 public:
  CpuLocks();
  // Takes the lock of the CPU the caller runs on, retrying when it migrated while spinning;
  // returns the index to pass to unlock().
  std::size_t lock_this_cpu();
  void unlock(std::size_t cpu);

 private:
  struct alignas(64) Lock {
    std::atomic<bool> held{false};
  };
  std::unique_ptr<Lock[]> locks_;
  std::size_t count_ = 0;
};

// The side of each of the three matrices that fit in `footprint_kb`.
std::size_t matrix_side(long footprint_kb);

class RequestWork {
 public:
  // Allocates and touches the matrices: call it on the worker's own thread, before measuring.
  RequestWork(long footprint_kb, long operations, CpuLocks* locks);
  // Runs the work; false when `give_up_ns` (CLOCK_MONOTONIC) passed between two operations.
  bool run(std::int64_t give_up_ns);
  std::uint64_t checksum() const;  // keeps the products observable

 private:
  void multiply();
  std::size_t n_;
  long operations_;
  CpuLocks* locks_;  // nullptr: no locking
  std::vector<std::uint64_t> data_;
};

}  // namespace schedlab::requests
