#include "collector/sysstats/proc_tables.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/host_paths.hpp"

namespace schedlab {
namespace {

bool to_u64(const std::string& word, std::uint64_t& out) {
  const char* end = word.data() + word.size();
  auto [ptr, ec] = std::from_chars(word.data(), end, out);
  return ec == std::errc() && ptr == end;
}

[[noreturn]] void malformed(const std::string& origin, std::size_t line, const std::string& what) {
  throw InputError(fmt::format("{}:{}: {}", origin, line, what));
}

}  // namespace

ProcStat parse_proc_stat(const std::string& text, const std::string& origin) {
  ProcStat s;
  std::size_t line_no = 0, start = 0;
  bool saw_cpu = false;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    auto words = split_ws(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (words.empty()) continue;
    const auto& key = words[0];
    if (key.rfind("cpu", 0) == 0 && key.size() > 3) {
      int cpu = -1;
      auto [ptr, ec] = std::from_chars(key.data() + 3, key.data() + key.size(), cpu);
      if (ec != std::errc() || ptr != key.data() + key.size() || cpu < 0)
        malformed(origin, line_no, "'" + key + "' is not a CPU line");
      // Kernels since 2.6.33 print all ten columns; 2.6.11+ at least eight.
      if (words.size() < 5)
        malformed(origin, line_no, key + " has " + std::to_string(words.size() - 1) + " fields");
      std::array<std::uint64_t, 10> ticks{};
      for (std::size_t i = 1; i < words.size() && i <= ticks.size(); ++i) {
        if (!to_u64(words[i], ticks[i - 1]))
          malformed(origin, line_no, fmt::format("{} field {} is '{}', not a count", key, i, words[i]));
      }
      s.cpus[cpu] = ticks;
      saw_cpu = true;
    } else if ((key == "ctxt" || key == "processes") && words.size() >= 2) {
      if (!to_u64(words[1], key == "ctxt" ? s.context_switches : s.forks))
        malformed(origin, line_no, key + " is '" + words[1] + "', not a count");
    }
  }
  if (!saw_cpu) throw InputError(origin + ": no cpuN lines (not a /proc/stat?)");
  return s;
}

PerCpuTable parse_per_cpu_table(const std::string& text, const std::string& origin) {
  PerCpuTable t;
  std::size_t line_no = 0, start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const auto line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    auto words = split_ws(line);
    if (words.empty()) continue;
    if (line_no == 1) {
      for (const auto& w : words) {
        int cpu = -1;
        if (w.rfind("CPU", 0) != 0 ||
            std::from_chars(w.data() + 3, w.data() + w.size(), cpu).ec != std::errc())
          malformed(origin, line_no, "header column '" + w + "' is not CPUn");
        t.cpus.push_back(cpu);
      }
      continue;
    }
    if (t.cpus.empty()) malformed(origin, line_no, "no CPU header");
    auto name = words[0];
    if (name.size() < 2 || name.back() != ':') malformed(origin, line_no, "'" + name + "' is not NAME:");
    name.pop_back();
    std::vector<std::uint64_t> counts;
    for (std::size_t i = 1; i < words.size() && counts.size() < t.cpus.size(); ++i) {
      std::uint64_t v = 0;
      if (!to_u64(words[i], v)) break;  // the description after the counts
      counts.push_back(v);
    }
    if (counts.size() == t.cpus.size()) {
      t.rows[name] = std::move(counts);
    } else if (!(counts.size() == 1 && (name == "ERR" || name == "MIS"))) {
      malformed(origin, line_no,
                fmt::format("{} has {} counts for {} CPUs", name, counts.size(), t.cpus.size()));
    }
  }
  if (t.cpus.empty()) throw InputError(origin + ": empty (no CPU header)");
  return t;
}

}  // namespace schedlab
