#pragma once
// Parsers of the system-wide scheduler-relevant tables in /proc: CPU time per CPU (/proc/stat) and
// per-CPU event counts (/proc/interrupts, /proc/softirqs). Each throws InputError naming the origin
// (a path) and the line of a malformed input.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace schedlab {

// The columns of a `cpuN` line of /proc/stat, in clock ticks (USER_HZ).
enum CpuTimeField { kUser, kNice, kSystem, kIdle, kIowait, kIrq, kSoftirq, kSteal, kGuest, kGuestNice };
inline constexpr std::array<const char*, 10> kCpuTimeNames = {
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice"};

struct ProcStat {
  std::map<int, std::array<std::uint64_t, 10>> cpus;  // by CPU number; absent fields of old kernels are 0
  std::uint64_t context_switches = 0;                 // "ctxt"
  std::uint64_t forks = 0;                            // "processes"
};

ProcStat parse_proc_stat(const std::string& text, const std::string& origin);

// /proc/interrupts and /proc/softirqs: a header naming the CPU columns, then `NAME: count per CPU
// [description]`. Rows with fewer counts than CPUs (ERR, MIS: one system-wide count) are left out.
struct PerCpuTable {
  std::vector<int> cpus;                                   // the header's CPU numbers, in column order
  std::map<std::string, std::vector<std::uint64_t>> rows;  // name -> count per column
};

PerCpuTable parse_per_cpu_table(const std::string& text, const std::string& origin);

}  // namespace schedlab
