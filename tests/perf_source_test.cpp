#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "collector/perf/perf_source.hpp"
#include "collector/runner/isolation.hpp"
#include "core/topology.hpp"

namespace schedlab {
namespace {

// A child that waits for a byte, then sleeps `naps` times for 100 us (each nap is one
// voluntary context switch), then exits. Returns its pid and the pipe to start it.
struct NappingChild {
  pid_t pid = -1;
  int go = -1;
  explicit NappingChild(int naps) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    pid = ::fork();
    if (pid == 0) {
      ::close(fds[1]);
      char c;
      if (::read(fds[0], &c, 1) != 1) ::_exit(1);
      for (int i = 0; i < naps; ++i) ::usleep(100);
      ::_exit(0);
    }
    ::close(fds[0]);
    go = fds[1];
  }
  // Returns the child's context switches as the kernel's rusage counts them.
  long start_and_wait() {
    EXPECT_EQ(::write(go, "g", 1), 1);
    ::close(go);
    int status = 0;
    rusage ru{};
    ::wait4(pid, &status, 0, &ru);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return ru.ru_nvcsw + ru.ru_nivcsw;
  }
};

// Counts `events` over a napping child; `switches` receives the child's rusage switch count.
Repetition count(const std::vector<std::string>& events, int naps, PerfOpener opener = system_perf_opener(),
                 const std::string& cgroup_leaf = "", long* switches = nullptr) {
  PerfSource source(events, CounterScope::kAuto, std::move(opener));
  NappingChild child(naps);
  AttachTarget target{child.pid, {}, {}};
  std::unique_ptr<Isolation> leaf;
  if (!cgroup_leaf.empty()) {
    leaf = make_isolation(IsolationMode::kCgroup, cgroup_leaf);
    leaf->adopt(child.pid);
    target.cgroup = leaf->cgroup_dir();
    for (const auto& cpu : read_topology(HostPaths::live()).cpus) target.cpus.push_back(cpu.cpu);
  }
  source.attach(target);
  source.enable();
  long rusage_switches = child.start_and_wait();
  if (switches) *switches = rusage_switches;
  Repetition rep;
  source.collect(rep);
  return rep;
}

bool cgroup_available() {
  try {
    make_isolation(IsolationMode::kCgroup, "schedlab-probe-" + std::to_string(::getpid()));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

TEST(PerfSource, CountsContextSwitchesOfTheChild) {
  long switches = 0;
  auto rep = count({"perf::CONTEXT-SWITCHES", "perf::TASK-CLOCK"}, 500, system_perf_opener(), "", &switches);
  const auto& cs = rep.counters.at("perf::CONTEXT-SWITCHES");
  ASSERT_TRUE(cs.ok()) << cs.reason;
  // Nearly every nap blocks once (a timer that fires before the switch saves one). rusage also
  // counts what the counter cannot see: the wait for the start byte, before counting began, and
  // the switches of the exit path after perf detached from the task.
  EXPECT_GE(cs.value, 250);  // counting happened: most naps switch
  EXPECT_NEAR(cs.value, static_cast<double>(switches), 4.0);
  EXPECT_EQ(cs.unit, "count");
  EXPECT_EQ(cs.time_enabled_ns, cs.time_running_ns);  // software events never multiplex
  EXPECT_EQ(cs.scope, "task-tree");
  const auto& clock = rep.counters.at("perf::TASK-CLOCK");
  ASSERT_TRUE(clock.ok());
  EXPECT_EQ(clock.unit, "ns");
  EXPECT_GT(clock.value, 0);
}

TEST(PerfSource, CountsPerCpuOnTheCgroupOfTheChild) {
  if (!cgroup_available()) GTEST_SKIP() << "no writable cgroup v2 hierarchy here";
  long switches = 0;
  auto rep = count({"perf::CONTEXT-SWITCHES", "perf::TASK-CLOCK", "cycles:u"}, 500, system_perf_opener(),
                   "schedlab-perf-test-" + std::to_string(::getpid()), &switches);
  const auto& cs = rep.counters.at("perf::CONTEXT-SWITCHES");
  ASSERT_TRUE(cs.ok()) << cs.reason;
  EXPECT_EQ(cs.scope, "cgroup");
  EXPECT_GE(cs.value, 250);  // counting happened: most naps switch
  EXPECT_NEAR(cs.value, static_cast<double>(switches), 4.0);
  EXPECT_GT(rep.counters.at("perf::TASK-CLOCK").value, 0);
  const auto& cycles = rep.counters.at("cycles:u");
  if (!cycles.ok()) {  // no PMU: both scopes were tried, and the record says so
    EXPECT_EQ(cycles.status, "unsupported");
    EXPECT_NE(cycles.reason.find("per-cgroup counting failed"), std::string::npos) << cycles.reason;
  }
}

TEST(PerfSource, UserLevelSwitchCountIsFlagged) {
  auto rep = count({"perf::CONTEXT-SWITCHES:u"}, 50);
  const auto& cs = rep.counters.at("perf::CONTEXT-SWITCHES:u");
  ASSERT_TRUE(cs.ok());
  EXPECT_EQ(cs.value, 0);  // DEPENDENCIES.md pitfall 2: exclude_kernel silently reads 0
  EXPECT_NE(cs.note.find("user level only"), std::string::npos);
}

TEST(PerfSource, HardwareCyclesAreRealOrUnsupportedWithErrno) {
  auto rep = count({"cycles:u", "cycles:k"}, 10);
  for (const char* ev : {"cycles:u", "cycles:k"}) {
    const auto& c = rep.counters.at(ev);
    if (c.ok()) {  // a box with a PMU
      EXPECT_GT(c.raw, 0u) << ev;
    } else {  // this VM: "PMU not available due to virtualization"
      EXPECT_EQ(c.status, "unsupported") << ev;
      EXPECT_TRUE(c.error_number == ENOENT || c.error_number == EOPNOTSUPP || c.error_number == ENODEV)
          << ev << " errno " << c.error_number;
      EXPECT_NE(c.reason.find("perf_event_open"), std::string::npos) << c.reason;
    }
    EXPECT_NE(c.encoding.find("PERF_COUNT_HW_CPU_CYCLES"), std::string::npos);
  }
}

TEST(PerfSource, EventLibpfmDoesNotKnowIsUnsupportedAndUnknown) {
  EXPECT_TRUE(encode_event("no-such-event").unknown);
  auto rep = count({"no-such-event"}, 1);
  const auto& c = rep.counters.at("no-such-event");
  EXPECT_EQ(c.status, "unsupported");
  EXPECT_EQ(c.error_number, ENOENT);
  EXPECT_NE(c.reason.find("libpfm4 cannot encode 'no-such-event'"), std::string::npos);
}

// The runner refuses a name libpfm4 rejects (bad input) but runs one that only fails to open here.
TEST(PerfSource, AModifierLibpfmRejectsIsARejectedNameNotAnUnknownOne) {
  const auto bad = encode_event("cycles:x");
  EXPECT_FALSE(bad.encoded);
  EXPECT_FALSE(bad.unknown);
  EXPECT_TRUE(bad.rejected);
  EXPECT_EQ(bad.error_number, EINVAL);
  EXPECT_EQ(bad.reason, "libpfm4 cannot encode 'cycles:x': invalid event attribute");
  EXPECT_TRUE(encode_event("no-such-event").rejected);
  for (const char* good : {"cycles:u", "perf::CONTEXT-SWITCHES", "cycles:u:k"}) {
    const auto ev = encode_event(good);
    EXPECT_TRUE(ev.encoded) << good << ": " << ev.reason;
    EXPECT_FALSE(ev.rejected) << good;
  }
}

TEST(PerfSource, RefusedOpenIsRecordedWithErrnoAndAdvice) {
  int calls = 0;
  PerfOpener refuse = [&](perf_event_attr&, pid_t, int, int, unsigned long) {
    ++calls;
    return -EACCES;
  };
  auto rep = count({"perf::CONTEXT-SWITCHES"}, 1, refuse);
  EXPECT_EQ(calls, 1);
  const auto& c = rep.counters.at("perf::CONTEXT-SWITCHES");
  EXPECT_EQ(c.status, "unsupported");
  EXPECT_EQ(c.error_number, EACCES);
  EXPECT_NE(c.reason.find("EACCES"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("perf_event_paranoid"), std::string::npos) << c.reason;
}

TEST(PerfSource, OpensInheritingDisabledCounters) {
  perf_event_attr seen{};
  PerfOpener spy = [&](perf_event_attr& attr, pid_t pid, int cpu, int group, unsigned long flags) {
    seen = attr;
    return system_perf_opener()(attr, pid, cpu, group, flags);
  };
  auto rep = count({"perf::CPU-MIGRATIONS"}, 1, spy);
  EXPECT_EQ(seen.inherit, 1u);
  EXPECT_EQ(seen.disabled, 1u);
  EXPECT_EQ(seen.exclude_kernel, 0u);
  EXPECT_TRUE(rep.counters.at("perf::CPU-MIGRATIONS").ok());
}

}  // namespace
}  // namespace schedlab
