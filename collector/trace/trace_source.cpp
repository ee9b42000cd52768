#include "collector/trace/trace_source.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"

namespace schedlab {
namespace {

constexpr std::size_t kRingPages = 1024;  // 4 MiB per CPU: a switch-heavy second is ~15 MB in all

const std::vector<std::pair<std::string, SchedEvent::Kind>> kTracepoints = {
    {"sched/sched_switch", SchedEvent::Kind::kSwitch},
    {"sched/sched_wakeup", SchedEvent::Kind::kWakeup},
    {"sched/sched_wakeup_new", SchedEvent::Kind::kWakeup},
    {"sched/sched_migrate_task", SchedEvent::Kind::kMigrate},
    {"sched/sched_process_fork", SchedEvent::Kind::kFork}};

std::int64_t read_int(const unsigned char* raw, std::size_t raw_size, const TracepointField& f) {
  if (f.offset + f.size > raw_size) return 0;
  switch (f.size) {
    case 4: {
      std::int32_t v;
      std::memcpy(&v, raw + f.offset, 4);
      return v;
    }
    case 8: {
      std::int64_t v;
      std::memcpy(&v, raw + f.offset, 8);
      return v;
    }
    default:
      return 0;
  }
}

std::string read_comm(const unsigned char* raw, std::size_t raw_size, const TracepointField& f) {
  if (f.offset + f.size > raw_size) return {};
  const char* p = reinterpret_cast<const char*>(raw + f.offset);
  return std::string(p, strnlen(p, f.size));
}

}  // namespace

TraceSource::TraceSource(HostPaths paths, PerfOpener opener)
    : paths_(std::move(paths)), opener_(std::move(opener)) {}

TraceSource::Decoder TraceSource::decoder_for(SchedEvent::Kind kind, TracepointFormat format) {
  Decoder d{kind, std::move(format), {}, {}, {}, {}};
  const auto& f = d.format;
  switch (kind) {
    case SchedEvent::Kind::kSwitch:
      d.pid = f.field("prev_pid");
      d.other = f.field("next_pid");
      d.state = f.field("prev_state");
      d.comm = f.field("prev_comm");
      break;
    case SchedEvent::Kind::kWakeup:
    case SchedEvent::Kind::kMigrate:
      d.pid = f.field("pid");
      break;
    case SchedEvent::Kind::kFork:
      d.pid = f.field("parent_pid");
      d.other = f.field("child_pid");
      break;
  }
  return d;
}

void TraceSource::open_all(const AttachTarget& target) {
  std::filesystem::path tracefs;
  try {
    tracefs = find_tracefs(paths_, note_);
    for (const auto& [name, kind] : kTracepoints)
      decoders_.push_back(decoder_for(kind, read_tracepoint(tracefs, name)));
  } catch (const Error& e) {
    open_errno_ = ENOENT;
    open_reason_ = e.what();
    return;
  }
  for (int cpu : target.cpus) {
    for (std::size_t i = 0; i < decoders_.size(); ++i) {
      perf_event_attr attr{};
      attr.size = sizeof attr;
      attr.type = PERF_TYPE_TRACEPOINT;
      attr.config = decoders_[i].format.id;
      attr.sample_period = 1;
      attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
      attr.disabled = 1;
      attr.watermark = 1;
      attr.wakeup_watermark = static_cast<std::uint32_t>(kRingPages * 4096 / 2);
      // System-wide: a workload task is woken from other tasks' and interrupts' context.
      const int fd = opener_(attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
      if (fd < 0) {
        open_errno_ = -fd;
        open_reason_ = fmt::format("perf_event_open of tracepoint {} on CPU {}: {}: {}",
                                   decoders_[i].format.name, cpu, errno_text(-fd), perf_open_advice(-fd));
        rings_.clear();
        return;
      }
      try {
        if (i == 0)
          rings_.add(fd, kRingPages);
        else
          rings_.add_to_last_ring(fd);
      } catch (const SystemError& e) {
        open_errno_ = e.code();
        open_reason_ = e.what();
        rings_.clear();
        return;
      }
    }
  }
}

void TraceSource::attach(const AttachTarget& target) {
  rings_.clear();
  decoders_.clear();
  events_.clear();
  comms_.clear();
  lost_ = 0;
  root_ = target.pid;
  open_all(target);
}

void TraceSource::decode(const unsigned char* payload, std::size_t size) {
  // PERF_SAMPLE_TIME | CPU | RAW: u64 time; u32 cpu, res; u32 raw size; raw bytes.
  if (size < 20) return;
  SchedEvent e;
  std::memcpy(&e.time_ns, payload, 8);
  std::memcpy(&e.cpu, payload + 8, 4);
  std::uint32_t raw_size;
  std::memcpy(&raw_size, payload + 16, 4);
  const unsigned char* raw = payload + 20;
  if (20 + raw_size > size || raw_size < 2) return;
  std::uint16_t type;
  std::memcpy(&type, raw, 2);
  for (const auto& d : decoders_) {
    if (d.format.id != type) continue;
    e.kind = d.kind;
    e.pid = static_cast<pid_t>(read_int(raw, raw_size, d.pid));
    if (d.other.size) e.other = static_cast<pid_t>(read_int(raw, raw_size, d.other));
    if (d.state.size) e.state = read_int(raw, raw_size, d.state);
    // The name at switch-out is the task's latest (threads name themselves after they start).
    if (d.comm.size) comms_[e.pid] = read_comm(raw, raw_size, d.comm);
    events_.push_back(e);
    return;
  }
}

void TraceSource::enable() {
  rings_.start([this](const perf_event_header& h, const unsigned char* payload, std::size_t size) {
    if (h.type == PERF_RECORD_SAMPLE) {
      decode(payload, size);
    } else if (h.type == PERF_RECORD_LOST && size >= 16) {
      std::uint64_t lost;
      std::memcpy(&lost, payload + 8, 8);
      lost_ += lost;
    }
  });
}

void TraceSource::collect(Repetition& rep) {
  if (rings_.empty()) {
    rep.trace = {{"status", status::kUnsupported}, {"errno", open_errno_}, {"reason", open_reason_}};
    return;
  }
  rings_.stop();
  const auto cpus = rings_.rings();
  rings_.clear();
  // Each CPU's ring is in time order; the CPUs are merged here.
  std::stable_sort(events_.begin(), events_.end(),
                   [](const SchedEvent& a, const SchedEvent& b) { return a.time_ns < b.time_ns; });
  auto tasks = summarise_sched_events(events_, root_, comms_);
  std::map<std::string, std::uint64_t> counts;
  for (const auto& e : events_) {
    static const char* names[] = {"sched_switch", "sched_wakeup", "sched_migrate_task", "sched_process_fork"};
    ++counts[names[static_cast<int>(e.kind)]];
  }
  // The busiest tasks are listed; the totals cover all of them.
  auto summary = to_json(tasks);
  auto& list = summary["tasks"];
  std::sort(list.begin(), list.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["run_s"].get<double>() > b["run_s"].get<double>();
  });
  const auto listed = std::min(list.size(), kListedTasks);
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(listed), list.end());
  rep.trace = {{"status", status::kOk}, {"events", counts},          {"lost_events", lost_},
               {"cpus", cpus},          {"tasks", summary["tasks"]}, {"totals", summary["totals"]},
               {"tasks_listed", listed}};
  if (!note_.empty()) rep.trace["note"] = note_;
  events_.clear();
  events_.shrink_to_fit();
}

}  // namespace schedlab
