#include "daemon/exporter/headline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
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
      {"/h", {1.0 / 3600, "per_second", {"per", "hour"}}},  // sdet: SDET reports scripts per hour
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

const std::vector<CounterFamily>& counter_families() {
  static const std::vector<CounterFamily> table = {
      {"perf::CONTEXT-SWITCHES/op", "schedlab_context_switches_per_operation",
       "Context switches of the instance's tasks per workload operation (perf::CONTEXT-SWITCHES / the "
       "workload's operations metric), median of the ok repetitions"},
      {"perf::CPU-MIGRATIONS/op", "schedlab_cpu_migrations_per_operation",
       "CPU migrations of the instance's tasks per workload operation (perf::CPU-MIGRATIONS / the workload's "
       "operations metric), median of the ok repetitions"},
      {"perf::CONTEXT-SWITCHES", "schedlab_context_switches_per_repetition",
       "Context switches of the instance's tasks in one repetition (perf::CONTEXT-SWITCHES), median of the "
       "ok "
       "repetitions; for workloads without an operations metric (kernbench: one build)"},
      {"perf::CPU-MIGRATIONS", "schedlab_cpu_migrations_per_repetition",
       "CPU migrations of the instance's tasks in one repetition (perf::CPU-MIGRATIONS), median of the ok "
       "repetitions"},
  };
  return table;
}

std::optional<double> utc_seconds(const std::string& timestamp) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0;
  double second = 0;
  char zone = 0;
  if (std::sscanf(timestamp.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%c", &year, &month, &day, &hour, &minute,
                  &second, &zone) != 7 ||
      zone != 'Z')
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  const auto whole = ::timegm(&tm);
  if (whole == -1) return std::nullopt;
  return static_cast<double>(whole) + second;
}

namespace {

// instructions / cycles of one repetition: every "instructions[:MOD]" and "cycles[:MOD]" event must be ok
// and the modifiers the same on both sides (user+kernel instructions over user-only cycles means nothing).
std::optional<double> instructions_per_cycle(const Repetition& r) {
  std::map<std::string, double> instructions, cycles;
  for (const auto& [event, c] : r.counters) {
    const auto colon = event.find(':');
    const std::string name = event.substr(0, colon),
                      mod = colon == std::string::npos ? "" : event.substr(colon);
    if (name != "instructions" && name != "cycles") continue;
    if (!c.ok() || !std::isfinite(c.value)) return std::nullopt;
    (name == "instructions" ? instructions : cycles)[mod] = c.value;
  }
  if (instructions.empty() || instructions.size() != cycles.size()) return std::nullopt;
  double i = 0, c = 0;
  for (const auto& [mod, v] : instructions) {
    auto it = cycles.find(mod);
    if (it == cycles.end()) return std::nullopt;
    i += v;
    c += it->second;
  }
  if (!(c > 0)) return std::nullopt;
  return i / c;
}

HeadlineValue instance_value(const Instance& inst, std::string family, std::string help, std::string metric,
                             double value, int repetitions) {
  HeadlineValue v;
  v.family = std::move(family);
  v.help = std::move(help);
  v.workload = inst.workload;
  v.instance_id = inst.id;
  v.params_hash = inst.params_hash;
  v.metric = std::move(metric);
  v.value = value;
  v.repetitions = repetitions;
  return v;
}

void add_instance_series(const Bundle& bundle, const Instance& inst, const std::vector<const Repetition*>& ok,
                         std::vector<HeadlineValue>& out) {
  std::map<std::string, int> by_status = {{status::kOk, 0}, {status::kFailed, 0}, {status::kTimeout, 0}};
  double seconds = 0;
  for (const auto& r : inst.repetitions) {
    if (!r.warmup) ++by_status[r.status];  // timed ones only, as the headline medians
    seconds += r.duration_s;
  }
  if (inst.warmup) seconds += inst.warmup->duration_s;
  for (const auto& r : inst.diagnostics) seconds += r.duration_s;
  for (const auto& [st, n] : by_status) {
    auto v =
        instance_value(inst, "schedlab_repetitions",
                       "Timed repetitions of the instance in the configuration's newest bundle, by status",
                       "repetitions", n, 0);
    v.labels["status"] = st;
    out.push_back(std::move(v));
  }
  out.push_back(
      instance_value(inst, "schedlab_instance_duration_seconds",
                     "Wall time of the instance's repetitions in the newest bundle (warm-up, timed and "
                     "diagnostic, whatever their status)",
                     "duration_s", seconds, 0));
  if (auto finished = utc_seconds(bundle.finished_at))
    out.push_back(
        instance_value(inst, "schedlab_instance_finished_timestamp_seconds",
                       "When the newest bundle with the instance finished (its finished_at), in seconds "
                       "since the epoch",
                       "finished_at", *finished, 0));
  for (const auto& cf : counter_families()) {
    std::vector<double> values;
    for (const auto* r : ok) {
      auto it = r->counters.find(cf.event);
      if (it != r->counters.end() && it->second.ok() && std::isfinite(it->second.value))
        values.push_back(it->second.value);
    }
    if (!values.empty())
      out.push_back(instance_value(inst, cf.family, cf.help, cf.event, median(values),
                                   static_cast<int>(values.size())));
  }
  std::vector<double> ipc;
  for (const auto* r : ok)
    if (auto v = instructions_per_cycle(*r)) ipc.push_back(*v);
  if (!ipc.empty())
    out.push_back(
        instance_value(inst, "schedlab_instructions_per_cycle",
                       "Instructions per cycle of the instance's tasks (instructions / cycles at the same "
                       "privilege levels), median of the ok repetitions; absent without a hardware PMU",
                       "instructions/cycles", median(ipc), static_cast<int>(ipc.size())));
}

}  // namespace

PublishedSeries published_series(const Bundle& bundle) {
  PublishedSeries out;
  for (const auto& inst : bundle.instances) {
    std::vector<const Repetition*> ok;
    for (const auto& r : inst.repetitions)
      if (r.ok() && !r.warmup) ok.push_back(&r);
    if (!inst.repetitions.empty()) add_instance_series(bundle, inst, ok, out.headlines);
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
      v.params_hash = inst.params_hash;
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
      h.params_hash = inst.params_hash;
      out.histograms.push_back(std::move(h));
    }
  }
  return out;
}

}  // namespace schedlab
