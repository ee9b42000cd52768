#pragma once
// /proc/schedstat, versions 15 (up to 6.5), 16 (6.6-6.13: the idle-type columns swapped) and 17 (6.14+:
// domain names, the imbalance split four ways), parsed into one version-independent shape whose field
// names follow Documentation/scheduler/sched-stats.rst. Counters only ever increase; a delta of two
// readings is what means something.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace schedlab {

struct SchedstatDomain {
  std::string name;     // "SMT", "MC", "PKG", "NUMA", ...; empty before version 17
  std::string cpumask;  // as printed (hex, comma-separated words)
  // "busy.lb_count", "idle.lb_failed", "newidle.lb_gained", ... "alb_pushed", "ttwu_wake_remote".
  std::map<std::string, std::uint64_t> fields;
};

struct SchedstatCpu {
  int cpu = -1;
  // yld_count, sched_count, sched_goidle, ttwu_count, ttwu_local, rq_cpu_time_ns, run_delay_ns, pcount
  std::map<std::string, std::uint64_t> fields;
  std::vector<SchedstatDomain> domains;  // domain0 (the tightest) first
};

struct Schedstat {
  int version = 0;
  std::uint64_t timestamp = 0;  // jiffies
  std::vector<SchedstatCpu> cpus;
};

// Throws InputError naming origin and line: an unknown version, a short or non-numeric line, a domain
// line before any cpu line.
Schedstat parse_schedstat(const std::string& text, const std::string& origin);

// after - before, per CPU and domain; throws InputError when the two do not describe the same CPUs and
// domains, or a counter went backwards.
Schedstat schedstat_delta(const Schedstat& before, const Schedstat& after);

}  // namespace schedlab
