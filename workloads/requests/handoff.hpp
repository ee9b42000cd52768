#pragma once
// How a request is handed to a worker: a futex word per task that sleeps, posted and waited on as
// schbench does (a post only issues FUTEX_WAKE when it flips the word from blocked to running, so a
// worker that has not gone to sleep yet costs no system call), plus the wake stamp the waker leaves.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace schedlab::requests {

class Wakeable {
 public:
  static constexpr int kBlocked = 0;
  static constexpr int kRunning = 1;

  // Called by the task before it announces that it will sleep: a post after this point stamps the
  // wake and is not lost.
  void arm() {
    wake_ns_.store(0);
    word_.store(kBlocked);
  }

  // Wakes the task if it is (or is about to be) asleep. Only the first post since arm() stamps:
  // a later one would make the wakeup look shorter than it was.
  void post(std::int64_t now_ns) {
    std::int64_t unstamped = 0;
    if (now_ns != 0) wake_ns_.compare_exchange_strong(unstamped, now_ns);
    int blocked = kBlocked;
    if (word_.compare_exchange_strong(blocked, kRunning)) {
      if (::syscall(SYS_futex, word_address(), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0) < 0)
        throw SystemError("futex(FUTEX_WAKE)", errno);
    }
  }

  // Sleeps until posted; false when `timeout_ns` passed first. The timeout is only a backstop
  // against a lost wakeup at shutdown: it never ends a measured wait.
  bool wait(std::int64_t timeout_ns) {
    const timespec rel{static_cast<time_t>(timeout_ns / 1000000000LL),
                       static_cast<long>(timeout_ns % 1000000000LL)};
    for (;;) {
      int running = kRunning;
      if (word_.compare_exchange_strong(running, kBlocked)) return true;
      if (::syscall(SYS_futex, word_address(), FUTEX_WAIT_PRIVATE, kBlocked, &rel, nullptr, 0) < 0) {
        if (errno == ETIMEDOUT) return false;
        if (errno != EAGAIN && errno != EINTR) throw SystemError("futex(FUTEX_WAIT)", errno);
      }
    }
  }

  // The waker's clock when it posted (0: no stamped post since arm()).
  std::int64_t wake_ns() const { return wake_ns_.load(); }

 private:
  int* word_address() { return reinterpret_cast<int*>(&word_); }

  static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);
  std::atomic<int> word_{kBlocked};
  std::atomic<std::int64_t> wake_ns_{0};
};

// A single-producer single-consumer ring of request stamps (fixed-rate mode: the message thread
// pushes the scheduled times, one worker pops them).
template <std::size_t N>
class StampRing {
  static_assert((N & (N - 1)) == 0, "a power of two");

 public:
  bool push(std::int64_t v) {
    const auto t = tail_.load(std::memory_order_relaxed);
    if (t - head_.load(std::memory_order_acquire) == N) return false;
    slots_[t % N] = v;
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }
  bool pop(std::int64_t& v) {
    const auto h = head_.load(std::memory_order_relaxed);
    if (h == tail_.load(std::memory_order_acquire)) return false;
    v = slots_[h % N];
    head_.store(h + 1, std::memory_order_release);
    return true;
  }
  std::size_t size() const { return tail_.load() - head_.load(); }

 private:
  std::int64_t slots_[N] = {};
  alignas(64) std::atomic<std::size_t> head_{0};
  alignas(64) std::atomic<std::size_t> tail_{0};
};

}  // namespace schedlab::requests
