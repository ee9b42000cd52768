#pragma once
// One placement vocabulary for every workload (DESIGN.md), defined by the machine's topology.
#include <string>
#include <vector>

#include "core/topology.hpp"
#include "workloads/params.hpp"

namespace schedlab {

enum class Placement {
  kSameThread,
  kSameCpu,
  kSmtSibling,
  kOtherCore,
  kOtherLlc,
  kOtherNode,
  kSpread,
  kUnpinned
};

// The vocabulary as parameter choices, in documentation order.
std::vector<std::string> placement_choices();
// The `placement` parameter (default unpinned); `help` says what is placed and how.
ParamSpec placement_param(const std::string& help);
Placement parse_placement(const std::string& text);  // throws InputError
std::string to_string(Placement p);

// The CPU of each of `tasks` tasks (-1 = not pinned). For the relational levels the tasks
// alternate between an anchor CPU and a partner CPU at that level (task 0 on the anchor);
// same-cpu puts all on the anchor; spread deals them round-robin over the allowed CPUs.
// Throws InputError naming the missing level when the topology or affinity lacks it.
std::vector<int> assign_cpus(Placement p, int tasks, const Topology& topo, const std::vector<int>& allowed);

// The CPUs tasks placed by assign_cpus may run on: the pinned CPUs, once each and in order, or every
// allowed CPU when a task is not pinned.
std::vector<int> cpus_in_use(const std::vector<int>& assigned, const std::vector<int>& allowed);

}  // namespace schedlab
