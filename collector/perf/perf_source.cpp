#include "collector/perf/perf_source.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"

namespace schedlab {
namespace {

bool is_clock(const perf_event_attr& a) {
  return a.type == PERF_TYPE_SOFTWARE &&
         (a.config == PERF_COUNT_SW_CPU_CLOCK || a.config == PERF_COUNT_SW_TASK_CLOCK);
}

bool is_switch_event(const perf_event_attr& a) {
  return a.type == PERF_TYPE_SOFTWARE &&
         (a.config == PERF_COUNT_SW_CONTEXT_SWITCHES || a.config == PERF_COUNT_SW_CPU_MIGRATIONS);
}

bool is_context_switches(const perf_event_attr& a) {
  return a.type == PERF_TYPE_SOFTWARE && a.config == PERF_COUNT_SW_CONTEXT_SWITCHES;
}

bool is_task_clock(const perf_event_attr& a) {
  return a.type == PERF_TYPE_SOFTWARE && a.config == PERF_COUNT_SW_TASK_CLOCK;
}

// What the kernel's accounting counts as the perf event does. Switches: nvcsw + nivcsw and the event are
// both incremented in __schedule when prev != next. Task clock: the tasks' runtime. With a privilege-level
// modifier the event counts something else (a user-level switch count reads 0): that stays perf's.
// The sum of two fields of the repetition's rusage; nullopt when it lacks either.
std::optional<double> rusage_sum(const Repetition& rep, const char* a, const char* b) {
  const auto x = rep.rusage.find(a), y = rep.rusage.find(b);
  if (x == rep.rusage.end() || y == rep.rusage.end() || !x->is_number() || !y->is_number())
    return std::nullopt;
  return x->get<double>() + y->get<double>();
}

bool read_from_accounting(const EncodedEvent& e) {
  return e.encoded && (is_context_switches(e.attr) || is_task_clock(e.attr)) && !e.attr.exclude_kernel &&
         !e.attr.exclude_user;
}

}  // namespace

void apply_readouts(CounterReading& r, const std::vector<CountReadout>& readouts) {
  // Each fd (a CPU) is scaled by its own enabled/running, then they are summed.
  double value = 0;
  r.raw = r.time_enabled_ns = r.time_running_ns = 0;
  for (const auto& x : readouts) {
    r.raw += x.value;
    r.time_enabled_ns += x.time_enabled_ns;
    r.time_running_ns += x.time_running_ns;
    if (x.time_running_ns > 0)
      value += x.time_running_ns < x.time_enabled_ns
                   ? static_cast<double>(x.value) * static_cast<double>(x.time_enabled_ns) /
                         static_cast<double>(x.time_running_ns)
                   : static_cast<double>(x.value);
  }
  if (r.time_running_ns == 0) {
    r.status = status::kNotCounted;
    r.reason = "the event was never scheduled on a counter (time_running = 0)";
    return;
  }
  r.status = status::kOk;
  r.value = value;
}

PerfOpener system_perf_opener() {
  return [](perf_event_attr& attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
    long fd = ::syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd, flags);
    return fd < 0 ? -errno : static_cast<int>(fd);
  };
}

std::string perf_open_advice(int err) {
  switch (err) {
    case EACCES:
    case EPERM: {
      auto paranoid = read_line("/proc/sys/kernel/perf_event_paranoid");
      return "not permitted (kernel.perf_event_paranoid=" + paranoid.value_or("?") +
             "): run as root or with CAP_PERFMON, or set kernel.perf_event_paranoid <= 1";
    }
    case ENOENT:
    case EOPNOTSUPP:
      return "no PMU here counts this event (a VM without a virtual PMU exposes software events only)";
    case ENODEV:
      return "this CPU does not support the event";
    case EMFILE:
      return "too many open files: raise the limit (ulimit -n)";
    case EBUSY:
      return "the PMU is in use by someone else (another profiler, or the NMI watchdog holding a counter)";
    case EINVAL:
      return "the kernel rejected the event's attributes (an unsupported modifier or config?)";
    default:
      return "perf_event_open failed";
  }
}

CounterScope parse_counter_scope(const std::string& text) {
  if (text == "auto") return CounterScope::kAuto;
  if (text == "system") return CounterScope::kSystem;
  if (text == "cgroup") return CounterScope::kCgroup;
  if (text == "task") return CounterScope::kTaskTree;
  throw InputError("counter scope '" + text + "' is not one of auto, system, cgroup, task");
}

std::string to_string(CounterScope scope) {
  switch (scope) {
    case CounterScope::kAuto:
      return "auto";
    case CounterScope::kSystem:
      return "system";
    case CounterScope::kCgroup:
      return "cgroup";
    case CounterScope::kTaskTree:
      return "task";
  }
  return "?";
}

PerfSource::PerfSource(std::vector<std::string> events, CounterScope scope, PerfOpener opener,
                       HostPaths paths)
    : events_(std::move(events)), scope_(scope), opener_(std::move(opener)), paths_(std::move(paths)) {}

PerfSource::~PerfSource() {
  close_all();
}

void PerfSource::close_all() {
  for (auto& c : counters_) {
    for (int fd : c.fds) ::close(fd);
    c.fds.clear();
  }
}

namespace {

perf_event_attr counting_attr(const EncodedEvent& ev, bool inherit) {
  perf_event_attr attr = ev.attr;
  attr.disabled = 1;
  attr.inherit = inherit ? 1 : 0;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return attr;
}

}  // namespace

bool PerfSource::open_per_cpu(Counter& c, int pid_or_cgroup_fd, const std::vector<int>& cpus,
                              unsigned long flags, const std::string& what) {
  for (int cpu : cpus) {
    perf_event_attr attr = counting_attr(c.event, false);
    int fd = opener_(attr, pid_or_cgroup_fd, cpu, -1, PERF_FLAG_FD_CLOEXEC | flags);
    if (fd < 0) {
      c.open_errno = -fd;
      c.open_reason = "perf_event_open " + what + ", CPU " + std::to_string(cpu) + ": " + errno_text(-fd) +
                      ": " + perf_open_advice(-fd);
      for (int open_fd : c.fds) ::close(open_fd);
      c.fds.clear();
      return false;
    }
    c.fds.push_back(fd);
  }
  return !cpus.empty();
}

bool PerfSource::open_on_cpus(Counter& c, const AttachTarget& target) {
  const auto& cpus = target.workload_cpus.empty() ? target.cpus : target.workload_cpus;
  if (cpus.empty()) {
    c.open_errno = EINVAL;
    c.open_reason = "no CPU to count on was given";
    return false;
  }
  if (!open_per_cpu(c, -1, cpus, 0, "on the workload's CPUs (every task there)")) return false;
  c.scope = "system-cpus";
  return true;
}

bool PerfSource::open_on_cgroup(Counter& c, const AttachTarget& target) {
  if (target.cgroup.empty() || target.cpus.empty()) {
    c.open_errno = ENOENT;
    c.open_reason =
        "counting on the repetition's cgroup needs a cgroup v2 leaf, and this repetition has none "
        "(isolation: process group)";
    return false;
  }
  int cgroup_fd = ::open(target.cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cgroup_fd < 0) {
    c.open_errno = errno;
    c.open_reason = "open " + target.cgroup.string() + ": " + errno_text(errno);
    return false;
  }
  const bool opened =
      open_per_cpu(c, cgroup_fd, target.cpus, PERF_FLAG_PID_CGROUP, "on cgroup " + target.cgroup.string());
  ::close(cgroup_fd);
  if (opened) c.scope = "cgroup";
  return opened;
}

bool PerfSource::open_on_task_tree(Counter& c, const AttachTarget& target) {
  perf_event_attr attr = counting_attr(c.event, true);
  int fd = opener_(attr, target.pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    c.open_errno = -fd;
    c.open_reason = "perf_event_open on the task tree: " + errno_text(-fd) + ": " + perf_open_advice(-fd);
    return false;
  }
  c.fds.push_back(fd);
  c.scope = "task-tree";
  return true;
}

void PerfSource::attach(const AttachTarget& target) {
  close_all();
  counters_.clear();
  target_ = target;
  busy_before_.reset();
  for (const auto& name : events_) {
    Counter c;
    c.event = encode_event(name);
    const bool counting_on_cpus = scope_ == CounterScope::kAuto || scope_ == CounterScope::kSystem;
    if (counting_on_cpus && read_from_accounting(c.event)) {
      c.from_accounting = true;
    } else if (c.event.encoded) {
      switch (scope_) {
        case CounterScope::kAuto:
          if (!open_on_cpus(c, target)) {
            const int cpus_errno = c.open_errno;
            const std::string cpus_reason = c.open_reason;
            // Not permitted on CPUs is not permitted per cgroup either: the task tree is what is left.
            if (open_on_task_tree(c, target))
              c.fallback_note =
                  "counted per task, at a cost at every context switch: counting on the CPUs failed (" +
                  cpus_reason + ")";
            else if (c.open_errno == cpus_errno)
              c.open_reason += " (counting on the CPUs failed the same way)";
            else
              c.open_reason += " (counting on the CPUs failed too: " + cpus_reason + ")";
          }
          break;
        case CounterScope::kSystem:
          open_on_cpus(c, target);
          break;
        case CounterScope::kCgroup:
          open_on_cgroup(c, target);
          break;
        case CounterScope::kTaskTree:
          open_on_task_tree(c, target);
          break;
      }
    }
    counters_.push_back(std::move(c));
  }
}

void PerfSource::enable() {
  const bool on_cpus = std::any_of(counters_.begin(), counters_.end(),
                                   [](const Counter& c) { return c.scope == "system-cpus"; });
  if (on_cpus) {
    const auto& cpus = target_.workload_cpus.empty() ? target_.cpus : target_.workload_cpus;
    busy_before_ = read_cpu_busy(paths_, cpus, busy_why_);
    enabled_at_s_ = monotonic_seconds();
  }
  for (auto& c : counters_)
    for (int fd : c.fds)
      if (::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0)
        throw SystemError("PERF_EVENT_IOC_ENABLE " + c.event.name, errno);
}

CounterReading PerfSource::read(Counter& c) const {
  CounterReading r;
  r.encoding = c.event.canonical;
  r.scope = c.scope;
  r.cost = c.scope.empty() ? "" : c.scope == "system-cpus" ? "constant" : "per-switch";
  if (!c.event.encoded || c.fds.empty()) {
    r.status = status::kUnsupported;
    r.error_number = c.event.encoded ? c.open_errno : c.event.error_number;
    r.reason = c.event.encoded ? c.open_reason : c.event.reason;
    return r;
  }
  std::vector<CountReadout> readouts;
  for (int fd : c.fds) {
    std::uint64_t buf[3] = {0, 0, 0};
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n != static_cast<ssize_t>(sizeof buf)) {
      r.status = status::kUnsupported;
      r.error_number = n < 0 ? errno : EIO;
      r.reason = "read of the counter failed";
      return r;
    }
    readouts.push_back({buf[0], buf[1], buf[2]});
  }
  apply_readouts(r, readouts);
  if (r.ok()) r.unit = is_clock(c.event.attr) ? "ns" : "count";
  return r;
}

void PerfSource::note_window(Repetition& rep, const WorkloadCpu& workload_cpu) {
  const bool on_cpus = std::any_of(rep.counters.begin(), rep.counters.end(),
                                   [](const auto& kv) { return kv.second.scope == "system-cpus"; });
  if (!on_cpus) return;
  const auto& cpus = target_.workload_cpus.empty() ? target_.cpus : target_.workload_cpus;
  std::string why = busy_why_;
  std::optional<CpuBusy> after;
  if (busy_before_) after = read_cpu_busy(paths_, cpus, why);
  if (!busy_before_ || !after || after->source != busy_before_->source) {
    rep.counter_window = {{"cpus", cpus}, {"error", "what else ran on the counted CPUs is unknown: " + why}};
    return;
  }
  const double elapsed = monotonic_seconds() - enabled_at_s_;
  const std::string workload_source =
      workload_cpu.from_cgroup ? "cgroup cpu.stat usage_usec" : "rusage of the process tree";
  const auto window =
      make_window(*busy_before_, *after, elapsed, workload_cpu.seconds.value_or(0.0), workload_source);
  rep.counter_window = window.to_json();
  for (auto& [name, c] : rep.counters) {
    if (c.scope != "system-cpus" || !c.ok()) continue;
    c.foreign_share = window.other_share;
    c.contaminated = window.contaminated;
  }
}

PerfSource::WorkloadCpu PerfSource::workload_cpu(const Repetition& rep) const {
  if (auto cgroup_s = cgroup_cpu_seconds(target_.cgroup)) return {cgroup_s, true};
  return {rusage_sum(rep, "user_s", "system_s"), false};
}

CounterReading PerfSource::read_accounting(const Counter& c, const Repetition& rep,
                                           const WorkloadCpu& workload_cpu) const {
  CounterReading r;
  r.encoding = c.event.canonical;
  r.cost = "none";
  // Both sources cover the tree from its start to its reaping: about the repetition's duration.
  r.time_enabled_ns = r.time_running_ns = static_cast<std::uint64_t>(std::max(0.0, rep.duration_s) * 1e9);
  if (is_context_switches(c.event.attr)) {
    const auto switches = rusage_sum(rep, "voluntary_switches", "involuntary_switches");
    if (!switches) {
      r.status = status::kNotCounted;
      r.reason = "the repetition's process tree left no rusage to read its switches from";
      return r;
    }
    r.raw = static_cast<std::uint64_t>(*switches);
    r.value = static_cast<double>(r.raw);
    r.scope = "task-tree";
    r.source = "rusage";
    r.note =
        "the switches of the repetition's reaped process tree from the kernel's per-task accounting (rusage "
        "voluntary + involuntary), always on: the perf event would cost every switch of the counted CPUs";
    return r;
  }
  if (!workload_cpu.seconds) {
    r.status = status::kNotCounted;
    r.reason = "the repetition has no cgroup of its own and its process tree left no rusage";
    return r;
  }
  r.unit = "ns";
  r.value = *workload_cpu.seconds * 1e9;
  r.raw = static_cast<std::uint64_t>(r.value);
  r.scope = workload_cpu.from_cgroup ? "cgroup" : "task-tree";
  r.source = workload_cpu.from_cgroup ? "cgroup cpu.stat" : "rusage";
  r.note =
      std::string("the CPU time of the repetition's ") +
      (workload_cpu.from_cgroup ? "cgroup from the kernel's accounting (cpu.stat usage_usec)"
                                : "reaped process tree from the kernel's accounting (rusage user + system)") +
      "; unlike perf's clock it leaves out time the hypervisor stole (system.steal_s); a task clock "
      "counted on the CPUs would be their wall time, idle included";
  return r;
}

void PerfSource::collect(Repetition& rep) {
  const auto cpu = workload_cpu(rep);  // read once: the task clock and the window both use it
  for (auto& c : counters_) {
    if (c.from_accounting) {
      rep.counters[c.event.name] = read_accounting(c, rep, cpu);
      continue;
    }
    CounterReading r = read(c);
    if (c.event.encoded && is_switch_event(c.event.attr) && c.event.attr.exclude_kernel)
      r.note = "counted at user level only: software switch events happen in the kernel and read 0 this way";
    if (r.ok() && r.scope == "system-cpus" && is_clock(c.event.attr))
      r.note += std::string(r.note.empty() ? "" : "; ") +
                "counted on the workload's CPUs: this counts their idle time too (counter_window.idle_share)";
    if (!c.fallback_note.empty()) r.note += (r.note.empty() ? "" : "; ") + c.fallback_note;
    rep.counters[c.event.name] = r;
  }
  note_window(rep, cpu);
  close_all();
}

}  // namespace schedlab

namespace schedlab {

EventProbe probe_event(const std::string& name) {
  EventProbe p;
  p.encoded = encode_event(name);
  if (!p.encoded.encoded) {
    p.error_number = p.encoded.error_number;
    p.reason = p.encoded.reason;
    return p;
  }
  perf_event_attr attr = p.encoded.attr;
  attr.disabled = 1;
  int fd = system_perf_opener()(attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd >= 0) {
    p.opens = true;
    ::close(fd);
  } else {
    p.error_number = -fd;
    p.reason = perf_open_advice(-fd);
  }
  return p;
}

}  // namespace schedlab
