#include "workloads/requests/pool.hpp"

#include <sys/prctl.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <ctime>
#include <exception>
#include <latch>
#include <memory>
#include <optional>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "workloads/requests/handoff.hpp"
#include "workloads/requests/work.hpp"

namespace schedlab::requests {
namespace {

// A futex wait never lasts longer: only a lost wakeup at shutdown would need it.
constexpr std::int64_t kBackstopNs = 100'000'000;
// Fixed rate: how long the message thread waits before retrying when every queue of its pool is full.
constexpr std::int64_t kFullRetryNs = 50'000;
constexpr std::size_t kQueueSlots = 1024;

timespec to_timespec(std::int64_t ns) {
  return {static_cast<time_t>(ns / 1000000000LL), static_cast<long>(ns % 1000000000LL)};
}

void sleep_until(std::int64_t deadline_ns) {
  const timespec t = to_timespec(deadline_ns);
  int rc;
  while ((rc = ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr)) == EINTR) {
  }
  if (rc != 0) throw SystemError("clock_nanosleep", rc);  // it returns the error, not errno
}

struct Worker {
  Wakeable wake;
  StampRing<kQueueSlots> queue;                // fixed rate: scheduled times
  std::atomic<Worker*> next_waiting{nullptr};  // closed loop: link in the message thread's stack
  WorkerTally tally;
  std::exception_ptr error;
};

struct Group {
  Wakeable wake;  // the message thread's
  std::atomic<Worker*> waiting{nullptr};
  std::atomic<bool> over{false};  // no more requests will come
  std::vector<std::unique_ptr<Worker>> workers;
  std::uint64_t handed_over = 0, unsent = 0;
  std::exception_ptr error;
};

// The run's clock, set once every thread is ready.
struct Window {
  std::atomic<std::int64_t> start_ns{0}, end_ns{0};
};

void push_waiting(Group& g, Worker& w) {
  Worker* head = g.waiting.load();
  do {
    w.next_waiting.store(head, std::memory_order_relaxed);
  } while (!g.waiting.compare_exchange_weak(head, &w));
}

class WorkerLoop {
 public:
  WorkerLoop(const PoolConfig& c, Group& g, Worker& w, CpuLocks* locks)
      : c_(c), g_(g), w_(w), work_(c.footprint_kb, c.operations, locks) {}

  void run(std::int64_t end_ns) {
    end_ns_ = end_ns;
    drain_end_ns_ = end_ns + kDrainNs;
    if (c_.rate > 0)
      fixed_rate();
    else
      closed_loop();
    w_.tally.unfinished += w_.queue.size();
    w_.tally.checksum = work_.checksum();
  }

 private:
  // schbench's loop: announce ourselves to the message thread, sleep until it answers, serve.
  void closed_loop() {
    while (monotonic_ns() < end_ns_) {
      w_.wake.arm();
      push_waiting(g_, w_);
      g_.wake.post(0);
      // Still listed until the answer comes: listing ourselves again would loop the list. Leaving
      // listed is harmless, the Worker outlives every message thread.
      while (!w_.wake.wait(kBackstopNs))
        if (monotonic_ns() > drain_end_ns_) return;
      const std::int64_t now = monotonic_ns();
      const std::int64_t stamp = w_.wake.wake_ns();
      if (stamp == 0) return;  // an unstamped post: the run is over
      w_.tally.wakeup.add(now - stamp);
      if (!serve(stamp)) return;
    }
  }

  void fixed_rate() {
    for (;;) {
      w_.wake.arm();
      std::int64_t due;
      if (w_.queue.pop(due)) {
        if (!serve(due)) return;
        continue;
      }
      if (g_.over.load()) {
        if (w_.queue.size() == 0) return;
        continue;
      }
      const bool posted = w_.wake.wait(kBackstopNs);
      const std::int64_t now = monotonic_ns();
      if (!posted) {
        if (now > drain_end_ns_) return;
        continue;
      }
      // Only a hand-over stamps; the end-of-run post does not.
      if (const std::int64_t stamp = w_.wake.wake_ns(); stamp != 0) w_.tally.wakeup.add(now - stamp);
    }
  }

  // One request issued at `issued_ns`; false when the drain limit passed (it is counted unfinished).
  bool serve(std::int64_t issued_ns) {
    bool finished = monotonic_ns() <= drain_end_ns_;
    if (finished) {
      think_sleep();
      finished = work_.run(drain_end_ns_);
    }
    if (!finished) {
      ++w_.tally.unfinished;
      return false;
    }
    const std::int64_t done = monotonic_ns();
    w_.tally.request.add(done - issued_ns);
    ++w_.tally.requests;
    w_.tally.last_done_ns = done;
    return true;
  }

  // schbench's simulated network wait before the work.
  void think_sleep() {
    if (c_.sleep_us > 0) sleep_until(monotonic_ns() + c_.sleep_us * 1000);
  }

  const PoolConfig& c_;
  Group& g_;
  Worker& w_;
  RequestWork work_;
  std::int64_t end_ns_ = 0, drain_end_ns_ = 0;
};

// Closed loop: answer every worker that asked, stamping them all with one clock read taken after
// the list was taken (as schbench does: a waker preempted while it wakes shows as latency).
void answer_loop(Group& g) {
  for (;;) {
    g.wake.arm();
    Worker* list = g.waiting.exchange(nullptr);
    if (list) {
      const std::int64_t now = monotonic_ns();
      while (list) {
        Worker* next = list->next_waiting.load();  // before the post: the worker may list itself again
        list->wake.post(now);
        ++g.handed_over;
        list = next;
      }
    }
    if (g.over.load()) return;
    g.wake.wait(kBackstopNs);
  }
}

// Fixed rate: requests due on an even schedule, dealt round-robin to the workers' queues. A request
// keeps its due time however late it is handed over, so that the latency counts from the schedule.
void schedule_loop(const PoolConfig& c, Group& g, int index, std::int64_t start_ns, std::int64_t end_ns) {
  const double period_ns = 1e9 * c.message_threads / c.rate;
  // The message threads' schedules interleave instead of firing together.
  const double offset_ns = period_ns * index / c.message_threads;
  const auto due_of = [&](std::uint64_t k) {
    return start_ns + static_cast<std::int64_t>(std::llround(offset_ns + period_ns * static_cast<double>(k)));
  };
  const std::size_t n = g.workers.size();
  std::size_t next_worker = 0;
  std::uint64_t k = 0;
  for (;;) {
    const std::int64_t due = due_of(k);
    if (due >= end_ns) break;
    const std::int64_t now = monotonic_ns();
    if (now >= end_ns) break;
    if (now < due) {
      sleep_until(due);
      continue;
    }
    bool placed = false;
    for (std::size_t i = 0; i < n && !placed; ++i) {
      Worker& w = *g.workers[(next_worker + i) % n];
      if (!w.queue.push(due)) continue;
      w.wake.post(monotonic_ns());
      next_worker = (next_worker + i + 1) % n;
      placed = true;
    }
    if (!placed) {
      sleep_until(now + kFullRetryNs);
      continue;
    }
    ++k;
  }
  g.handed_over = k;
  const double span = static_cast<double>(end_ns - start_ns) - offset_ns;
  const auto scheduled = span > 0 ? static_cast<std::uint64_t>(std::ceil(span / period_ns)) : 0;
  g.unsent = scheduled > k ? scheduled - k : 0;
}

void set_timer_slack(long ns) {
  // After the policy: switching to SCHED_OTHER resets the slack to the default.
  if (::prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(ns)) != 0)
    throw SystemError("prctl(PR_SET_TIMERSLACK)", errno);
}

}  // namespace

PoolResult run_pool(const PoolConfig& c) {
  std::optional<CpuLocks> locks;
  if (c.cpu_lock) locks.emplace();
  std::vector<std::unique_ptr<Group>> groups;
  for (int m = 0; m < c.message_threads; ++m) {
    auto g = std::make_unique<Group>();
    for (int i = 0; i < c.workers; ++i) g->workers.push_back(std::make_unique<Worker>());
    groups.push_back(std::move(g));
  }
  const auto tasks = static_cast<std::ptrdiff_t>(c.message_threads) * (c.workers + 1);
  std::latch ready(tasks), go(1);
  Window window;
  std::vector<std::thread> worker_threads, message_threads;
  const ThreadSetup msg_setup{"schedlab-rqmsg", -1, &c.policy, c.nice};
  const ThreadSetup work_setup{"schedlab-rqwork", -1, &c.policy, c.nice};

  std::ptrdiff_t started = 0;
  std::exception_ptr spawn_error;
  try {
    for (auto& gp : groups) {
      Group& g = *gp;
      for (auto& wp : g.workers) {
        Worker& w = *wp;
        worker_threads.emplace_back([&] {
          std::optional<WorkerLoop> loop;
          try {
            setup_current_thread(work_setup);
            set_timer_slack(c.timer_slack_ns);
            loop.emplace(c, g, w, locks ? &*locks : nullptr);
          } catch (...) {
            w.error = std::current_exception();
          }
          ready.count_down();
          go.wait();
          if (w.error) return;
          try {
            loop->run(window.end_ns.load());
          } catch (...) {
            w.error = std::current_exception();
          }
        });
        ++started;
      }
    }
    for (std::size_t m = 0; m < groups.size(); ++m) {
      Group& g = *groups[m];
      message_threads.emplace_back([&, m] {
        try {
          setup_current_thread(msg_setup);
          set_timer_slack(c.timer_slack_ns);
        } catch (...) {
          g.error = std::current_exception();
        }
        ready.count_down();
        go.wait();
        try {
          if (!g.error) {
            if (c.rate > 0)
              schedule_loop(c, g, static_cast<int>(m), window.start_ns.load(), window.end_ns.load());
            else
              answer_loop(g);
          }
        } catch (...) {
          g.error = std::current_exception();
        }
        // Fixed rate: the workers drain their queues and leave. Closed loop: nobody is waiting any more.
        g.over.store(true);
        for (auto& w : g.workers) w->wake.post(0);
      });
      ++started;
    }
  } catch (...) {
    // A thread could not be created (a task limit): the ones that were let go with an empty window
    // leave at once, and are joined before the error is thrown.
    spawn_error = std::current_exception();
    ready.count_down(tasks - started);
  }
  ready.wait();
  const std::int64_t start = monotonic_ns();
  window.start_ns = start;
  window.end_ns = spawn_error ? 0 : start + static_cast<std::int64_t>(c.duration_s * 1e9);
  go.count_down();

  for (auto& t : worker_threads) t.join();
  // Closed loop: the message threads answer until every worker has left.
  for (auto& g : groups) {
    g->over.store(true);
    g->wake.post(0);
  }
  for (auto& t : message_threads) t.join();
  if (spawn_error) std::rethrow_exception(spawn_error);

  PoolResult r;
  r.start_ns = start;
  r.end_ns = window.end_ns.load();
  r.matrix_side = matrix_side(c.footprint_kb);
  for (auto& g : groups) {
    if (g->error) std::rethrow_exception(g->error);
    GroupTally t;
    t.handed_over = g->handed_over;
    t.unsent = g->unsent;
    for (auto& w : g->workers) {
      if (w->error) std::rethrow_exception(w->error);
      t.workers.push_back(std::move(w->tally));
    }
    r.groups.push_back(std::move(t));
  }
  return r;
}

}  // namespace schedlab::requests
