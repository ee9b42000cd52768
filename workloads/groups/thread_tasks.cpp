// Thread mode: every task is a std::thread of the schedlab-grp-tasks helper, all channels open in it
// (hackbench -T). A blocked read or write cannot be killed, so the time limit and a failed task
// stop the others with a flag and a signal whose handler does nothing: it is installed without
// SA_RESTART, so the blocked call returns EINTR and the task looks at the flag. The signal is sent
// again until every thread has finished, since one can arrive just before a task blocks.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/pipe.hpp"
#include "core/sanitizers.hpp"
#include "workloads/groups/tasks.hpp"

namespace schedlab::groups {
namespace {

void ignore_signal(int) {}

class InterruptSignal {
 public:
  InterruptSignal() : signo_(SIGRTMIN) {
    struct sigaction sa {};
    sa.sa_handler = ignore_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: that is the point
    if (::sigaction(signo_, &sa, &old_) != 0) throw SystemError("sigaction(SIGRTMIN)", errno);
  }
  InterruptSignal(const InterruptSignal&) = delete;
  InterruptSignal& operator=(const InterruptSignal&) = delete;
  ~InterruptSignal() { ::sigaction(signo_, &old_, nullptr); }
  int signo() const { return signo_; }

 private:
  int signo_;
  struct sigaction old_ {};
};

// hackbench's threads have PTHREAD_STACK_MIN (16 KiB) stacks; std::thread takes glibc's default, the
// stack rlimit (8 MiB). Beyond the memory, the size decides the joins' cost: glibc keeps up to 40 MiB of
// freed stacks for reuse and unmaps the rest, so 400 threads of 8 MiB are unmapped at join, in the timed
// window, where 400 small ones are kept. 64 KiB holds our tasks' frames (more under ASan, whose frames
// are larger). Set as the process's default for the run, restored after.
class SmallThreadStacks {
 public:
#if defined(SCHEDLAB_ASAN)
  static constexpr std::size_t kBytes = 1 << 20;
#else
  static constexpr std::size_t kBytes = 64 << 10;
#endif
  SmallThreadStacks() {
    if (::pthread_getattr_default_np(&old_) != 0) return;
    have_old_ = true;
    pthread_attr_t small;
    if (::pthread_getattr_default_np(&small) != 0) return;
    if (::pthread_attr_setstacksize(&small, kBytes) == 0 && ::pthread_setattr_default_np(&small) == 0)
      set_ = true;
    ::pthread_attr_destroy(&small);
  }
  SmallThreadStacks(const SmallThreadStacks&) = delete;
  SmallThreadStacks& operator=(const SmallThreadStacks&) = delete;
  ~SmallThreadStacks() {
    if (set_) ::pthread_setattr_default_np(&old_);
    if (have_old_) ::pthread_attr_destroy(&old_);
  }

 private:
  pthread_attr_t old_{};
  bool have_old_ = false, set_ = false;
};

// Every group's channels, closed once the threads are joined.
struct AllChannels {
  std::vector<std::vector<Channel>> groups;
  AllChannels() = default;
  AllChannels(const AllChannels&) = delete;
  AllChannels& operator=(const AllChannels&) = delete;
  ~AllChannels() {
    for (auto& g : groups) close_channels(g);
  }
};

struct Crew {
  explicit Crew(int n)
      : slots(static_cast<std::size_t>(n)), finished(static_cast<std::size_t>(n)), remaining(n) {}
  std::vector<TaskSlot> slots;
  std::vector<std::atomic<bool>> finished;
  std::atomic<int> remaining;
  std::atomic<int> first_failed{-1};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
};

void write_byte(int fd) {
  while (::write(fd, "x", 1) < 0 && errno == EINTR) {
  }
}

// Sets the flag, releases the tasks still at the gate, interrupts the blocked ones until all are
// finished, and joins them.
void stop_and_join(Crew& crew, int wake_fd, int signo) {
  crew.stop.store(true);
  write_byte(wake_fd);
  for (;;) {
    bool all = true;
    for (std::size_t i = 0; i < crew.threads.size(); ++i) {
      if (crew.finished[i].load()) continue;
      all = false;
      ::pthread_kill(crew.threads[i].native_handle(), signo);
    }
    if (all) break;
    ::usleep(5000);
  }
  for (auto& t : crew.threads) t.join();
}

}  // namespace

RunOutcome run_in_threads(const Options& o, const std::vector<int>& cpus) {
  const int n = o.task_count();
  const std::int64_t deadline_ns = monotonic_ns() + static_cast<std::int64_t>(o.max_duration_s * 1e9);
  InterruptSignal interrupt;
  SmallThreadStacks small_stacks;
  AllChannels channels;
  for (int g = 0; g < o.groups; ++g) channels.groups.push_back(open_channels(o.transport, o.fds));
  Pipe ready, wake, done;
  Crew crew(n);
  const Gate gate{ready.write, wake.read, &crew.stop};

  auto body = [&](int k) {
    const TaskId id = task_id(o, k);
    TaskSlot& slot = crew.slots[static_cast<std::size_t>(k)];
    try {
      setup_current_thread({id.comm(), cpus[static_cast<std::size_t>(k)], &o.policy, o.nice});
      const auto& ch = channels.groups[static_cast<std::size_t>(id.group)];
      if (id.sender) {
        std::vector<int> out;
        for (const auto& c : ch) out.push_back(c.write);
        send_all(id, out, o, gate);
      } else {
        receive_all(id, ch[static_cast<std::size_t>(id.index)].read, o, gate, slot);
      }
    } catch (const std::exception& e) {
      slot.fail(e.what());
      int none = -1;
      if (crew.first_failed.compare_exchange_strong(none, k)) write_byte(done.write);
    }
    rusage ru{};
    if (::getrusage(RUSAGE_THREAD, &ru) == 0) {
      slot.voluntary_switches = ru.ru_nvcsw;
      slot.involuntary_switches = ru.ru_nivcsw;
    }
    crew.finished[static_cast<std::size_t>(k)].store(true);
    if (crew.remaining.fetch_sub(1) == 1) write_byte(done.write);
  };

  crew.threads.reserve(static_cast<std::size_t>(n));
  try {
    for (int k = 0; k < n; ++k) crew.threads.emplace_back(body, k);
  } catch (const std::system_error& e) {
    // The threads that did start wait at the gate.
    stop_and_join(crew, wake.write, interrupt.signo());
    throw Error("groups: starting thread " + std::to_string(crew.threads.size() + 1) + " of " +
                std::to_string(n) + ": " + e.what());
  }

  auto fail = [&](const std::string& why) -> Error {
    stop_and_join(crew, wake.write, interrupt.signo());
    const int first = crew.first_failed.load();
    if (first >= 0 && why.empty())
      return Error(task_id(o, first).describe() + ": " + crew.slots[static_cast<std::size_t>(first)].error);
    return Error(why);
  };
  auto time_limit = [&](const char* phase) {
    return "groups: " + std::to_string(crew.remaining.load()) + " of " + std::to_string(n) +
           " threads still running at the time limit (max_duration_s = " + seconds_text(o.max_duration_s) +
           " s)" + phase + ", stopped";
  };

  // The start barrier: one byte from every task; a byte on `done` means one failed first.
  int announced = 0;
  while (announced < n) {
    const std::int64_t left_ns = deadline_ns - monotonic_ns();
    if (left_ns <= 0) throw fail(time_limit(" before the start"));
    pollfd p[2] = {{ready.read, POLLIN, 0}, {done.read, POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(left_ns / 1000000 + 1)) < 0 && errno != EINTR)
      throw fail("poll (start): " + errno_text(errno));
    if (p[1].revents & POLLIN) throw fail("");
    if (p[0].revents & POLLIN) {
      char buf[4096];
      const ssize_t got =
          ::read(ready.read, buf, std::min<std::size_t>(sizeof buf, static_cast<std::size_t>(n - announced)));
      if (got > 0) announced += static_cast<int>(got);
    }
  }

  RunOutcome out;
  out.start_ns = monotonic_ns();
  if (::write(wake.write, "G", 1) != 1) throw fail("write (go): " + errno_text(errno));
  for (;;) {
    const std::int64_t left_ns = deadline_ns - monotonic_ns();
    if (left_ns <= 0) throw fail(time_limit(""));
    pollfd p{done.read, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left_ns / 1000000 + 1));
    if (r < 0 && errno != EINTR) throw fail("poll (done): " + errno_text(errno));
    if (r > 0) break;
  }
  if (crew.first_failed.load() >= 0) throw fail("");
  for (auto& t : crew.threads) t.join();
  out.end_ns = monotonic_ns();
  out.slots = crew.slots;
  for (const auto& s : out.slots) {
    out.voluntary_switches += s.voluntary_switches;
    out.involuntary_switches += s.involuntary_switches;
  }
  return out;
}

}  // namespace schedlab::groups
