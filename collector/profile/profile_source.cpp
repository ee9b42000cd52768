#include "collector/profile/profile_source.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "collector/perf/pfm.hpp"
#include "collector/profile/kallsyms.hpp"
#include "core/error.hpp"

namespace schedlab {
namespace {

bool is_software_clock(const perf_event_attr& a) {
  return a.type == PERF_TYPE_SOFTWARE &&
         (a.config == PERF_COUNT_SW_CPU_CLOCK || a.config == PERF_COUNT_SW_TASK_CLOCK);
}

// Whether samples arrive in an NMI, so that interrupts-off code (most of __schedule) is seen
// where it runs. cpu-clock is an hrtimer: its samples land on the next interrupts-on point.
nlohmann::json interrupt_kind(const perf_event_attr& a) {
  const bool pmu_overflow = a.type == PERF_TYPE_HARDWARE || a.type == PERF_TYPE_HW_CACHE ||
                            a.type == PERF_TYPE_RAW || a.type >= PERF_TYPE_MAX;
  if (!pmu_overflow)
    return {{"nmi", false},
            {"nmi_note",
             "software event sampled from a timer interrupt: samples in interrupts-off code land on the next "
             "interrupts-on point (finish_task_switch, _raw_spin_unlock_irq)"}};
#if defined(__x86_64__) || defined(__i386__)
  return {{"nmi", true}, {"nmi_note", "PMU overflow interrupts are NMIs on x86"}};
#else
  return {{"nmi", false},
          {"nmi_note",
           "PMU overflow interrupt; whether it is an NMI depends on this architecture's configuration"}};
#endif
}

}  // namespace

ProfileScope parse_profile_scope(const std::string& text) {
  if (text == "workload") return ProfileScope::kWorkload;
  if (text == "system") return ProfileScope::kSystem;
  throw InputError("profile scope '" + text + "' is not one of workload, system");
}

std::string libpfm_event_name(const std::string& event) {
  if (event == "cpu-clock") return "perf::CPU-CLOCK";
  if (event == "task-clock") return "perf::TASK-CLOCK";
  return event;
}

ProfileSource::ProfileSource(ProfileOptions options, PerfOpener opener)
    : options_(std::move(options)), opener_(std::move(opener)) {
  if (options_.frequency_hz <= 0 || options_.frequency_hz > 100000)
    throw InputError(fmt::format("profile frequency {} Hz is outside 1..100000", options_.frequency_hz));
}

ProfileSource::~ProfileSource() = default;

void ProfileSource::open_all(const AttachTarget& target) {
  const EncodedEvent ev = encode_event(libpfm_event_name(options_.event));
  if (!ev.encoded) {
    if (ev.unknown) throw InputError("profile event '" + options_.event + "': " + ev.reason);
    open_errno_ = ev.error_number;
    open_reason_ = "profile event '" + options_.event + "' does not encode: " + ev.reason;
    return;
  }
  perf_event_attr attr = ev.attr;
  attr.disabled = 1;
  attr.sample_type = PERF_SAMPLE_IP;
  if (is_software_clock(attr)) {
    // A clock's period is in nanoseconds: a fixed period gives exactly the asked rate.
    attr.sample_period = static_cast<std::uint64_t>(1e9 / options_.frequency_hz);
    sampling_ = {{"period", attr.sample_period}, {"period_unit", "ns"}};
  } else {
    attr.freq = 1;
    attr.sample_freq = static_cast<std::uint64_t>(options_.frequency_hz);
    sampling_ = {{"frequency_hz", options_.frequency_hz}, {"period_unit", "events (adjusted by the kernel)"}};
  }
  sampling_["event"] = options_.event;
  sampling_["encoding"] = ev.canonical;
  sampling_.update(interrupt_kind(attr));
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  attr.watermark = 1;
  attr.wakeup_watermark = static_cast<std::uint32_t>(options_.ring_pages * page / 2);

  int cgroup_fd = -1;
  pid_t pid = -1;
  unsigned long flags = PERF_FLAG_FD_CLOEXEC;
  if (options_.scope == ProfileScope::kSystem) {
    scope_name_ = "system";
  } else if (!target.cgroup.empty() &&
             (cgroup_fd = ::open(target.cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
    // Per-CPU events on the cgroup stay scheduled while its tasks switch among themselves;
    // per-task events would be switched in and out at every context switch of a yield loop.
    scope_name_ = "cgroup";
    pid = cgroup_fd;
    flags |= PERF_FLAG_PID_CGROUP;
  } else {
    // The kernel refuses mmap on inherited events with cpu == -1, so one per CPU here too.
    scope_name_ = "task-tree";
    pid = target.pid;
    attr.inherit = 1;
  }
  for (int cpu : target.cpus) {
    perf_event_attr a = attr;
    const int fd = opener_(a, pid, cpu, -1, flags);
    if (fd < 0) {
      open_errno_ = -fd;
      open_reason_ = fmt::format("perf_event_open of {} for sampling ({} scope) on CPU {}: {}: {}",
                                 options_.event, scope_name_, cpu, errno_text(-fd), perf_open_advice(-fd));
      break;
    }
    try {
      rings_.add(fd, options_.ring_pages);
    } catch (const SystemError& e) {
      open_errno_ = e.code();
      open_reason_ = e.what();
      break;
    }
  }
  if (cgroup_fd >= 0) ::close(cgroup_fd);
  if (open_errno_ != 0) rings_.clear();
}

void ProfileSource::attach(const AttachTarget& target) {
  rings_.clear();
  tally_ = {};
  open_errno_ = 0;
  open_reason_.clear();
  if (target.cpus.empty()) {
    open_errno_ = ENODEV;
    open_reason_ = "no online CPUs to sample";
    return;
  }
  open_all(target);
}

void ProfileSource::count(const perf_event_header& h, const unsigned char* payload, std::size_t size) {
  if (h.type == PERF_RECORD_SAMPLE && size >= sizeof(std::uint64_t)) {
    std::uint64_t ip;
    std::memcpy(&ip, payload, sizeof ip);
    const auto mode = h.misc & PERF_RECORD_MISC_CPUMODE_MASK;
    if (mode == PERF_RECORD_MISC_KERNEL)
      ++tally_.kernel_ips[ip];
    else if (mode == PERF_RECORD_MISC_USER)
      ++tally_.user;
    else
      ++tally_.other;
  } else if (h.type == PERF_RECORD_LOST && size >= 2 * sizeof(std::uint64_t)) {
    std::uint64_t lost;
    std::memcpy(&lost, payload + sizeof(std::uint64_t), sizeof lost);
    tally_.lost += lost;
    ++tally_.lost_records;
  } else if (h.type == PERF_RECORD_THROTTLE) {
    ++tally_.throttles;
  }
}

void ProfileSource::enable() {
  rings_.start([this](const perf_event_header& h, const unsigned char* payload, std::size_t size) {
    count(h, payload, size);
  });
}

nlohmann::json ProfileSource::histogram() const {
  nlohmann::json out = sampling_;
  out["status"] = status::kOk;
  out["scope"] = scope_name_;
  out["cpus"] = rings_.rings();
  std::uint64_t kernel = 0;
  for (const auto& [ip, n] : tally_.kernel_ips) kernel += n;
  std::map<std::string, std::uint64_t> symbols;
  std::uint64_t unattributed = 0;
  nlohmann::json kallsyms_info;
  try {
    const auto table = KernelSymbols::load(options_.kallsyms);
    kallsyms_info = {
        {"path", options_.kallsyms.string()}, {"symbols", table.size()}, {"hidden", table.hidden()}};
    for (const auto& [ip, n] : tally_.kernel_ips) {
      const auto* sym = table.find(ip);
      if (sym)
        symbols[sym->name] += n;
      else
        unattributed += n;
    }
    if (table.hidden())
      kallsyms_info["reason"] = "addresses read as zero: kernel.kptr_restrict hides them from this user";
  } catch (const Error& e) {
    kallsyms_info = {{"path", options_.kallsyms.string()}, {"error", e.what()}};
    unattributed = kernel;
  }
  if (unattributed) symbols["[kernel unknown]"] += unattributed;
  if (tally_.user) symbols["[user]"] += tally_.user;
  if (tally_.other) symbols["[other]"] += tally_.other;
  out["kallsyms"] = kallsyms_info;
  out["samples"] = kernel + tally_.user + tally_.other;
  out["kernel_samples"] = kernel;
  out["user_samples"] = tally_.user;
  out["lost_samples"] = tally_.lost;
  out["lost_records"] = tally_.lost_records;
  out["throttles"] = tally_.throttles;
  out["symbols"] = symbols;
  return out;
}

void ProfileSource::collect(Repetition& rep) {
  if (rings_.empty()) {
    rep.profile = {{"status", status::kUnsupported}, {"errno", open_errno_}, {"reason", open_reason_}};
    if (!sampling_.empty()) rep.profile["event"] = options_.event;
    return;
  }
  rings_.stop();
  rep.profile = histogram();
  rings_.clear();
}

}  // namespace schedlab
