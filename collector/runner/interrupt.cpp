#include "collector/runner/interrupt.hpp"

namespace schedlab {
namespace {
// A signal handler can only reach static storage; this flag is the one such variable.
volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) {
  g_interrupted = 1;
}
}  // namespace

InterruptGuard::InterruptGuard(BrokenPipe broken_pipe) {
  g_interrupted = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll() returns EINTR
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  if (broken_pipe == BrokenPipe::kInterrupts) {
    // An ignored SIGPIPE cannot kill us (writes fail with EPIPE), and whoever ignored it meant it.
    sigaction(SIGPIPE, nullptr, &old_pipe_);
    if (old_pipe_.sa_handler != SIG_IGN) pipe_handled_ = sigaction(SIGPIPE, &sa, nullptr) == 0;
  }
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  if (pipe_handled_) sigaction(SIGPIPE, &old_pipe_, nullptr);
}

const volatile std::sig_atomic_t* InterruptGuard::flag() const {
  return &g_interrupted;
}

}  // namespace schedlab
