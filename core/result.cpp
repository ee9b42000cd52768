#include "core/result.hpp"

#include <cmath>

#include "core/bundle_encoding.hpp"
#include "core/json_cursor.hpp"
#include "core/per_operation.hpp"

namespace schedlab {

using nlohmann::json;

json to_json(const CounterReading& c) {
  json j{{"status", c.status}};
  if (c.ok()) {
    j["value"] = c.value;
    j["raw"] = c.raw;
    j["unit"] = c.unit;
    j["time_enabled_ns"] = c.time_enabled_ns;
    j["time_running_ns"] = c.time_running_ns;
    j["scaled"] = c.multiplexed();
    if (c.multiplexed()) j["scaling"] = c.scaling();
    if (c.foreign_share >= 0) j["foreign_share"] = c.foreign_share;
    if (c.contaminated) j["contaminated"] = true;
  } else {
    if (c.error_number != 0) j["errno"] = c.error_number;
    j["reason"] = c.reason;
  }
  if (!c.encoding.empty()) j["encoding"] = c.encoding;
  if (!c.note.empty()) j["note"] = c.note;
  if (!c.scope.empty()) j["scope"] = c.scope;
  if (!c.cost.empty()) j["cost"] = c.cost;
  if (!c.source.empty()) j["source"] = c.source;
  return j;
}

namespace {

json to_json(const Repetition& r) {
  json metrics = json::object();
  for (const auto& [name, m] : r.metrics) metrics[name] = {{"value", m.value}, {"unit", m.unit}};
  json counters = json::object();
  for (const auto& [event, c] : r.counters) counters[event] = to_json(c);
  json j{{"index", r.index},           {"warmup", r.warmup}, {"started_at", r.started_at},
         {"duration_s", r.duration_s}, {"status", r.status}, {"metrics", metrics},
         {"counters", counters},       {"rusage", r.rusage}, {"isolation", r.isolation},
         {"details", r.details},       {"system", r.system}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (!r.profile.empty()) j["profile"] = r.profile;
  if (!r.trace.empty()) j["trace"] = r.trace;
  if (!r.kernel.empty()) j["kernel"] = r.kernel;
  if (!r.counter_window.empty()) j["counter_window"] = r.counter_window;
  return j;
}

json to_json(const Instance& in) {
  json info = json::object();
  for (const auto& [name, m] : in.metric_info)
    info[name] = {
        {"unit", m.unit}, {"direction", to_string(m.direction)}, {"headline", m.headline}, {"help", m.help}};
  json reps = json::array();
  for (const auto& r : in.repetitions) reps.push_back(to_json(r));
  json j{{"id", in.id},
         {"workload", in.workload},
         {"workload_version", in.workload_version},
         {"params", in.params},
         {"params_hash", in.params_hash},
         {"metric_info", info},
         {"run_order", in.run_order},
         {"settle", in.settle},
         {"warmup", in.warmup ? to_json(*in.warmup) : json(nullptr)},
         {"repetitions", reps}};
  if (!in.diagnostics.empty()) {
    json diag = json::array();
    for (const auto& r : in.diagnostics) diag.push_back(to_json(r));
    j["diagnostics"] = diag;
  }
  if (!in.instrumentation.empty()) j["instrumentation"] = in.instrumentation;
  if (!in.compared_as.empty()) j["compared_as"] = in.compared_as;
  return j;
}

CounterReading counter_from_json(const JsonCursor& c) {
  c.expect_object();
  CounterReading r;
  r.status = c.string("status");
  if (r.ok()) {
    r.value = c.number("value");
    if (r.value < 0) c.fail("value", "a counter cannot be negative");
    r.raw = static_cast<std::uint64_t>(c.integer("raw", 0));
    r.unit = c.string("unit");
    r.time_enabled_ns = static_cast<std::uint64_t>(c.integer("time_enabled_ns", 0));
    r.time_running_ns = static_cast<std::uint64_t>(c.integer("time_running_ns", 0));
    if (c.has("foreign_share")) r.foreign_share = c.number("foreign_share");
    r.contaminated = c.boolean("contaminated", false);
  } else {
    if (c.has("errno")) r.error_number = static_cast<int>(c.integer("errno", 0));
    r.reason = c.optional_string("reason");
  }
  r.encoding = c.optional_string("encoding");
  r.note = c.optional_string("note");
  r.scope = c.optional_string("scope");
  r.cost = c.optional_string("cost");
  r.source = c.optional_string("source");
  return r;
}

json optional_object(const JsonCursor& c, const std::string& key) {
  return c.has(key) ? c.object(key).value() : json::object();
}

Repetition repetition_from_json(const JsonCursor& c) {
  c.expect_object();
  Repetition r;
  r.index = static_cast<int>(c.integer("index", 0));
  r.warmup = c.boolean("warmup", false);
  r.started_at = c.string("started_at");
  r.duration_s = c.duration("duration_s");
  r.status = c.string("status");
  r.reason = c.optional_string("reason");
  auto metrics = c.object("metrics");
  for (const auto& [name, _] : metrics.value().items()) {
    auto m = metrics.object(name);
    MetricValue v{m.number("value"), m.string("unit")};
    if (is_duration_unit(v.unit) && v.value < 0) m.fail("value", "a duration cannot be negative");
    r.metrics.emplace(name, v);
  }
  auto counters = c.object("counters");
  for (const auto& [event, _] : counters.value().items())
    r.counters.emplace(event, counter_from_json(counters.field(event)));
  r.rusage = optional_object(c, "rusage");
  r.isolation = optional_object(c, "isolation");
  r.details = optional_object(c, "details");
  r.system = optional_object(c, "system");
  r.profile = optional_object(c, "profile");
  r.trace = optional_object(c, "trace");
  r.kernel = optional_object(c, "kernel");
  r.counter_window = optional_object(c, "counter_window");
  add_per_operation_counters(r);
  return r;
}

Instance instance_from_json(const JsonCursor& c) {
  c.expect_object();
  Instance in;
  in.id = c.string("id");
  in.workload = c.string("workload");
  in.workload_version = c.string("workload_version");
  in.params = c.object("params").value();
  in.params_hash = c.string("params_hash");
  auto info = c.object("metric_info");
  for (const auto& [name, _] : info.value().items()) {
    auto m = info.object(name);
    MetricInfo mi;
    mi.unit = m.string("unit");
    std::string dir = m.string("direction");
    try {
      mi.direction = direction_from_string(dir);
    } catch (const InputError& e) {
      m.fail("direction", e.what());
    }
    mi.headline = m.boolean("headline", false);
    mi.help = m.optional_string("help");
    in.metric_info.emplace(name, mi);
  }
  in.run_order = static_cast<int>(c.integer("run_order", 0));
  in.settle = optional_object(c, "settle");
  if (c.has("warmup") && !c.value().at("warmup").is_null())
    in.warmup = repetition_from_json(c.field("warmup"));
  auto reps = c.array("repetitions");
  for (std::size_t i = 0; i < reps.size(); ++i)
    in.repetitions.push_back(repetition_from_json(reps.element(i)));
  if (c.has("diagnostics")) {
    auto diag = c.array("diagnostics");
    for (std::size_t i = 0; i < diag.size(); ++i)
      in.diagnostics.push_back(repetition_from_json(diag.element(i)));
  }
  in.instrumentation = optional_object(c, "instrumentation");
  in.compared_as = c.optional_string("compared_as");
  return in;
}

}  // namespace

nlohmann::json to_json(const Bundle& b) {
  json instances = json::array();
  for (const auto& in : b.instances) instances.push_back(to_json(in));
  json j{{"schema", b.schema},
         {"run_id", b.run_id},
         {"trial", b.trial},
         {"trials", b.trials},
         {"label", b.label},
         {"smoke", b.smoke},
         {"boot_id", b.boot_id},
         {"started_at", b.started_at},
         {"finished_at", b.finished_at},
         {"seed", b.seed},
         {"events", b.events},
         {"host", b.host},
         {"kernel", b.kernel},
         {"configuration", b.configuration},
         {"environment", b.environment},
         {"provenance", b.provenance},
         {"instances", instances}};
  if (!b.experiment.empty()) j["experiment"] = b.experiment;
  return j;
}

Bundle bundle_from_json(const nlohmann::json& file, const std::string& source) {
  json expanded;
  if (has_compact_parts(file)) expanded = expand_bundle(file, source);
  const json& j = expanded.is_null() ? file : expanded;
  JsonCursor c(j, source);
  c.expect_object();
  Bundle b;
  b.schema = c.string("schema");
  if (b.schema != kResultSchema && b.schema != kResultSchemaV1)
    c.fail("schema", "unsupported schema '" + b.schema + "' (this build reads " + kResultSchemaV1 + " and " +
                         kResultSchema + ")");
  b.run_id = c.string("run_id");
  b.trial = static_cast<int>(c.integer("trial", 0));
  b.trials = static_cast<int>(c.integer("trials", 1));
  b.label = c.optional_string("label");
  b.smoke = c.boolean("smoke", false);
  b.boot_id = c.optional_string("boot_id");
  b.started_at = c.string("started_at");
  b.finished_at = c.optional_string("finished_at");
  b.seed = c.has("seed") ? static_cast<std::uint64_t>(c.field("seed").value().get<std::uint64_t>()) : 0;
  if (c.has("events")) {
    auto ev = c.array("events");
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (!ev.element(i).value().is_string()) ev.fail(std::to_string(i), "expected an event name");
      b.events.push_back(ev.element(i).value().get<std::string>());
    }
  }
  b.host = c.object("host").value();
  b.kernel = c.object("kernel").value();
  b.configuration = optional_object(c, "configuration");
  b.environment = optional_object(c, "environment");
  b.provenance = optional_object(c, "provenance");
  b.experiment = optional_object(c, "experiment");
  auto instances = c.array("instances");
  for (std::size_t i = 0; i < instances.size(); ++i)
    b.instances.push_back(instance_from_json(instances.element(i)));
  return b;
}

}  // namespace schedlab
