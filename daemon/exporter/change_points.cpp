#include "daemon/exporter/change_points.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "daemon/exporter/headline.hpp"

namespace schedlab {

namespace {

using Labels = std::map<std::string, std::string>;

// Label values are matched by alert rules and Grafana; a space in one ("not reproduced") needs quoting in
// every matcher someone writes by hand, so statuses are spelt with underscores.
std::string label_value(std::string s) {
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

// params_hash too, though alert rules need not read it: an instance is its id and its parameters' hash
// everywhere else in this exporter, and two instances sharing an id must not share a count.
Labels counted_labels(const ExportedChange& c, const std::string& host_class) {
  return {{"host", c.host},
          {"class", host_class},
          {"workload", c.workload},
          {"metric", c.metric},
          {"instance_id", c.instance_id},
          {"params_hash", c.params_hash},
          {"configuration", c.configuration},
          {"direction", label_value(c.direction)},
          {"status", label_value(c.status)}};
}

prometheus::MetricFamily gauge_family(const std::string& name, const std::string& help) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = prometheus::MetricType::Gauge;
  return f;
}

void add(prometheus::MetricFamily& family, const Labels& labels, double value) {
  prometheus::ClientMetric m;
  for (const auto& [k, v] : labels) m.label.push_back({k, v});
  m.gauge.value = value;
  family.metric.push_back(std::move(m));
}

}  // namespace

std::vector<prometheus::MetricFamily> change_point_families(const std::vector<ExportedChange>& changes,
                                                            const std::string& host_class,
                                                            std::string& errors) {
  errors.clear();
  const std::size_t first = changes.size() > kExportedChangesMax ? changes.size() - kExportedChangesMax : 0;
  std::map<Labels, int> counts;
  // Keyed by labels with `at`: two reports of one change (same labels, same time) are one series, the
  // newer report's values, rather than a duplicate series Prometheus would reject the scrape for.
  struct Sized {
    double change, lower, upper, seconds;
  };
  std::map<Labels, Sized> sized;
  for (std::size_t i = first; i < changes.size(); ++i) {
    const auto& c = changes[i];
    const std::optional<double> seconds = utc_seconds(c.at);
    if (!seconds) {
      errors += (errors.empty() ? "" : "; ") + std::string("change point of ") + c.workload + " " + c.metric +
                " (" + c.instance_id + ") at \"" + c.at + "\": not an ISO 8601 UTC time";
      continue;
    }
    auto labels = counted_labels(c, host_class);
    ++counts[labels];
    labels["at"] = c.at;
    sized[labels] = {c.relative_change, c.relative_lower, c.relative_upper, *seconds};
  }
  // The time series carries the size as text too: a Grafana annotation whose time is the series' value can
  // show only labels, and the size is what a reader wants on the marker.
  auto shown = [](double change, double lower, double upper) {
    char text[96];
    std::snprintf(text, sizeof text, "%+.1f%% (95%%: %+.1f%% to %+.1f%%)", change * 100, lower * 100,
                  upper * 100);
    return std::string(text);
  };

  auto count = gauge_family("schedlab_change_points",
                            "Change points of the nightly series (schedlab changes) with these labels, "
                            "the newest 100; status suspected, confirmed, not_reproduced or unconfirmable");
  for (const auto& [labels, n] : counts) add(count, labels, n);
  auto change = gauge_family("schedlab_change_point_relative_change",
                             "Size of a change point: after median / before median - 1 (0.052 = +5.2%)");
  auto lower = gauge_family("schedlab_change_point_relative_change_lower",
                            "Lower bound of the 95% interval of schedlab_change_point_relative_change");
  auto upper = gauge_family("schedlab_change_point_relative_change_upper",
                            "Upper bound of the 95% interval of schedlab_change_point_relative_change");
  auto time = gauge_family("schedlab_change_point_timestamp_seconds",
                           "Start of the first run after a change point, in seconds since the epoch");
  for (const auto& [labels, s] : sized) {
    add(change, labels, s.change);
    add(lower, labels, s.lower);
    add(upper, labels, s.upper);
    auto with_size = labels;
    with_size["size"] = shown(s.change, s.lower, s.upper);
    add(time, with_size, s.seconds);
  }
  std::vector<prometheus::MetricFamily> out;
  for (auto* f : {&count, &change, &lower, &upper, &time})
    if (!f->metric.empty()) out.push_back(std::move(*f));
  return out;
}

}  // namespace schedlab
