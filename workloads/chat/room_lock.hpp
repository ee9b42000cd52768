#pragma once
// The lock that guards a chat room's member list (and so serialises the broadcasts into its
// members' sockets): a futex-based mutex, or a spin lock that calls sched_yield() while it waits —
// what the JVM's locks did under VolanoMark, which made it sensitive to what yield means. CFS
// (2.6.23) made sched_yield() a near no-op for a task alone at the front, and VolanoMark lost 80%.
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/error.hpp"

namespace schedlab::chat {

enum class LockKind { kMutex, kYieldSpin };

inline LockKind parse_lock_kind(const std::string& text) {
  if (text == "mutex") return LockKind::kMutex;
  if (text == "yield-spin") return LockKind::kYieldSpin;
  throw InputError("chat.lock: '" + text + "' is not one of mutex, yield-spin");
}

class RoomLock {
 public:
  explicit RoomLock(LockKind kind) : kind_(kind) {}
  RoomLock(const RoomLock&) = delete;
  RoomLock& operator=(const RoomLock&) = delete;

  // `yields` counts the sched_yield() calls the caller made while it waited.
  void lock(std::uint64_t& yields) {
    if (kind_ == LockKind::kMutex) {
      mutex_.lock();
      return;
    }
    while (held_.exchange(true, std::memory_order_acquire)) {
      do {
        ::sched_yield();
        ++yields;
      } while (held_.load(std::memory_order_relaxed));
    }
  }
  void unlock() {
    if (kind_ == LockKind::kMutex)
      mutex_.unlock();
    else
      held_.store(false, std::memory_order_release);
  }

 private:
  LockKind kind_;
  std::mutex mutex_;
  std::atomic<bool> held_{false};
};

// Holds a RoomLock for a scope.
class RoomGuard {
 public:
  RoomGuard(RoomLock& lock, std::uint64_t& yields) : lock_(lock) { lock_.lock(yields); }
  ~RoomGuard() { lock_.unlock(); }
  RoomGuard(const RoomGuard&) = delete;
  RoomGuard& operator=(const RoomGuard&) = delete;

 private:
  RoomLock& lock_;
};

}  // namespace schedlab::chat
