#include "workloads/micro/primitives.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <functional>
#include <latch>
#include <thread>

#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "core/pipe.hpp"

namespace schedlab::micro {
namespace {

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// se.nr_migrations of the calling thread; -1 where the kernel has no /proc/<tid>/sched.
long long thread_migrations() {
  auto text = read_text("/proc/thread-self/sched");
  if (!text) return -1;
  auto pos = text->find("se.nr_migrations");
  auto colon = pos == std::string::npos ? pos : text->find(':', pos);
  return colon == std::string::npos ? -1 : std::atoll(text->c_str() + colon + 1);
}

// Per-thread kernel counts read at the boundaries of a benchmark run (never inside the loop):
// context switches from getrusage(RUSAGE_THREAD), migrations from se.nr_migrations.
struct ThreadCounts {
  long long switches = 0;
  long long migrations = -1;

  static ThreadCounts now() {
    rusage r{};
    getrusage(RUSAGE_THREAD, &r);
    return {r.ru_nvcsw + r.ru_nivcsw, thread_migrations()};
  }
  ThreadCounts operator-(const ThreadCounts& start) const {
    return {switches - start.switches,
            migrations < 0 || start.migrations < 0 ? -1 : migrations - start.migrations};
  }
};

// Google Benchmark's counters per iteration, as its own perf counters would be reported.
void set_counters(benchmark::State& state, const ThreadCounts& mine, const ThreadCounts& partner) {
  const auto per_iteration = benchmark::Counter::kAvgIterations;
  state.counters["thread_switches"] =
      benchmark::Counter(static_cast<double>(mine.switches + partner.switches), per_iteration);
  if (mine.migrations >= 0)
    state.counters["thread_migrations"] =
        benchmark::Counter(static_cast<double>(mine.migrations), per_iteration);
}

// Names, pins and schedules the benchmark's own thread; false (and the run marked as an error)
// when the system refuses.
bool setup_main(benchmark::State& state, const PrimitiveConfig& c) {
  try {
    setup_current_thread({"schedlab-micro", c.cpu0, &c.policy, c.nice});
    return true;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

// The other end of a two-thread primitive: set up (named, pinned) before the timed loop starts,
// its switch count taken over its whole life.
class Partner {
 public:
  Partner(const PrimitiveConfig& c, std::function<void()> body) : ready_(2) {
    thread_ = std::thread([this, &c, body = std::move(body)] {
      ThreadCounts start;
      try {
        setup_current_thread({"schedlab-micro2", c.cpu1, &c.policy, c.nice});
        start = ThreadCounts::now();
      } catch (...) {
        error_ = std::current_exception();
      }
      ready_.arrive_and_wait();
      if (error_) return;
      body();
      counts_ = ThreadCounts::now() - start;
    });
    ready_.arrive_and_wait();
  }
  ~Partner() {
    if (thread_.joinable()) thread_.join();
  }
  Partner(const Partner&) = delete;
  Partner& operator=(const Partner&) = delete;

  // The set-up error, if any, as text.
  std::string error() const {
    if (!error_) return "";
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  ThreadCounts join() {
    thread_.join();
    return counts_;
  }

 private:
  std::latch ready_;
  std::exception_ptr error_;
  ThreadCounts counts_;
  std::thread thread_;
};

void bm_yield(benchmark::State& state, const PrimitiveConfig& c) {
  if (!setup_main(state, c)) return;
  const auto start = ThreadCounts::now();
  for (auto _ : state) syscall(SYS_sched_yield);
  set_counters(state, ThreadCounts::now() - start, {});
}

// perf bench sched pipe -T: an int written to one pipe and read back from the other; one
// iteration is one round trip.
void bm_pipe(benchmark::State& state, const PrimitiveConfig& c) {
  Pipe there, back;
  Partner partner(c, [&] {
    int m = 0;
    while (::read(there.read, &m, sizeof m) == sizeof m)
      if (::write(back.write, &m, sizeof m) != sizeof m) return;
  });
  if (auto e = partner.error(); !e.empty()) state.SkipWithError(e.c_str());
  if (!setup_main(state, c)) {
    there.close_write();
    partner.join();
    return;
  }
  const auto start = ThreadCounts::now();
  int m = 0;
  for (auto _ : state) {
    if (::write(there.write, &m, sizeof m) != sizeof m || ::read(back.read, &m, sizeof m) != sizeof m) {
      state.SkipWithError(("pipe ping-pong: " + errno_text(errno)).c_str());
      break;
    }
  }
  const auto mine = ThreadCounts::now() - start;
  there.close_write();  // the partner reads end of file and leaves
  set_counters(state, mine, partner.join());
}

long futex(std::atomic<int>& word, int op, int value) {
  // std::atomic<int> has the size and representation of int: the futex word.
  return syscall(SYS_futex, reinterpret_cast<int*>(&word), op, value, nullptr, nullptr, 0);
}

// A wake-to-run handoff over one futex word: the benchmark thread hands the turn to the partner
// and sleeps until it comes back; one iteration is one round trip (two handoffs).
void bm_futex(benchmark::State& state, const PrimitiveConfig& c) {
  constexpr int kMine = 0, kPartners = 1, kStop = 2;
  std::atomic<int> turn{kMine};
  Partner partner(c, [&] {
    for (;;) {
      int v;
      while ((v = turn.load(std::memory_order_acquire)) == kMine) futex(turn, FUTEX_WAIT_PRIVATE, kMine);
      if (v == kStop) return;
      turn.store(kMine, std::memory_order_release);
      futex(turn, FUTEX_WAKE_PRIVATE, 1);
    }
  });
  auto stop = [&] {
    turn.store(kStop, std::memory_order_release);
    futex(turn, FUTEX_WAKE_PRIVATE, 1);
    return partner.join();
  };
  if (auto e = partner.error(); !e.empty()) state.SkipWithError(e.c_str());
  if (!setup_main(state, c)) {
    stop();
    return;
  }
  const auto start = ThreadCounts::now();
  for (auto _ : state) {
    turn.store(kPartners, std::memory_order_release);
    futex(turn, FUTEX_WAKE_PRIVATE, 1);
    while (turn.load(std::memory_order_acquire) == kPartners) futex(turn, FUTEX_WAIT_PRIVATE, kPartners);
  }
  const auto mine = ThreadCounts::now() - start;
  set_counters(state, mine, stop());
}

void* empty_thread(void*) {
  return nullptr;
}

// pthread_create of a thread that returns at once (on cpu1 when placed), then pthread_join.
void bm_thread_create(benchmark::State& state, const PrimitiveConfig& c) {
  if (!setup_main(state, c)) return;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (c.cpu1 >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<unsigned>(c.cpu1), &set);
    pthread_attr_setaffinity_np(&attr, sizeof set, &set);
  }
  const auto start = ThreadCounts::now();
  for (auto _ : state) {
    pthread_t t;
    if (int rc = pthread_create(&t, &attr, empty_thread, nullptr); rc != 0) {
      state.SkipWithError(("pthread_create: " + errno_text(rc)).c_str());
      break;
    }
    pthread_join(t, nullptr);
  }
  set_counters(state, ThreadCounts::now() - start, {});
  pthread_attr_destroy(&attr);
}

// sched_setaffinity of the calling thread to cpu0 and cpu1 in turn: each call moves it.
void bm_migrate(benchmark::State& state, const PrimitiveConfig& c) {
  if (!setup_main(state, c)) return;
  cpu_set_t sets[2];
  for (int i = 0; i < 2; ++i) {
    CPU_ZERO(&sets[i]);
    CPU_SET(static_cast<unsigned>(i == 0 ? c.cpu1 : c.cpu0), &sets[i]);
  }
  const auto start = ThreadCounts::now();
  unsigned i = 0;
  for (auto _ : state) {
    if (::sched_setaffinity(0, sizeof(cpu_set_t), &sets[i++ & 1]) != 0) {
      state.SkipWithError(("sched_setaffinity: " + errno_text(errno)).c_str());
      break;
    }
  }
  set_counters(state, ThreadCounts::now() - start, {});
}

// clock_nanosleep to an absolute deadline sleep_ns ahead; the overshoot is how late it returned.
void bm_nanosleep(benchmark::State& state, const PrimitiveConfig& c) {
  if (!setup_main(state, c)) return;
  // After the policy: a switch to SCHED_OTHER resets the slack to the default.
  if (::prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(c.timer_slack_ns)) != 0) {
    state.SkipWithError(("prctl(PR_SET_TIMERSLACK): " + errno_text(errno)).c_str());
    return;
  }
  const auto start = ThreadCounts::now();
  double overshoot_ns = 0;
  for (auto _ : state) {
    const std::int64_t deadline = now_ns() + c.sleep_ns;
    const timespec ts{static_cast<time_t>(deadline / 1000000000LL),
                      static_cast<long>(deadline % 1000000000LL)};
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr)) == EINTR) {
    }
    if (rc != 0) {  // clock_nanosleep returns its error; it does not set errno
      state.SkipWithError(("clock_nanosleep: " + errno_text(rc)).c_str());
      break;
    }
    overshoot_ns += static_cast<double>(now_ns() - deadline);
  }
  set_counters(state, ThreadCounts::now() - start, {});
  state.counters["overshoot_ns"] = benchmark::Counter(overshoot_ns, benchmark::Counter::kAvgIterations);
}

}  // namespace

const std::vector<Primitive>& primitives() {
  static const std::vector<Primitive> kTable = {
      {"yield", "one sched_yield() system call", false, bm_yield},
      {"pipe", "one round trip of an int over two pipes between two threads", false, bm_pipe},
      {"futex", "one round trip of a futex wake-to-run handoff between two threads", false, bm_futex},
      {"thread_create", "one pthread_create of an empty thread and its pthread_join", false,
       bm_thread_create},
      {"migrate", "one sched_setaffinity() that moves the thread to the other CPU", true, bm_migrate},
      {"nanosleep", "one clock_nanosleep(TIMER_ABSTIME) of sleep_ns", false, bm_nanosleep},
  };
  return kTable;
}

const Primitive* find_primitive(std::string_view name) {
  for (const auto& p : primitives())
    if (name == p.name) return &p;
  return nullptr;
}

}  // namespace schedlab::micro
