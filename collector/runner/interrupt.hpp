#pragma once
#include <csignal>

namespace schedlab {

// What a broken pipe (SIGPIPE: `schedlab run ... | head` after head exited) does while a guard is alive.
enum class BrokenPipe {
  kAsBefore,    // the disposition schedlab had (the daemon, whose exporter's sockets handle it themselves)
  kInterrupts,  // like SIGINT: the run stops and keeps what was measured, instead of dying with nothing
};

// While alive, SIGINT and SIGTERM (and SIGPIPE if asked) set a flag instead of killing schedlab, so that
// a run can kill its workload, write what it has and stop. Restores the previous handlers on exit.
class InterruptGuard {
 public:
  explicit InterruptGuard(BrokenPipe broken_pipe = BrokenPipe::kAsBefore);
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  const volatile std::sig_atomic_t* flag() const;

 private:
  bool pipe_handled_ = false;
  struct sigaction old_int_ {
  }, old_term_{}, old_pipe_{};
};

}  // namespace schedlab
