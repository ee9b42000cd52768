#include "export/gbench.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/metric.hpp"
#include "core/stats.hpp"

namespace schedlab {
namespace {

using nlohmann::json;

// Keys a Google Benchmark 1.7.1 entry has (or compare.py reads): a user counter must not shadow them.
constexpr std::array<std::string_view, 20> kReservedKeys = {
    // what every entry has
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit", "aggregate_name",
    "aggregate_unit",
    // what some entries have
    "label", "error_occurred", "error_message", "big_o", "rms", "complexity_n"};

bool reserved(const std::string& key) {
  return std::find(kReservedKeys.begin(), kReservedKeys.end(), key) != kReservedKeys.end();
}

double seconds_per(const std::string& unit) {
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  return 1;  // "s": is_duration_unit admits no other
}

// The statistics Google Benchmark computes for its aggregates (benchmark/src/statistics.cc).
struct Aggregate {
  const char* name;
  const char* unit;  // aggregate_unit
  double (*compute)(const std::vector<double>&);
};

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

double cv_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  return m == 0 ? 0 : stddev_of(v) / m;
}

double median_of(const std::vector<double>& v) {
  return median(v);
}

constexpr std::array<Aggregate, 4> kAggregates{{{"mean", "time", mean_of},
                                                {"median", "time", median_of},
                                                {"stddev", "time", stddev_of},
                                                {"cv", "percentage", cv_of}}};

struct Dropped {
  json repetitions = json::array();
  json values = json::array();

  void value(const Instance& in, const Repetition& r, const std::string& name) {
    values.push_back(
        {{"instance", in.id}, {"index", r.index}, {"name", name}, {"reason", "not a finite number"}});
  }
};

// The user counters of one repetition: its non-duration metrics and its ok counters.
json user_counters(const Instance& in, const Repetition& r, Dropped& dropped) {
  json out = json::object();
  for (const auto& [name, m] : r.metrics) {
    if (is_duration_unit(m.unit)) continue;
    if (!std::isfinite(m.value)) {
      dropped.value(in, r, name);
      continue;
    }
    out[reserved(name) ? "metric." + name : name] = m.value;
  }
  for (const auto& [event, c] : r.counters) {
    if (!c.ok()) continue;
    if (!std::isfinite(c.value)) {
      dropped.value(in, r, event);
      continue;
    }
    out[reserved(event) || out.contains(event) ? "counter." + event : event] = c.value;
  }
  return out;
}

// One exported benchmark: an instance's duration metric over its ok repetitions.
struct Family {
  std::string name;
  std::string unit;
  json common;  // fields every entry of the benchmark carries
  std::vector<double> values;
  std::map<std::string, std::vector<double>> counters;
};

void add_aggregates(const Family& f, json& benchmarks) {
  if (f.values.size() < 2) return;  // as Google Benchmark: no aggregates of a single run
  for (const auto& a : kAggregates) {
    json e = f.common;
    e["name"] = f.name + "_" + a.name;
    e["run_type"] = "aggregate";
    e["aggregate_name"] = a.name;
    e["aggregate_unit"] = a.unit;
    e["iterations"] = f.values.size();
    e["real_time"] = a.compute(f.values);
    e["cpu_time"] = e["real_time"];
    for (const auto& [key, values] : f.counters) e[key] = a.compute(values);
    benchmarks.push_back(std::move(e));
  }
}

// Headline metrics first, then the others by name (as `schedlab show` lists them).
std::vector<std::string> duration_metrics(const Instance& in) {
  std::vector<std::string> headline, others;
  for (const auto& r : in.repetitions) {
    if (!r.ok() || r.warmup) continue;
    for (const auto& [name, m] : r.metrics) {
      if (!is_duration_unit(m.unit) || !std::isfinite(m.value)) continue;
      auto info = in.metric_info.find(name);
      auto& list = info != in.metric_info.end() && info->second.headline ? headline : others;
      if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
    }
  }
  std::sort(headline.begin(), headline.end());
  std::sort(others.begin(), others.end());
  headline.insert(headline.end(), others.begin(), others.end());
  return headline;
}

// Appends the instance's benchmarks; false when it has none.
bool export_instance(const Instance& in, int family_index, json& benchmarks, Dropped& dropped) {
  std::vector<json> counters(in.repetitions.size());
  for (std::size_t i = 0; i < in.repetitions.size(); ++i) {
    const auto& r = in.repetitions[i];
    if (r.warmup) continue;  // discarded by design (the runner keeps it in Instance::warmup)
    if (!r.ok()) {
      dropped.repetitions.push_back(
          {{"instance", in.id}, {"index", r.index}, {"status", r.status}, {"reason", r.reason}});
      continue;
    }
    counters[i] = user_counters(in, r, dropped);
    for (const auto& [name, m] : r.metrics)
      if (is_duration_unit(m.unit) && !std::isfinite(m.value)) dropped.value(in, r, name);
  }
  const auto metrics = duration_metrics(in);
  int per_family_index = 0;
  for (const auto& metric : metrics) {
    Family f;
    f.name = in.id + "/" + metric;
    f.common = {{"family_index", family_index},
                {"per_family_instance_index", per_family_index++},
                {"run_name", f.name},
                {"repetitions", in.repetitions.size()},
                {"threads", 1}};
    for (std::size_t i = 0; i < in.repetitions.size(); ++i) {
      const auto& r = in.repetitions[i];
      auto it = r.metrics.find(metric);
      if (!r.ok() || r.warmup || it == r.metrics.end() || !is_duration_unit(it->second.unit) ||
          !std::isfinite(it->second.value))
        continue;
      if (f.unit.empty()) f.unit = it->second.unit;  // the first repetition's unit; others converted
      const double value = it->second.value * seconds_per(it->second.unit) / seconds_per(f.unit);
      f.common["time_unit"] = f.unit;
      json e = f.common;
      e["name"] = f.name;
      e["run_type"] = "iteration";
      e["repetition_index"] = r.index;
      e["iterations"] = 1;
      e["real_time"] = value;
      e["cpu_time"] = value;
      for (const auto& [key, v] : counters[i].items()) {
        e[key] = v;
        f.counters[key].push_back(v.get<double>());
      }
      f.values.push_back(value);
      benchmarks.push_back(std::move(e));
    }
    add_aggregates(f, benchmarks);
  }
  return !metrics.empty();
}

// Google Benchmark's own run of a repetition ("details.gbench", as its JSON reporter wrote it),
// the first entry: the measured run. Null when the repetition did not run under it.
const json* gbench_run(const Repetition& r) {
  auto it = r.details.find("gbench");
  if (it == r.details.end() || !it->is_object()) return nullptr;
  auto b = it->find("benchmarks");
  if (b == it->end() || !b->is_array() || b->size() != 1 || !b->at(0).is_object()) return nullptr;
  const auto& e = b->at(0);
  const bool usable = e.value("run_type", "") == "iteration" && e.contains("name") && e["name"].is_string() &&
                      e.contains("real_time") && e["real_time"].is_number() && e.contains("time_unit");
  return usable ? &e : nullptr;
}

// An instance that ran under Google Benchmark is exported as Google Benchmark wrote it: per ok
// repetition its entry (name, iterations, real and CPU time, time unit, its own counters),
// numbered as the runner's repetitions, with the repetition's metrics and counters added as
// user counters where the entry has no such key; then the aggregates. False when no ok
// repetition carries such a run (the instance is then exported from its metrics).
bool export_gbench_instance(const Instance& in, int family_index, json& benchmarks, Dropped& dropped) {
  std::vector<Family> families;
  json failed = json::array();
  for (const auto& r : in.repetitions) {
    if (r.warmup) continue;
    if (!r.ok()) {
      failed.push_back({{"instance", in.id}, {"index", r.index}, {"status", r.status}, {"reason", r.reason}});
      continue;
    }
    const json* run = gbench_run(r);
    if (!run) continue;
    const auto name = run->at("name").get<std::string>();
    auto f = std::find_if(families.begin(), families.end(), [&](const Family& x) { return x.name == name; });
    if (f == families.end()) {
      Family nf;
      nf.name = name;
      nf.unit = run->at("time_unit").get<std::string>();
      nf.common = {{"family_index", family_index},
                   {"per_family_instance_index", static_cast<int>(families.size())},
                   {"run_name", run->value("run_name", name)},
                   {"repetitions", in.repetitions.size()},
                   {"threads", run->value("threads", 1)},
                   {"time_unit", nf.unit}};
      families.push_back(std::move(nf));
      f = families.end() - 1;
    }
    json e = *run;
    for (const auto& [key, v] : f->common.items()) e[key] = v;
    e["repetition_index"] = r.index;
    const json extra = user_counters(in, r, dropped);  // a named value: items() refers to it
    for (const auto& [key, v] : extra.items())
      if (!e.contains(key)) e[key] = v;
    for (const auto& [key, v] : e.items())
      if (!reserved(key) && v.is_number() && key != "real_time" && key != "cpu_time")
        f->counters[key].push_back(v.get<double>());
    f->values.push_back(e.at("real_time").get<double>());
    benchmarks.push_back(std::move(e));
  }
  for (const auto& f : families) add_aggregates(f, benchmarks);
  if (families.empty()) return false;
  for (auto& e : failed) dropped.repetitions.push_back(std::move(e));
  return true;
}

// Google Benchmark reports scaling enabled when the governor is not "performance"; unknown
// counts as not enabled, as it does there.
bool cpu_scaling_enabled(const json& environment) {
  auto it = environment.find("governor");
  if (it == environment.end()) return false;
  auto scaling = [](const json& g) {
    if (!g.is_string()) return false;
    const auto& name = g.get_ref<const std::string&>();
    return name != "performance" && name != "none" && name != "unknown" && !name.empty();
  };
  if (it->is_object()) return std::any_of(it->begin(), it->end(), scaling);
  return scaling(*it);
}

template <typename T>
T value_at(const json& j, const json::json_pointer& p, T fallback) {
  if (!j.contains(p)) return fallback;
  const auto& v = j.at(p);
  if constexpr (std::is_same_v<T, std::string>) {
    return v.is_string() ? v.get<std::string>() : fallback;
  } else {
    return v.is_number_integer() ? v.get<T>() : fallback;
  }
}

json context(const Bundle& b, const Dropped& dropped) {
  json load_avg = json::array();
  if (auto it = b.environment.find("load_avg"); it != b.environment.end() && it->is_array()) load_avg = *it;
  const auto build_type = value_at<std::string>(b.provenance, json::json_pointer("/build_type"), "");
  int num_cpus = value_at<int>(b.host, json::json_pointer("/topology/online_cpus"), 0);
  return {{"date", b.started_at},
          {"host_name", value_at<std::string>(b.host, json::json_pointer("/hostname"), "")},
          {"executable", "schedlab"},
          {"num_cpus", num_cpus},
          {"mhz_per_cpu", 0},
          {"cpu_scaling_enabled", cpu_scaling_enabled(b.environment)},
          {"caches", json::array()},
          {"load_avg", load_avg},
          {"library_build_type", build_type == "Debug" ? "debug" : "release"},
          {"schedlab_schema", b.schema},
          {"schedlab_run_id", b.run_id},
          {"schedlab_trial", b.trial},
          {"schedlab_label", b.label},
          {"schedlab_kernel_release", value_at<std::string>(b.kernel, json::json_pointer("/release"), "")},
          {"schedlab_configuration_hash",
           value_at<std::string>(b.configuration, json::json_pointer("/hash"), "")},
          {"schedlab_smoke", b.smoke},
          {"schedlab_dropped_repetitions", dropped.repetitions},
          {"schedlab_dropped_values", dropped.values}};
}

}  // namespace

json gbench_json(const Bundle& bundle, const std::string& source) {
  json benchmarks = json::array();
  Dropped dropped;
  int family_index = 0;
  for (const auto& in : bundle.instances)
    if (export_gbench_instance(in, family_index, benchmarks, dropped) ||
        export_instance(in, family_index, benchmarks, dropped))
      ++family_index;
  if (benchmarks.empty())
    throw InputError(
        source + ": nothing to export in Google Benchmark's format: no ok timed repetition has " +
        "a metric with a duration unit (ns, us, ms, s)" +
        (dropped.repetitions.empty()
             ? std::string()
             : "; " + std::to_string(dropped.repetitions.size()) + " repetition(s) did not succeed"));
  return {{"context", context(bundle, dropped)}, {"benchmarks", benchmarks}};
}

}  // namespace schedlab
