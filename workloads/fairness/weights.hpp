#pragma once
// The arithmetic of the fairness workload, apart from its threads: the kernel's nice-to-weight
// table, the `nices` list, and shares against the shares the weights entitle.
#include <array>
#include <string>
#include <vector>

namespace schedlab::fairness {

// kernel/sched/core.c, sched_prio_to_weight[40] (unchanged from 2.6.23's prio_to_weight through the
// EEVDF kernels): nice -20 first, nice 0 = 1024 (NICE_0_LOAD), each step about 1.25x. What CFS and
// EEVDF divide CPU time by; copied, never computed, since the kernel's values are rounded integers
// (nice 1 is 820, not 1024 / 1.25 = 819.2).
inline constexpr std::array<int, 40> kNiceToWeight = {
    /* -20 */ 88761, 71755, 56483, 46273, 36291,
    /* -15 */ 29154, 23254, 18705, 14949, 11916,
    /* -10 */ 9548,  7620,  6100,  4904,  3906,
    /*  -5 */ 3121,  2501,  1991,  1586,  1277,
    /*   0 */ 1024,  820,   655,   526,   423,
    /*   5 */ 335,   272,   215,   172,   137,
    /*  10 */ 110,   87,    70,    56,    45,
    /*  15 */ 36,    29,    23,    18,    15,
};

int weight_of_nice(int nice);  // nice in [-20, 19]

inline constexpr int kMinTasks = 2, kMaxTasks = 64;

// "0,5,-3" -> {0, 5, -3}; throws InputError "NAME: entry K ('TEXT') ..." naming the bad entry.
std::vector<int> parse_nices(const std::string& text, const std::string& name);

struct TaskShare {
  int cpu = -1;
  int nice = 0;
  int weight = 0;
  double cpu_ns = 0;
  double share = 0;     // its CPU time / the CPU time of all tasks on its CPU
  double entitled = 0;  // its weight / the weights of all tasks on its CPU
  double error() const { return share / entitled - 1.0; }
};

// Tasks pinned to one CPU compete only with each other, so a CPU's tasks form a group and shares and
// entitlements are fractions of the group's. Throws Error when a group ran for no time at all.
std::vector<TaskShare> shares(const std::vector<int>& cpus, const std::vector<int>& nices,
                              const std::vector<double>& cpu_ns);

// Jain's fairness index (sum x)^2 / (n sum x^2) over x = share / entitled: 1 when every task got what it
// is entitled to, 1/n when one task got everything.
double jain_index(const std::vector<TaskShare>& tasks);

// The largest |share / entitled - 1|.
double max_share_error(const std::vector<TaskShare>& tasks);

}  // namespace schedlab::fairness
