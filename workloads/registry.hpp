#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "workloads/workload.hpp"

namespace schedlab {

struct WorkloadEntry {
  std::string name;
  std::function<std::unique_ptr<Workload>()> make;
};

// The built-in workloads, in listing order. Adding a workload adds one line to registry.cpp.
const std::vector<WorkloadEntry>& builtin_workloads();

// Throws InputError listing the known names.
std::unique_ptr<Workload> make_workload(const std::string& name);

}  // namespace schedlab
