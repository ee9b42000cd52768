#pragma once
// Change points of the store's nightly series (`schedlab changes`), as the exporter shows them: the
// families schedlab_change_points (what alert rules count) and schedlab_change_point_* (the size, its
// interval and the time, for dashboards). The catalogue and the reasons: daemon/exporter/README.md.
#include <cstddef>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

namespace schedlab {

struct ExportedChange {
  std::string host, workload, metric, instance_id, params_hash;
  std::string configuration;  // the configuration label of the first run after the change
  std::string direction;      // "worse" or "better" (from the metric's better direction)
  std::string status;         // "suspected", "confirmed", "not reproduced", "unconfirmable"
  std::string at;  // ISO 8601 UTC start of the first run after the change, e.g. 2026-12-06T02:06:03Z
  double relative_change = 0;                     // after median / before median - 1 (e.g. 0.052 for +5.2%)
  double relative_lower = 0, relative_upper = 0;  // its 95% interval, same units
};

// Only the newest this many changes (the end of the daemon's list) are exported: each one is a few series
// with its own `at`, and a Prometheus series is paid for as long as it is retained. History is in the store.
inline constexpr std::size_t kExportedChangesMax = 100;

// The change-point families for `changes` (newest last; only the newest kExportedChangesMax), each series
// labelled `class` = `host_class` beside its host (the daemon's changes are its own host's). A change
// whose `at` does not read as ISO 8601 UTC is left out and named in `errors` ("" when none).
std::vector<prometheus::MetricFamily> change_point_families(const std::vector<ExportedChange>& changes,
                                                            const std::string& host_class,
                                                            std::string& errors);

}  // namespace schedlab
