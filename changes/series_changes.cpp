#include "changes/series_changes.hpp"

#include <algorithm>
#include <map>

#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "workloads/registry.hpp"

namespace schedlab {

std::string SeriesKey::text() const {
  return workload + "/" + metric + "/" + host + "/" + instance_id + "/" + params_hash;
}

namespace {

// Values that differ on every run by nature (load, counts, the switch's own timing and throttling):
// never reported as what changed.
bool volatile_field(const std::string& path) {
  for (const char* v :
       {"bundle.environment/load_avg", "bundle.environment/procs_running", "bundle.environment/procs_total",
        "bundle.environment/steal_ticks", "bundle.environment/runtime_switch/apply_ms",
        "bundle.environment/runtime_switch/cgroup", "bundle.environment/runtime_switch/restore_ms",
        "bundle.environment/runtime_switch/cpu_stat"})
    if (path.rfind(v, 0) == 0) return true;
  return false;
}

void flatten(const nlohmann::json& j, const std::string& path, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, path + "/" + k, out);
    return;
  }
  if (!volatile_field(path.substr(1))) out[path.substr(1)] = j.is_string() ? j.get<std::string>() : j.dump();
}

std::string shortened(const std::string& s, std::size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

}  // namespace

std::vector<std::string> identity_differences(const HistoryPoint& a, const HistoryPoint& b) {
  std::map<std::string, std::string> fa{{"configuration", a.configuration},
                                        {"kernel_release", a.kernel_release}},
      fb{{"configuration", b.configuration}, {"kernel_release", b.kernel_release}};
  std::vector<std::string> out;
  try {
    const Bundle ba = load_bundle(a.bundle_path), bb = load_bundle(b.bundle_path);
    fa["label"] = ba.label;
    fb["label"] = bb.label;
    const std::pair<const char*, const nlohmann::json Bundle::*> parts[] = {
        {"configuration", &Bundle::configuration},
        {"kernel", &Bundle::kernel},
        {"environment", &Bundle::environment}};
    for (const auto& [name, member] : parts) {
      flatten(ba.*member, std::string("/bundle.") + name, fa);
      flatten(bb.*member, std::string("/bundle.") + name, fb);
    }
  } catch (const std::exception& e) {
    out.push_back("(bundles not compared: " + std::string(e.what()) + ")");
  }
  for (const auto& [k, v] : fb)
    if (fa[k] != v) out.push_back(k + ": " + shortened(fa[k], 30) + " -> " + shortened(v, 30));
  for (const auto& [k, v] : fa)
    if (!fb.count(k)) out.push_back(k + ": " + shortened(v, 30) + " -> (none)");
  return out;
}

ChangeSearch find_changes(Store& store, const ChangeQuery& query, const stats::ChangePointOptions& options) {
  struct Wanted {
    std::string workload, metric;
    Direction direction;
  };
  std::vector<Wanted> wanted;
  std::vector<std::string> known_metrics;
  for (const auto& entry : builtin_workloads()) {
    if (!query.workload.empty() && entry.name != query.workload) continue;
    const auto w = entry.make();
    bool declared = false;
    for (const auto& m : w->metrics()) {
      known_metrics.push_back(m.name);
      declared = declared || m.name == query.metric;
      if (query.metric.empty() ? m.headline : m.name == query.metric)
        wanted.push_back({entry.name, m.name, m.direction});
    }
    // A metric a bundle recorded that the workload does not declare (any more) is a series when named.
    if (!query.metric.empty() && !declared)
      for (const auto& m : store.metric_names(entry.name)) {
        known_metrics.push_back(m);
        if (m == query.metric) wanted.push_back({entry.name, m, Direction::kLowerIsBetter});
      }
  }
  if (!query.workload.empty()) make_workload(query.workload);  // throws "unknown workload 'X' (known: ...)"
  if (!query.metric.empty() && wanted.empty()) {
    std::sort(known_metrics.begin(), known_metrics.end());
    known_metrics.erase(std::unique(known_metrics.begin(), known_metrics.end()), known_metrics.end());
    std::string known;
    for (const auto& m : known_metrics) known += (known.empty() ? "" : ", ") + m;
    throw InputError("--metric " + query.metric + ": not a metric" +
                     (query.workload.empty() ? "" : " of " + query.workload) + " (known: " + known + ")");
  }

  std::map<SeriesKey, std::vector<HistoryPoint>> series;
  std::map<SeriesKey, Direction> directions;
  for (const auto& w : wanted)
    for (auto& p : store.history(w.workload, w.metric, "", "", "")) {
      if (!query.host.empty() && p.host != query.host) continue;
      if (!query.instance_ids.empty() && !query.instance_ids.count(p.instance_id)) continue;
      SeriesKey key{w.workload, w.metric, p.host, p.instance_id, p.params_hash};
      directions[key] = w.direction;
      series[key].push_back(std::move(p));
    }
  ChangeSearch out;
  out.series = series.size();
  for (const auto& [key, points] : series) {
    std::vector<double> values;
    for (const auto& p : points) values.push_back(p.median);
    for (const auto& c : stats::change_points(values, options)) {
      const auto& after = points[c.index];
      if (!query.since.empty() && after.started_at < query.since) continue;
      const bool up = c.after_median > c.before_median;
      const bool worse = directions[key] == Direction::kLowerIsBetter ? up : !up;
      std::vector<std::string> nearby;
      for (std::size_t i = c.index >= 2 ? c.index - 2 : 0; i < std::min(points.size(), c.index + 3); ++i)
        nearby.push_back(points[i].started_at);
      const std::size_t well_before = c.index >= c.before_begin + 3 ? c.index - 3 : c.before_begin;
      const std::size_t well_after = std::min(c.after_end - 1, c.index + 2);
      out.changes.push_back({key, after.unit, worse ? "worse" : "better", points[c.index - 1], after,
                             points[well_before], points[well_after], c,
                             identity_differences(points[c.index - 1], after), std::move(nearby)});
    }
  }
  std::sort(out.changes.begin(), out.changes.end(), [](const SeriesChange& a, const SeriesChange& b) {
    return a.after.started_at < b.after.started_at;
  });
  return out;
}

}  // namespace schedlab
