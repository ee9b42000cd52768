#include "daemon/exporter/process_metrics.hpp"

#include <unistd.h>

#include <charconv>
#include <sstream>

namespace schedlab {

namespace {

std::optional<double> number(const std::string& s) {
  double v = 0;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// Fields of /proc/PID/stat from field 3 (state) on: the command name (field 2) may hold spaces and
// parentheses, so it is skipped up to the *last* ')'.
std::vector<std::string> stat_fields(const std::string& text) {
  const auto close = text.rfind(')');
  if (close == std::string::npos) return {};
  return split_ws(text.substr(close + 1));
}

// proc(5) numbers the fields from 1; stat_fields() starts at field 3.
std::optional<double> stat_field(const std::vector<std::string>& f, std::size_t proc5_number) {
  if (proc5_number < 3 || proc5_number - 3 >= f.size()) return std::nullopt;
  return number(f[proc5_number - 3]);
}

std::optional<double> boot_time(const HostPaths& paths) {
  auto text = read_text(paths.proc / "stat");
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("btime ", 0) == 0) return number(trim(line.substr(6)));
  return std::nullopt;
}

std::optional<double> max_open_files(const std::filesystem::path& limits) {
  auto text = read_text(limits);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  // "Max open files            1048576              1048576              files"
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    auto f = split_ws(line.substr(14));
    if (f.empty() || f[0] == "unlimited") return std::nullopt;
    return number(f[0]);
  }
  return std::nullopt;
}

prometheus::MetricFamily gauge(const std::string& name, const std::string& help, double v,
                               prometheus::MetricType type = prometheus::MetricType::Gauge) {
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = v;
  } else {
    m.gauge.value = v;
  }
  return {name, help, type, {m}};
}

}  // namespace

ProcessClock ProcessClock::live() {
  return {::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE)};
}

ProcessSample read_process_sample(const HostPaths& paths, const std::string& pid, const ProcessClock& clock) {
  ProcessSample s;
  const auto dir = paths.proc / pid;
  const double ticks = static_cast<double>(clock.ticks_per_second);
  if (auto stat = read_text(dir / "stat"); stat && ticks > 0) {
    const auto f = stat_fields(*stat);
    auto utime = stat_field(f, 14), stime = stat_field(f, 15), start = stat_field(f, 22);
    if (utime && stime) s.cpu_seconds = (*utime + *stime) / ticks;
    s.virtual_bytes = stat_field(f, 23);
    if (auto btime = boot_time(paths); btime && start) s.start_time_seconds = *btime + *start / ticks;
  }
  if (auto statm = read_text(dir / "statm")) {
    auto f = split_ws(*statm);  // size resident shared text lib data dt, in pages
    if (f.size() >= 2)
      if (auto pages = number(f[1])) s.resident_bytes = *pages * static_cast<double>(clock.page_size);
  }
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator(dir / "fd", ec); !ec && it != std::filesystem::end(it);
       it.increment(ec))
    ++fds;
  if (!ec) s.open_fds = fds;
  s.max_fds = max_open_files(dir / "limits");
  return s;
}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  const auto s = read_process_sample(paths_, pid_, clock_);
  std::vector<prometheus::MetricFamily> out;
  if (s.cpu_seconds)
    out.push_back(gauge("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                        *s.cpu_seconds, prometheus::MetricType::Counter));
  if (s.resident_bytes)
    out.push_back(
        gauge("process_resident_memory_bytes", "Resident memory size in bytes.", *s.resident_bytes));
  if (s.virtual_bytes)
    out.push_back(gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", *s.virtual_bytes));
  if (s.start_time_seconds)
    out.push_back(gauge("process_start_time_seconds",
                        "Start time of the process since unix epoch in seconds.", *s.start_time_seconds));
  if (s.open_fds) out.push_back(gauge("process_open_fds", "Number of open file descriptors.", *s.open_fds));
  if (s.max_fds)
    out.push_back(gauge("process_max_fds", "Maximum number of open file descriptors.", *s.max_fds));
  return out;
}

}  // namespace schedlab
