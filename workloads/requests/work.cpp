#include "workloads/requests/work.hpp"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace schedlab::requests {
namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

CpuLocks::CpuLocks() {
  const long n = ::sysconf(_SC_NPROCESSORS_CONF);
  count_ = static_cast<std::size_t>(n > 0 ? n : 1);
  locks_ = std::make_unique<Lock[]>(count_);
}

std::size_t CpuLocks::lock_this_cpu() {
  for (;;) {
    const int cpu = ::sched_getcpu();
    if (cpu < 0) throw SystemError("sched_getcpu", errno);
    auto& l = locks_[static_cast<std::size_t>(cpu) % count_];
    while (l.held.exchange(true, std::memory_order_acquire)) cpu_relax();
    // Holding the lock of a CPU we have left would serialise us with the wrong tasks.
    if (::sched_getcpu() == cpu) return static_cast<std::size_t>(cpu) % count_;
    l.held.store(false, std::memory_order_release);
  }
}

void CpuLocks::unlock(std::size_t cpu) {
  locks_[cpu].held.store(false, std::memory_order_release);
}

std::size_t matrix_side(long footprint_kb) {
  return static_cast<std::size_t>(std::sqrt(static_cast<double>(footprint_kb) * 1024.0 / 3.0 / 8.0));
}

RequestWork::RequestWork(long footprint_kb, long operations, CpuLocks* locks)
    : n_(matrix_side(footprint_kb)), operations_(operations), locks_(locks), data_(3 * n_ * n_) {
  for (std::size_t i = 0; i < data_.size(); ++i) data_[i] = i * 2654435761u + 1;
}

void RequestWork::multiply() {
  const std::size_t n = n_;
  const std::uint64_t* a = data_.data();
  const std::uint64_t* b = a + n * n;
  std::uint64_t* c = data_.data() + 2 * n * n;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::uint64_t sum = 0;
      for (std::size_t k = 0; k < n; ++k) sum += a[i * n + k] * b[k * n + j];
      c[i * n + j] = sum;
    }
}

bool RequestWork::run(std::int64_t give_up_ns) {
  if (operations_ == 0) return true;
  const std::size_t cpu = locks_ ? locks_->lock_this_cpu() : 0;
  bool finished = true;
  for (long op = 0; op < operations_; ++op) {
    if (op > 0 && monotonic_ns() > give_up_ns) {
      finished = false;
      break;
    }
    multiply();
  }
  if (locks_) locks_->unlock(cpu);
  return finished;
}

std::uint64_t RequestWork::checksum() const {
  std::uint64_t s = 0;
  const std::size_t nn = n_ * n_;
  for (std::size_t i = 2 * nn; i < 3 * nn; ++i) s ^= data_[i];
  return s;
}

}  // namespace schedlab::requests
