// Process mode: every task is a child of the schedlab-grp-tasks helper, which has no thread,
// the way hackbench forks them (a group's receivers, then its senders, the parent closing each
// group's descriptors once its children hold them). The parent waits for their exits on a signalfd
// so that the time limit and a failed task end the wait; whatever is still running then is killed
// and reaped, and each child has PR_SET_PDEATHSIG in case the parent itself is killed.
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/pipe.hpp"
#include "workloads/common/child_group.hpp"
#include "workloads/groups/tasks.hpp"

namespace schedlab::groups {
namespace {

constexpr std::int64_t kSettleNs = 500000000;  // after a failure, time for its consequences to show

// The tasks' slots in anonymous shared memory: written by the children, read by the parent once it
// has reaped them.
class SharedSlots {
 public:
  explicit SharedSlots(std::size_t n) : bytes_(std::max<std::size_t>(n, 1) * sizeof(TaskSlot)) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw SystemError("mmap (task slots)", errno);
    slots_ = static_cast<TaskSlot*>(p);  // zero-filled: every slot starts empty
  }
  SharedSlots(const SharedSlots&) = delete;
  SharedSlots& operator=(const SharedSlots&) = delete;
  ~SharedSlots() { ::munmap(slots_, bytes_); }
  TaskSlot& operator[](std::size_t i) { return slots_[i]; }

 private:
  std::size_t bytes_;
  TaskSlot* slots_;
};

// SIGCHLD blocked and read from a signalfd for the run, with its default disposition (an inherited
// SIG_IGN would have the kernel reap the children before wait4 sees them); all restored after.
class ChildSignals {
 public:
  ChildSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGCHLD);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    if (::sigaction(SIGCHLD, &dfl, &old_action_) != 0) throw SystemError("sigaction(SIGCHLD)", errno);
    if (::sigprocmask(SIG_BLOCK, &set_, &old_mask_) != 0) {
      const int err = errno;
      ::sigaction(SIGCHLD, &old_action_, nullptr);
      throw SystemError("sigprocmask", err);
    }
    fd_ = ::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd_ < 0) {
      const int err = errno;
      restore();
      throw SystemError("signalfd(SIGCHLD)", err);
    }
  }
  ChildSignals(const ChildSignals&) = delete;
  ChildSignals& operator=(const ChildSignals&) = delete;
  ~ChildSignals() {
    ::close(fd_);
    restore();
  }
  int fd() const { return fd_; }
  const sigset_t& old_mask() const { return old_mask_; }
  void drain() const {
    signalfd_siginfo info[16];
    while (::read(fd_, info, sizeof info) > 0) {
    }
  }

 private:
  void restore() {
    ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    ::sigaction(SIGCHLD, &old_action_, nullptr);
  }
  sigset_t set_{}, old_mask_{};
  struct sigaction old_action_ {};
  int fd_ = -1;
};

struct Ended {
  int task;
  int status;
};

// The forked tasks; the destructor kills and reaps whatever is still running.
class Children {
 public:
  explicit Children(std::size_t n) : pids_(n, -1), reaped_(n, false) {}
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  ~Children() { kill_all(); }

  void add(int task, pid_t pid) {
    pids_[static_cast<std::size_t>(task)] = pid;
    task_of_[pid] = task;
    ++running_;
  }
  int running() const { return running_; }

  // Reaps every child that has ended, adding its rusage to the totals.
  std::vector<Ended> reap_ended(RunOutcome& out) {
    std::vector<Ended> ended;
    for (;;) {
      int status = 0;
      rusage ru{};
      // The helper has no children but these.
      const pid_t pid = ::wait4(-1, &status, WNOHANG, &ru);
      if (pid < 0 && errno == EINTR) continue;
      if (pid <= 0) break;
      const auto it = task_of_.find(pid);
      if (it == task_of_.end()) continue;
      reaped_[static_cast<std::size_t>(it->second)] = true;
      --running_;
      out.voluntary_switches += ru.ru_nvcsw;
      out.involuntary_switches += ru.ru_nivcsw;
      ended.push_back({it->second, status});
    }
    return ended;
  }

  int first_running() const {
    for (std::size_t i = 0; i < pids_.size(); ++i)
      if (pids_[i] > 0 && !reaped_[i]) return static_cast<int>(i);
    return -1;
  }

  void kill_all() {
    for (std::size_t i = 0; i < pids_.size(); ++i)
      if (pids_[i] > 0 && !reaped_[i]) ::kill(pids_[i], SIGKILL);
    for (std::size_t i = 0; i < pids_.size(); ++i) {
      if (pids_[i] <= 0 || reaped_[i]) continue;
      int status;
      while (::waitpid(pids_[i], &status, 0) < 0 && errno == EINTR) {
      }
      reaped_[i] = true;
      --running_;
    }
  }

  pid_t pid(int task) const { return pids_[static_cast<std::size_t>(task)]; }

 private:
  std::vector<pid_t> pids_;
  std::vector<bool> reaped_;
  std::unordered_map<pid_t, int> task_of_;
  int running_ = 0;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The failures, the cause first: a task killed by a signal (it cannot have been a consequence of
// another's failure: senders ignore SIGPIPE), else the first one reaped.
std::string describe_failures(const Options& o, const Children& children, std::vector<Ended> failures,
                              SharedSlots& slots) {
  std::stable_partition(failures.begin(), failures.end(),
                        [](const Ended& e) { return WIFSIGNALED(e.status); });
  std::string what;
  for (std::size_t i = 0; i < failures.size() && i < 3; ++i) {
    const auto& e = failures[i];
    what += (i == 0 ? "" : "; then ") + task_id(o, e.task).describe() + " (pid " +
            std::to_string(children.pid(e.task)) + ") " + describe_wait_status(e.status);
    const auto& slot = slots[static_cast<std::size_t>(e.task)];
    if (WIFEXITED(e.status) && slot.failed) what += ": " + std::string(slot.error);
  }
  if (failures.size() > 3) what += "; and " + std::to_string(failures.size() - 3) + " more tasks failed";
  return what;
}

bool failed(const Ended& e) {
  return !(WIFEXITED(e.status) && WEXITSTATUS(e.status) == 0);
}

}  // namespace

RunOutcome run_in_processes(const Options& o, const std::vector<int>& cpus) {
  const int n = o.task_count();
  SharedSlots slots(static_cast<std::size_t>(n));
  Pipe ready, wake;
  const std::int64_t deadline_ns = monotonic_ns() + static_cast<std::int64_t>(o.max_duration_s * 1e9);
  ChildSignals signals;
  Children children(static_cast<std::size_t>(n));
  const pid_t parent = ::getpid();

  // Forks task k; `body` runs in the child with the channels it does not use already closed.
  auto fork_task = [&](int k, std::vector<Channel>& channels, const auto& body) {
    const pid_t pid = ::fork();
    if (pid < 0) throw SystemError("fork (" + task_id(o, k).describe() + ")", errno);
    if (pid > 0) {
      children.add(k, pid);
      return;
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
    ::sigprocmask(SIG_SETMASK, &signals.old_mask(), nullptr);
    // A write to a receiver that is gone fails with EPIPE and says so, rather than killing the
    // sender with a signal that would pass for the cause of the failure.
    ::signal(SIGPIPE, SIG_IGN);
    ::close(signals.fd());
    ::close(ready.read);
    ::close(wake.write);
    const TaskId id = task_id(o, k);
    TaskSlot& slot = slots[static_cast<std::size_t>(k)];
    int code = 0;
    try {
      setup_current_thread({id.comm(), cpus[static_cast<std::size_t>(k)], &o.policy, o.nice});
      body(id, slot, channels);
    } catch (const std::exception& e) {
      slot.fail(e.what());
      code = 1;
    }
    ::_exit(code);
  };

  const Gate gate{ready.write, wake.read, nullptr};
  for (int g = 0; g < o.groups; ++g) {
    auto channels = open_channels(o.transport, o.fds);
    struct Closer {
      std::vector<Channel>& c;
      ~Closer() { close_channels(c); }
    } closer{channels};
    const int base = g * 2 * o.fds;
    for (int i = 0; i < o.fds; ++i)
      fork_task(base + i, channels, [&, i](const TaskId& id, TaskSlot& slot, std::vector<Channel>& ch) {
        for (int j = 0; j < o.fds; ++j) {
          close_fd(ch[static_cast<std::size_t>(j)].write);
          if (j != i) close_fd(ch[static_cast<std::size_t>(j)].read);
        }
        receive_all(id, ch[static_cast<std::size_t>(i)].read, o, gate, slot);
      });
    for (auto& c : channels) close_fd(c.read);  // the receivers have theirs
    for (int i = 0; i < o.fds; ++i)
      fork_task(base + o.fds + i, channels, [&](const TaskId& id, TaskSlot&, std::vector<Channel>& ch) {
        std::vector<int> out;
        for (const auto& c : ch) out.push_back(c.write);
        send_all(id, out, o, gate);
      });
  }

  RunOutcome out;
  std::vector<Ended> failures;
  auto note = [&](std::vector<Ended> ended) {
    for (const auto& e : ended)
      if (failed(e)) failures.push_back(e);
  };

  // The start barrier: one byte from every task. A task that ends before it has failed.
  int announced = 0;
  while (announced < n) {
    const std::int64_t left_ns = deadline_ns - monotonic_ns();
    if (left_ns <= 0) {
      children.kill_all();
      throw Error("groups: only " + std::to_string(announced) + " of " + std::to_string(n) +
                  " tasks were ready by the time limit (max_duration_s)");
    }
    pollfd p[2] = {{ready.read, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(left_ns / 1000000 + 1)) < 0 && errno != EINTR)
      throw SystemError("poll (start)", errno);
    if (p[0].revents & POLLIN) {
      char buf[4096];
      const ssize_t got =
          ::read(ready.read, buf, std::min<std::size_t>(sizeof buf, static_cast<std::size_t>(n - announced)));
      if (got < 0 && errno != EINTR) throw SystemError("read (ready)", errno);
      if (got > 0) announced += static_cast<int>(got);
    }
    if (p[1].revents & POLLIN) {
      signals.drain();
      auto ended = children.reap_ended(out);
      if (!ended.empty()) {
        note(ended);
        if (failures.empty()) failures = ended;  // an exit 0 before the start is a failure too
        ::usleep(static_cast<useconds_t>(kSettleNs / 1000));
        note(children.reap_ended(out));
        children.kill_all();
        throw Error("before the start: " + describe_failures(o, children, failures, slots));
      }
    }
  }

  out.start_ns = monotonic_ns();
  if (::write(wake.write, "G", 1) != 1) throw SystemError("write (go)", errno);

  std::int64_t until_ns = deadline_ns;
  for (;;) {
    note(children.reap_ended(out));
    if (children.running() == 0) break;
    if (!failures.empty()) until_ns = std::min(until_ns, monotonic_ns() + kSettleNs);
    const std::int64_t left_ns = until_ns - monotonic_ns();
    if (left_ns <= 0) {
      if (!failures.empty()) break;
      const int first = children.first_running();
      const int left = children.running();
      children.kill_all();
      throw Error("groups: " + std::to_string(left) + " of " + std::to_string(n) +
                  " tasks still running at the time limit (max_duration_s = " +
                  seconds_text(o.max_duration_s) + " s), killed; the first: " + task_id(o, first).describe());
    }
    pollfd p{signals.fd(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left_ns / 1000000 + 1)) < 0 && errno != EINTR)
      throw SystemError("poll (reap)", errno);
    signals.drain();
  }
  out.end_ns = monotonic_ns();
  if (!failures.empty()) {
    children.kill_all();
    throw Error(describe_failures(o, children, failures, slots));
  }
  out.slots.reserve(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) out.slots.push_back(slots[static_cast<std::size_t>(k)]);
  return out;
}

}  // namespace schedlab::groups
