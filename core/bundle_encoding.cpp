#include "core/bundle_encoding.hpp"

#include <functional>
#include <set>

#include "core/json_cursor.hpp"
#include "core/result.hpp"

namespace schedlab {
namespace {

using nlohmann::json;

constexpr const char* kCounterDefaults = "counter_defaults";
constexpr const char* kPerCpuTable = "per_cpu_table";
constexpr const char* kSchedstatTable = "cpu_table";
constexpr const char* kBucketRuns = "bucket_runs";

// Every repetition of the bundle (warm-ups, timed, diagnostic), with its JSON pointer.
void for_each_repetition(json& bundle, const std::function<void(json&, const std::string&)>& visit) {
  if (!bundle.is_object() || !bundle.contains("instances") || !bundle["instances"].is_array()) return;
  auto& instances = bundle["instances"];
  for (std::size_t i = 0; i < instances.size(); ++i) {
    auto& in = instances[i];
    if (!in.is_object()) continue;
    const std::string at = "/instances/" + std::to_string(i);
    if (in.contains("warmup") && in["warmup"].is_object()) visit(in["warmup"], at + "/warmup");
    for (const char* list : {"repetitions", "diagnostics"}) {
      if (!in.contains(list) || !in[list].is_array()) continue;
      for (std::size_t r = 0; r < in[list].size(); ++r)
        if (in[list][r].is_object()) visit(in[list][r], at + "/" + list + "/" + std::to_string(r));
    }
  }
}

// Same type and same text: 60 and 60.0 compare equal in nlohmann, and a reading must come back as it was.
bool identical(const json& a, const json& b) {
  return a.type() == b.type() && a.dump() == b.dump();
}

bool numbers_only(const json& object) {
  if (!object.is_object()) return false;
  for (const auto& [_, v] : object.items())
    if (!v.is_number()) return false;
  return true;
}

// Objects of numbers -> the union of their fields and one row per object, null where one lacks a field.
json rows_of(const std::vector<const json*>& objects, json& fields_out) {
  std::set<std::string> fields;
  for (const auto* o : objects)
    for (const auto& [k, _] : o->items()) fields.insert(k);
  fields_out = json(fields);
  json rows = json::array();
  for (const auto* o : objects) {
    json row = json::array();
    for (const auto& f : fields) row.push_back(o->contains(f) ? (*o)[f] : json());
    rows.push_back(std::move(row));
  }
  return rows;
}

// --- counters -------------------------------------------------------------------------------------

void factor_counters(json& bundle) {
  std::map<std::string, json> common;  // event -> fields every reading has, with one value
  for_each_repetition(bundle, [&](json& rep, const std::string&) {
    if (!rep.contains("counters") || !rep["counters"].is_object()) return;
    for (const auto& [event, reading] : rep["counters"].items()) {
      if (!reading.is_object()) continue;
      auto [it, first] = common.try_emplace(event, reading);
      if (first) continue;
      for (auto f = it->second.begin(); f != it->second.end();) {
        if (reading.contains(f.key()) && identical(reading[f.key()], f.value()))
          ++f;
        else
          f = it->second.erase(f);
      }
    }
  });
  json defaults = json::object();
  for (auto& [event, fields] : common)
    if (!fields.empty()) defaults[event] = std::move(fields);
  if (defaults.empty()) return;
  for_each_repetition(bundle, [&](json& rep, const std::string&) {
    if (!rep.contains("counters") || !rep["counters"].is_object()) return;
    for (auto& [event, reading] : rep["counters"].items()) {
      if (!reading.is_object() || !defaults.contains(event)) continue;
      for (const auto& [field, _] : defaults[event].items()) reading.erase(field);
    }
  });
  bundle[kCounterDefaults] = std::move(defaults);
}

void restore_counters(json& bundle, const std::string& source) {
  JsonCursor top(bundle, source);
  const json defaults = top.object(kCounterDefaults).value();
  for (const auto& [event, fields] : defaults.items())
    if (!fields.is_object()) top.object(kCounterDefaults).fail(event, "expected an object of counter fields");
  bundle.erase(kCounterDefaults);
  for_each_repetition(bundle, [&](json& rep, const std::string& at) {
    if (!rep.contains("counters") || !rep["counters"].is_object()) return;
    for (auto& [event, reading] : rep["counters"].items()) {
      if (!defaults.contains(event)) continue;
      if (!reading.is_object())
        JsonCursor(rep, source, at).object("counters").fail(event, "expected an object");
      for (const auto& [field, value] : defaults[event].items())
        if (!reading.contains(field)) reading[field] = value;
    }
  });
}

// --- per-CPU tables -------------------------------------------------------------------------------

// {"0": {"user_s": 1, ...}, "1": {...}} -> {"cpus": ["0", "1"], "fields": [...], "values": [[...], [...]]}
void tabulate_per_cpu(json& system) {
  auto it = system.find("per_cpu");
  if (it == system.end() || !it->is_object() || it->empty()) return;
  std::vector<const json*> rows;
  json cpus = json::array();
  for (const auto& [cpu, fields] : it->items()) {
    if (!numbers_only(fields)) return;
    cpus.push_back(cpu);
    rows.push_back(&fields);
  }
  json fields;
  json values = rows_of(rows, fields);
  system[kPerCpuTable] = {
      {"cpus", std::move(cpus)}, {"fields", std::move(fields)}, {"values", std::move(values)}};
  system.erase("per_cpu");
}

// schedstat's {"cpus": {"0": {"delta": {...}, "domains": [{"name", "cpumask", "delta": {...}}]}}} ->
// {"cpu_table": {"cpus", "fields", "values", "domains": {"fields", "rows": [[cpu, name, cpumask, ...]]}}}
void tabulate_schedstat(json& schedstat) {
  auto it = schedstat.find("cpus");
  if (it == schedstat.end() || !it->is_object() || it->empty()) return;
  std::vector<const json*> cpu_rows, domain_rows;
  json cpus = json::array(), domain_keys = json::array();
  for (const auto& [cpu, entry] : it->items()) {
    if (!entry.is_object() || entry.size() != 2 || !entry.contains("delta") ||
        !numbers_only(entry["delta"]) || !entry.contains("domains") || !entry["domains"].is_array())
      return;
    for (const auto& d : entry["domains"]) {
      if (!d.is_object() || d.size() != 3 || !d.contains("name") || !d["name"].is_string() ||
          !d.contains("cpumask") || !d["cpumask"].is_string() || !d.contains("delta") ||
          !numbers_only(d["delta"]))
        return;
      domain_keys.push_back({cpu, d["name"], d["cpumask"]});
      domain_rows.push_back(&d["delta"]);
    }
    cpus.push_back(cpu);
    cpu_rows.push_back(&entry["delta"]);
  }
  json fields, domain_fields;
  json values = rows_of(cpu_rows, fields);
  json domain_values = rows_of(domain_rows, domain_fields);
  json rows = json::array();
  for (std::size_t i = 0; i < domain_keys.size(); ++i) {
    json row = domain_keys[i];
    for (auto& v : domain_values[i]) row.push_back(std::move(v));
    rows.push_back(std::move(row));
  }
  schedstat[kSchedstatTable] = {
      {"cpus", std::move(cpus)},
      {"fields", std::move(fields)},
      {"values", std::move(values)},
      {"domains", {{"fields", std::move(domain_fields)}, {"rows", std::move(rows)}}}};
  schedstat.erase("cpus");
}

std::vector<std::string> names_in(const JsonCursor& table, const std::string& key) {
  auto list = table.array(key);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list.element(i).value().is_string()) list.fail(std::to_string(i), "expected a name");
    out.push_back(list.element(i).value().get<std::string>());
  }
  return out;
}

// One row of numbers (or nulls) back into an object, starting at column `from`.
json object_of_row(const JsonCursor& row, const std::vector<std::string>& fields, std::size_t from) {
  if (!row.value().is_array() || row.size() != from + fields.size())
    row.fail("", "expected " + std::to_string(from + fields.size()) + " values");
  json out = json::object();
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const auto& v = row.value()[from + f];
    if (v.is_null()) continue;
    if (!v.is_number()) row.fail(std::to_string(from + f), "expected a number or null");
    out[fields[f]] = v;
  }
  return out;
}

void untabulate_per_cpu(json& system, const JsonCursor& at) {
  const auto table = at.object(kPerCpuTable);
  const auto cpus = names_in(table, "cpus");
  const auto fields = names_in(table, "fields");
  const auto values = table.array("values");
  if (values.size() != cpus.size()) table.fail("values", "expected one row per CPU");
  json per_cpu = json::object();
  for (std::size_t i = 0; i < cpus.size(); ++i)
    per_cpu[cpus[i]] = object_of_row(values.element(i), fields, 0);
  system["per_cpu"] = std::move(per_cpu);
  system.erase(kPerCpuTable);
}

void untabulate_schedstat(json& schedstat, const JsonCursor& at) {
  const auto table = at.object(kSchedstatTable);
  const auto cpus = names_in(table, "cpus");
  const auto fields = names_in(table, "fields");
  const auto values = table.array("values");
  if (values.size() != cpus.size()) table.fail("values", "expected one row per CPU");
  json out = json::object();
  for (std::size_t i = 0; i < cpus.size(); ++i)
    out[cpus[i]] = {{"delta", object_of_row(values.element(i), fields, 0)}, {"domains", json::array()}};
  const auto domains = table.object("domains");
  const auto domain_fields = names_in(domains, "fields");
  const auto rows = domains.array("rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto row = rows.element(i);
    const auto& r = row.value();
    if (!r.is_array() || r.size() < 3 || !r[0].is_string() || !r[1].is_string() || !r[2].is_string())
      row.fail("", "expected [cpu, name, cpumask, values...]");
    const auto cpu = r[0].get<std::string>();
    if (!out.contains(cpu)) row.fail("0", "a CPU the table does not list");
    out[cpu]["domains"].push_back(
        {{"name", r[1]}, {"cpumask", r[2]}, {"delta", object_of_row(row, domain_fields, 3)}});
  }
  schedstat["cpus"] = std::move(out);
  schedstat.erase(kSchedstatTable);
}

// --- latency histograms --------------------------------------------------------------------------

// A bucket [lower, upper, count] as core/histogram.hpp writes it: bounds as floating-point numbers, the
// count as an unsigned integer.
bool is_bucket(const json& b) {
  return b.is_array() && b.size() == 3 && b[0].is_number_float() && b[1].is_number_float() &&
         b[2].is_number_unsigned();
}

// [[lower, upper, count], ...] -> [[lower, width, count, count, ...], ...]: one run per stretch of
// adjacent buckets of one width (a log-linear histogram has a few), each bound recomputed exactly as
// lower + k * width, checked here, so that expanding gives back the very numbers.
void run_length_buckets(json& histogram) {
  auto it = histogram.find("buckets");
  if (it == histogram.end() || !it->is_array() || it->empty()) return;
  for (const auto& b : *it)
    if (!is_bucket(b)) return;
  json runs = json::array();
  for (const auto& b : *it) {
    const double lower = b[0].get<double>(), upper = b[1].get<double>();
    if (!runs.empty()) {
      auto& run = runs.back();
      const double start = run[0].get<double>(), width = run[1].get<double>();
      const double k = static_cast<double>(run.size() - 2);
      if (start + k * width == lower && lower + width == upper) {
        run.push_back(b[2]);
        continue;
      }
    }
    if (!(upper > lower) || lower + (upper - lower) != upper) return;  // bounds a run cannot give back
    runs.push_back({b[0], upper - lower, b[2]});
  }
  histogram[kBucketRuns] = std::move(runs);
  histogram.erase("buckets");
}

void expand_bucket_runs(json& histogram, const JsonCursor& at) {
  const auto runs = at.array(kBucketRuns);
  json buckets = json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto run = runs.element(i);
    const auto& r = run.value();
    if (!r.is_array() || r.size() < 3 || !r[0].is_number() || !r[1].is_number())
      run.fail("", "expected [lower, width, count...]");
    const double lower = r[0].get<double>(), width = r[1].get<double>();
    for (std::size_t k = 2; k < r.size(); ++k) {
      if (!r[k].is_number_unsigned()) run.fail(std::to_string(k), "expected a count");
      const double from = lower + static_cast<double>(k - 2) * width;
      buckets.push_back({from, from + width, r[k]});
    }
  }
  histogram["buckets"] = std::move(buckets);
  histogram.erase(kBucketRuns);
}

void for_each_histogram(json& bundle, const std::function<void(json&, const std::string&)>& visit) {
  for_each_repetition(bundle, [&](json& rep, const std::string& at) {
    if (rep.contains("details") && rep["details"].is_object() && rep["details"].contains("histogram") &&
        rep["details"]["histogram"].is_object())
      visit(rep["details"]["histogram"], at + "/details/histogram");
  });
}

void for_each_system(json& bundle, const std::function<void(json&, const std::string&)>& visit) {
  for_each_repetition(bundle, [&](json& rep, const std::string& at) {
    if (rep.contains("system") && rep["system"].is_object()) visit(rep["system"], at + "/system");
  });
}

}  // namespace

json compact_bundle(json bundle) {
  factor_counters(bundle);
  for_each_system(bundle, [](json& system, const std::string&) {
    tabulate_per_cpu(system);
    if (system.contains("schedstat") && system["schedstat"].is_object())
      tabulate_schedstat(system["schedstat"]);
  });
  for_each_histogram(bundle, [](json& histogram, const std::string&) { run_length_buckets(histogram); });
  return bundle;
}

bool has_compact_parts(const json& bundle) {
  // Only /2 has them: in a /1 bundle such a key would be an unknown field, which readers ignore.
  return bundle.is_object() && bundle.value("schema", json()) == kResultSchema;
}

json expand_bundle(json bundle, const std::string& source) {
  if (bundle.contains(kCounterDefaults)) restore_counters(bundle, source);
  for_each_system(bundle, [&](json& system, const std::string& at) {
    const JsonCursor cursor(system, source, at);
    if (system.contains(kPerCpuTable)) untabulate_per_cpu(system, cursor);
    if (system.contains("schedstat") && system["schedstat"].is_object() &&
        system["schedstat"].contains(kSchedstatTable)) {
      json& schedstat = system["schedstat"];
      untabulate_schedstat(schedstat, JsonCursor(schedstat, source, at + "/schedstat"));
    }
  });
  for_each_histogram(bundle, [&](json& histogram, const std::string& at) {
    if (histogram.contains(kBucketRuns)) expand_bucket_runs(histogram, JsonCursor(histogram, source, at));
  });
  return bundle;
}

}  // namespace schedlab
