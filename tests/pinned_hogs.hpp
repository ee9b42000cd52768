#pragma once
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

namespace schedlab::testing {

// One busy loop pinned to each CPU the test may use, killed and reaped at scope exit. Pinned, since an
// unpinned hog is moved off a pinned workload's CPU by the load balancer and then slows nothing.
// `idle_policy`: SCHED_IDLE, which slows a yield loop (~9x here) without taking a whole slice from each
// yield as a hog of the loop's own weight does.
class PinnedHogs {
 public:
  explicit PinnedHogs(bool idle_policy = false) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    ::sched_getaffinity(0, sizeof allowed, &allowed);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed)) continue;
      const pid_t pid = ::fork();
      if (pid == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        ::sched_setaffinity(0, sizeof one, &one);
        if (idle_policy) {
          const sched_param idle{};
          ::sched_setscheduler(0, SCHED_IDLE, &idle);
        }
        volatile unsigned long x = 0;
        for (;;) x = x + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~PinnedHogs() {
    for (pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  PinnedHogs(const PinnedHogs&) = delete;
  PinnedHogs& operator=(const PinnedHogs&) = delete;
  std::size_t size() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

}  // namespace schedlab::testing
