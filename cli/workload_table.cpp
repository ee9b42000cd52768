#include "cli/workload_table.hpp"

#include "daemon/exporter/headline.hpp"
#include "workloads/registry.hpp"

namespace schedlab {

nlohmann::json workload_table() {
  nlohmann::json workloads = nlohmann::json::array();
  for (const auto& entry : builtin_workloads()) {
    const auto w = entry.make();
    nlohmann::json metrics = nlohmann::json::array();
    bool operations = false;
    for (const auto& m : w->metrics()) {
      operations = operations || m.name == "operations";
      metrics.push_back({{"name", m.name},
                         {"unit", m.unit},
                         {"direction", to_string(m.direction)},
                         {"headline", m.headline},
                         {"family", prometheus_name(w->name(), m.name, m.unit)},
                         {"help", m.help}});
    }
    workloads.push_back({{"name", w->name()},
                         {"summary", w->summary()},
                         {"operations", operations},
                         {"latency_histogram", w->records_latency_histogram()},
                         {"metrics", metrics}});
  }
  return {{"workloads", workloads}};
}

}  // namespace schedlab
