#pragma once
#include <csignal>

namespace schedlab {

// While alive, SIGINT and SIGTERM set a flag instead of killing schedlab, so that a run can
// kill its workload, write what it has and stop. Restores the previous handlers on exit.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  const volatile std::sig_atomic_t* flag() const;

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

}  // namespace schedlab
