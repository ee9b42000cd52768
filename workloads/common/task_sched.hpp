#pragma once
// /proc/<pid>/sched (CONFIG_SCHED_DEBUG): the scheduler's per-task accounting — switches voluntary and
// involuntary, migrations, and with schedstats on, wait_sum/wait_count, wakeups and their kinds.
// A workload thread reads its own before and after its work; the delta goes into the repetition's
// details. Field names differ between kernels (se.statistics.* before 5.x), so every numeric field is kept.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace schedlab {

using TaskSched = std::map<std::string, double>;

// Throws InputError naming `source` and the line on a malformed "key : value" line.
TaskSched parse_task_sched(const std::string& text, const std::string& source);

// The calling thread's, or nullopt where the kernel has no such file or it does not parse: workload
// threads call this, where an exception would end the process, and the extra is not worth a failed run.
std::optional<TaskSched> read_own_task_sched();

// after - before for the counting fields (a field in both whose name says it counts or sums);
// point-in-time fields (exec_start, vruntime, load averages, *_max) are left out.
TaskSched task_sched_delta(const TaskSched& before, const TaskSched& after);

}  // namespace schedlab
