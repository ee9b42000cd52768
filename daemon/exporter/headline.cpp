#include "daemon/exporter/headline.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/stats.hpp"

namespace schedlab {

namespace {

std::vector<std::string> split_tokens(const std::string& name) {
  std::vector<std::string> out(1);
  for (char c : name) {
    if (c == '_') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string join_tokens(const std::vector<std::string>& tokens) {
  std::string out;
  for (const auto& t : tokens) {
    if (t.empty()) continue;
    if (!out.empty()) out += '_';
    out += t;
  }
  return out;
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += ((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '_') ? l : '_';
  }
  return out;
}

}  // namespace

std::optional<BaseUnit> base_unit(const std::string& unit) {
  // The units the workloads declare (`schedlab workloads`). MB/s is 10^6 bytes (tbench's definition);
  // a percentage becomes a 0..1 ratio, as Prometheus base units want.
  static const std::map<std::string, BaseUnit> table = {
      {"ns", {1e-9, "seconds", {"ns"}}},
      {"us", {1e-6, "seconds", {"us"}}},
      {"ms", {1e-3, "seconds", {"ms"}}},
      {"s", {1, "seconds", {"s"}}},
      {"MB/s", {1e6, "bytes_per_second", {"mb", "s"}}},
      {"msg/s", {1, "per_second", {"s"}}},
      {"ops/s", {1, "per_second", {"s"}}},
      {"pct", {0.01, "ratio", {"pct"}}},
      {"count", {1, "", {}}},
  };
  auto it = table.find(unit);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

std::string prometheus_name(const std::string& workload, const std::string& metric, const std::string& unit) {
  auto tokens = split_tokens(sanitize(metric));
  const auto base = base_unit(unit);
  if (base && !base->spelt.empty()) {
    const auto& sp = base->spelt;
    // The last place the unit is spelt: "throughput_mb_s" ends with it, "ns_per_yield" starts with it.
    for (std::size_t i = tokens.size() >= sp.size() ? tokens.size() - sp.size() + 1 : 0; i-- > 0;) {
      if (!std::equal(sp.begin(), sp.end(), tokens.begin() + static_cast<std::ptrdiff_t>(i))) continue;
      const auto after = tokens.begin() + static_cast<std::ptrdiff_t>(i + sp.size());
      if (base->suffix == "seconds" && after != tokens.end() && *after == "per") {
        // "ns_per_yield": the time one yield takes.
        std::vector<std::string> rest(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(i));
        rest.insert(rest.end(), after + 1, tokens.end());
        rest.push_back("duration");
        tokens = rest;
      } else {
        tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(i), after);
      }
      break;
    }
  }
  std::string name = join_tokens(tokens);
  if (name.empty()) name = "value";
  if (base && !base->suffix.empty()) name += "_" + base->suffix;
  return "schedlab_" + sanitize(workload) + "_" + name;
}

const std::vector<double>& latency_bounds_seconds() {
  static const std::vector<double> bounds = [] {
    std::vector<double> b;
    for (double decade = 1e-6; decade < 5; decade *= 10)
      for (double m : {1.0, 2.0, 3.0, 5.0, 7.0}) b.push_back(m * decade);
    b.push_back(10.0);
    return b;
  }();
  return bounds;
}

namespace {

// Adds one repetition's LatencyHistogram JSON to `out`; false when it is not in that format.
bool add_histogram(const nlohmann::json& h, LatencyBuckets& out) {
  if (!h.is_object() || h.value("unit", "") != "us" || !h.contains("buckets") || !h["buckets"].is_array())
    return false;
  const auto& bounds = latency_bounds_seconds();
  for (const auto& b : h["buckets"]) {
    if (!b.is_array() || b.size() != 3) return false;
    const double lower = b[0].get<double>() * 1e-6, upper = b[1].get<double>() * 1e-6;
    const double n = b[2].get<double>();
    // The first exported bound at or above the source bucket's upper edge; a source bucket is
    // [lower, upper), so all of it lies below that bound. (A scheme whose buckets straddled our bounds
    // would land one exported bucket high: never low.) The 1e-12 absorbs the us -> s rounding.
    const auto it = std::lower_bound(bounds.begin(), bounds.end(), upper - 1e-12);
    out.counts[static_cast<std::size_t>(it - bounds.begin())] += n;
    out.sum_seconds += n * (lower + upper) / 2;
    out.count += n;
  }
  const double overflow = h.value("overflow", 0.0);
  out.counts.back() += overflow;
  out.sum_seconds += overflow * h.value("overflow_from_us", 1e7) * 1e-6;
  out.count += overflow;
  return true;
}

}  // namespace

PublishedSeries published_series(const Bundle& bundle) {
  PublishedSeries out;
  for (const auto& inst : bundle.instances) {
    std::vector<const Repetition*> ok;
    for (const auto& r : inst.repetitions)
      if (r.ok() && !r.warmup) ok.push_back(&r);
    if (ok.empty()) continue;
    for (const auto& [metric, info] : inst.metric_info) {
      if (!info.headline) continue;
      std::vector<double> values;
      for (const auto* r : ok) {
        auto it = r->metrics.find(metric);
        if (it != r->metrics.end() && std::isfinite(it->second.value)) values.push_back(it->second.value);
      }
      if (values.empty()) continue;
      const auto base = base_unit(info.unit);
      HeadlineValue v;
      v.family = base ? prometheus_name(inst.workload, metric, info.unit)
                      : "schedlab_" + sanitize(inst.workload) + "_" + sanitize(metric);
      v.help = info.help.empty() ? inst.workload + " " + metric : info.help;
      v.help += base ? " (median of the ok repetitions, in base units; bundle unit " + info.unit + ")"
                     : " (median of the ok repetitions, in " + info.unit + ")";
      v.workload = inst.workload;
      v.instance_id = inst.id;
      v.metric = metric;
      v.value = median(values) * (base ? base->scale : 1.0);
      v.repetitions = static_cast<int>(values.size());
      out.headlines.push_back(std::move(v));
    }
    LatencyBuckets h;
    h.counts.assign(latency_bounds_seconds().size() + 1, 0.0);
    bool any = false;
    for (const auto* r : ok)
      if (r->details.contains("histogram")) any = add_histogram(r->details["histogram"], h) || any;
    if (any) {
      h.family = "schedlab_" + sanitize(inst.workload) + "_latency_seconds";
      h.help = inst.workload +
               " latency of every event in the ok repetitions, merged; _sum estimated from bucket midpoints";
      h.workload = inst.workload;
      h.instance_id = inst.id;
      out.histograms.push_back(std::move(h));
    }
  }
  return out;
}

}  // namespace schedlab
