#pragma once
// Change points of the store's series: one series per (workload, metric, host, instance id, parameters
// hash), one value per run (the median of its ok repetitions), oldest first, across kernels and
// configurations so that a switch of either shows as a change (stats/README.md has the method).
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/store/store.hpp"
#include "stats/change_points.hpp"

namespace schedlab {

struct SeriesKey {
  std::string workload, metric, host, instance_id, params_hash;
  auto operator<=>(const SeriesKey&) const = default;
  std::string text() const;  // "workload/metric/host/instance_id/params_hash": the store's series key
};

struct SeriesChange {
  SeriesKey key;
  std::string unit;
  std::string direction;  // "worse" or "better": the after side against the before side, by the metric
  HistoryPoint before;    // the last run before the change
  HistoryPoint after;     // the first run after it
  // Runs 3 before and 3 after the first run after (inside the change's segments): where a configuration
  // switched, the split found can sit a run or two beside it (a run before the switch that was slow by
  // chance ranks with those after), so a rerun compares these, not the adjacent two.
  HistoryPoint well_before, well_after;
  stats::ChangePoint change;
  std::vector<std::string> differences;  // "field: before -> after" of the two runs' identities
  std::vector<std::string> nearby;       // starts of the runs within 2 of the first run after: a change
                                         // found again one or two runs off, as data arrive, is the same one
};

struct ChangeQuery {
  std::string workload;                // "" any
  std::string metric;                  // "" every headline metric
  std::string host;                    // "" any
  std::set<std::string> instance_ids;  // empty: any
  std::string since;                   // "" any; else changes whose first run after starts at or after
};

struct ChangeSearch {
  std::size_t series = 0;             // series searched
  std::vector<SeriesChange> changes;  // by the first run after, oldest first
};

// Throws InputError for an unknown workload or metric (naming the known ones).
ChangeSearch find_changes(Store& store, const ChangeQuery& query, const stats::ChangePointOptions& options);

// The identities of two runs that differ: the store's configuration and kernel release, and the bundles'
// label, configuration, kernel and environment when their files are there (values that differ on every
// run by nature — load, counts, a switch's own timing — are left out).
std::vector<std::string> identity_differences(const HistoryPoint& a, const HistoryPoint& b);

}  // namespace schedlab
