#include "collector/perf/perf_source.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

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

}  // namespace

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
  if (text == "task") return CounterScope::kTaskTree;
  throw InputError("counter scope '" + text + "' is not one of auto, task");
}

PerfSource::PerfSource(std::vector<std::string> events, CounterScope scope, PerfOpener opener)
    : events_(std::move(events)), scope_(scope), opener_(std::move(opener)) {}

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

bool PerfSource::open_on_cgroup(Counter& c, const AttachTarget& target) {
  if (target.cgroup.empty() || target.cpus.empty()) return false;
  int cgroup_fd = ::open(target.cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cgroup_fd < 0) return false;
  for (int cpu : target.cpus) {
    perf_event_attr attr = counting_attr(c.event, false);
    int fd = opener_(attr, cgroup_fd, cpu, -1, PERF_FLAG_FD_CLOEXEC | PERF_FLAG_PID_CGROUP);
    if (fd < 0) {
      c.open_errno = -fd;
      c.open_reason = "perf_event_open on cgroup " + target.cgroup.string() + ", CPU " + std::to_string(cpu) +
                      ": " + errno_text(-fd) + ": " + perf_open_advice(-fd);
      for (int open_fd : c.fds) ::close(open_fd);
      c.fds.clear();
      ::close(cgroup_fd);
      return false;
    }
    c.fds.push_back(fd);
  }
  ::close(cgroup_fd);
  c.scope = "cgroup";
  return true;
}

bool PerfSource::open_on_task_tree(Counter& c, const AttachTarget& target) {
  perf_event_attr attr = counting_attr(c.event, true);
  int fd = opener_(attr, target.pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    const std::string cgroup_error = c.open_reason;
    const int cgroup_errno = c.open_errno;
    c.open_errno = -fd;
    c.open_reason = "perf_event_open: " + errno_text(-fd) + ": " + perf_open_advice(-fd);
    if (!cgroup_error.empty())
      c.open_reason += cgroup_errno == -fd ? " (per-cgroup counting failed the same way)"
                                           : " (per-cgroup counting failed too: " + cgroup_error + ")";
    return false;
  }
  c.fds.push_back(fd);
  c.scope = "task-tree";
  return true;
}

void PerfSource::attach(const AttachTarget& target) {
  close_all();
  counters_.clear();
  for (const auto& name : events_) {
    Counter c;
    c.event = encode_event(name);
    if (c.event.encoded && !(scope_ == CounterScope::kAuto && open_on_cgroup(c, target)))
      open_on_task_tree(c, target);
    counters_.push_back(std::move(c));
  }
}

void PerfSource::enable() {
  for (auto& c : counters_)
    for (int fd : c.fds)
      if (::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0)
        throw SystemError("PERF_EVENT_IOC_ENABLE " + c.event.name, errno);
}

CounterReading PerfSource::read(Counter& c) const {
  CounterReading r;
  r.encoding = c.event.canonical;
  r.scope = c.scope;
  if (!c.event.encoded || c.fds.empty()) {
    r.status = status::kUnsupported;
    r.error_number = c.event.encoded ? c.open_errno : c.event.error_number;
    r.reason = c.event.encoded ? c.open_reason : c.event.reason;
    return r;
  }
  // Per-CPU readings are scaled one by one, then summed.
  double value = 0;
  for (int fd : c.fds) {
    std::uint64_t buf[3] = {0, 0, 0};
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n != static_cast<ssize_t>(sizeof buf)) {
      r.status = status::kUnsupported;
      r.error_number = n < 0 ? errno : EIO;
      r.reason = "read of the counter failed";
      return r;
    }
    r.raw += buf[0];
    r.time_enabled_ns += buf[1];
    r.time_running_ns += buf[2];
    if (buf[2] > 0)
      value += buf[2] < buf[1]
                   ? static_cast<double>(buf[0]) * static_cast<double>(buf[1]) / static_cast<double>(buf[2])
                   : static_cast<double>(buf[0]);
  }
  if (r.time_running_ns == 0) {
    r.status = status::kNotCounted;
    r.reason = "the event was never scheduled on a counter (time_running = 0)";
    return r;
  }
  r.value = value;
  r.unit = is_clock(c.event.attr) ? "ns" : "count";
  return r;
}

void PerfSource::collect(Repetition& rep) {
  for (auto& c : counters_) {
    CounterReading r = read(c);
    if (c.event.encoded && is_switch_event(c.event.attr) && c.event.attr.exclude_kernel)
      r.note = "counted at user level only: software switch events happen in the kernel and read 0 this way";
    rep.counters[c.event.name] = r;
  }
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
