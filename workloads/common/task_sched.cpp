#include "workloads/common/task_sched.hpp"

#include <charconv>

#include "core/error.hpp"
#include "core/host_paths.hpp"

namespace schedlab {
namespace {

bool counts(const std::string& key) {
  if (key.rfind("se.avg.", 0) == 0) return false;  // PELT's decaying sums: a state, not a count
  const auto last_dot = key.rfind('.');
  const std::string base = last_dot == std::string::npos ? key : key.substr(last_dot + 1);
  return base.rfind("nr_", 0) == 0 || base.find("_sum") != std::string::npos ||
         base.find("_count") != std::string::npos || base == "sum_exec_runtime";
}

}  // namespace

TaskSched parse_task_sched(const std::string& text, const std::string& source) {
  TaskSched out;
  std::size_t start = 0, line_no = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    // The header ("sh (140, #threads: 1)"), the rule, and "numa_faults node=0 ..." lines carry no field.
    if (line_no <= 2 || line.find(" : ") == std::string::npos) continue;
    const auto colon = line.find(" : ");
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 3));
    double v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (key.empty() || ec != std::errc() || ptr != value.data() + value.size())
      throw InputError(source + ":" + std::to_string(line_no) + ": expected 'FIELD : NUMBER', got '" + line +
                       "'");
    out[key] = v;
  }
  if (out.empty()) throw InputError(source + ": no fields");
  return out;
}

std::optional<TaskSched> read_own_task_sched() {
  const std::string path = "/proc/thread-self/sched";
  auto text = read_text(path);
  if (!text) return std::nullopt;
  try {
    return parse_task_sched(*text, path);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

TaskSched task_sched_delta(const TaskSched& before, const TaskSched& after) {
  TaskSched d;
  for (const auto& [key, v] : after) {
    auto it = before.find(key);
    if (it != before.end() && counts(key)) d[key] = v - it->second;
  }
  return d;
}

}  // namespace schedlab
