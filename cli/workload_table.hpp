#pragma once
// `schedlab workloads --json`: the registry as data for what is generated outside C++ (the Grafana
// dashboards, dashboards/workloads.json): each workload's metrics with the exporter's family names, so
// that a workload registered here reaches the dashboards without a table of its own elsewhere.
#include <nlohmann/json.hpp>

namespace schedlab {

nlohmann::json workload_table();

}  // namespace schedlab
