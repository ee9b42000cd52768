#include "collector/sysstats/proc_tables.hpp"

#include <fmt/format.h>

#include "collector/sysstats/proc_text.hpp"
#include "core/error.hpp"

namespace schedlab {

ProcStat parse_proc_stat(const std::string& text, const std::string& origin) {
  ProcStat s;
  bool saw_cpu = false;
  for_each_line(text, [&](std::size_t line_no, const std::vector<std::string>& words) {
    const auto& key = words[0];
    if (key.rfind("cpu", 0) == 0 && key.size() > 3) {
      const int cpu = numbered(key, "cpu");
      if (cpu < 0) malformed_line(origin, line_no, "'" + key + "' is not a CPU line");
      // Kernels since 2.6.33 print all ten columns; 2.6.11+ at least eight.
      if (words.size() < 5)
        malformed_line(origin, line_no, key + " has " + std::to_string(words.size() - 1) + " fields");
      std::array<std::uint64_t, 10> ticks{};
      for (std::size_t i = 1; i < words.size() && i <= ticks.size(); ++i) {
        if (!parse_count(words[i], ticks[i - 1]))
          malformed_line(origin, line_no, fmt::format("{} field {} is '{}', not a count", key, i, words[i]));
      }
      s.cpus[cpu] = ticks;
      saw_cpu = true;
    } else if ((key == "ctxt" || key == "processes") && words.size() >= 2) {
      if (!parse_count(words[1], key == "ctxt" ? s.context_switches : s.forks))
        malformed_line(origin, line_no, key + " is '" + words[1] + "', not a count");
    }
  });
  if (!saw_cpu) throw InputError(origin + ": no cpuN lines (not a /proc/stat?)");
  return s;
}

PerCpuTable parse_per_cpu_table(const std::string& text, const std::string& origin) {
  PerCpuTable t;
  for_each_line(text, [&](std::size_t line_no, const std::vector<std::string>& words) {
    if (line_no == 1) {
      for (const auto& w : words) {
        const int cpu = numbered(w, "CPU");
        if (cpu < 0) malformed_line(origin, line_no, "header column '" + w + "' is not CPUn");
        t.cpus.push_back(cpu);
      }
      return;
    }
    if (t.cpus.empty()) malformed_line(origin, line_no, "no CPU header");
    auto name = words[0];
    if (name.size() < 2 || name.back() != ':') malformed_line(origin, line_no, "'" + name + "' is not NAME:");
    name.pop_back();
    std::vector<std::uint64_t> counts;
    for (std::size_t i = 1; i < words.size() && counts.size() < t.cpus.size(); ++i) {
      std::uint64_t v = 0;
      if (!parse_count(words[i], v)) break;  // the description after the counts
      counts.push_back(v);
    }
    if (counts.size() == t.cpus.size()) {
      t.rows[name] = std::move(counts);
    } else if (!(counts.size() == 1 && (name == "ERR" || name == "MIS"))) {
      malformed_line(origin, line_no,
                     fmt::format("{} has {} counts for {} CPUs", name, counts.size(), t.cpus.size()));
    }
  });
  if (t.cpus.empty()) throw InputError(origin + ": empty (no CPU header)");
  return t;
}

}  // namespace schedlab
