#include "core/summary.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include "core/error.hpp"
#include "core/stats.hpp"

namespace schedlab {
namespace {

std::string str(const nlohmann::json& j, const char* key, const std::string& fallback = "?") {
  if (j.is_object() && j.contains(key) && j.at(key).is_string()) return j.at(key).get<std::string>();
  if (j.is_object() && j.contains(key) && j.at(key).is_number()) return j.at(key).dump();
  return fallback;
}

std::string row(const std::string& id, const std::string& name, const std::string& unit, const Summary& s) {
  return fmt::format("{:<18} {:<26} {:<6} {:>2} {:>12.6g} {:>12.6g} {:>12.6g} {:>6.1f}\n", id, name, unit,
                     s.n, s.median, s.min, s.max, s.cv * 100);
}

void append_instance(std::string& out, const Instance& in) {
  std::map<std::string, int> statuses;
  std::map<std::string, std::vector<double>> metrics, counters;
  std::map<std::string, std::string> metric_units, counter_units, unsupported;
  for (const auto& r : in.repetitions) {
    ++statuses[r.status];
    if (!r.ok()) continue;
    for (const auto& [name, m] : r.metrics) {
      metrics[name].push_back(m.value);
      metric_units[name] = m.unit;
    }
    for (const auto& [event, c] : r.counters) {
      if (c.ok()) {
        counters[event].push_back(c.value);
        counter_units[event] = c.unit;
      } else {
        unsupported[event] = c.status +
                             (c.error_number ? " (" + errno_name(c.error_number) + ")" : std::string()) +
                             ": " + c.reason;
      }
    }
  }
  std::string status_text;
  for (const auto& [s, n] : statuses)
    status_text += fmt::format("{}{} {}", status_text.empty() ? "" : ", ", n, s);
  out += fmt::format("\n{} ({} {}, params {}): {} repetition(s): {}{}\n", in.id, in.workload,
                     in.workload_version, in.params.dump(), in.repetitions.size(),
                     status_text.empty() ? "none" : status_text, in.warmup ? " (+1 discarded warm-up)" : "");
  if (in.warmup && !in.warmup->ok())
    out += fmt::format("  warm-up: {}: {}\n", in.warmup->status, in.warmup->reason);
  for (const auto& r : in.repetitions)
    // Counted from 1 as the progress lines count them ("rep 1/3"); the bundle's index is 0-based.
    if (!r.ok()) out += fmt::format("  repetition {}: {}: {}\n", r.index + 1, r.status, r.reason);
  if (metrics.empty() && counters.empty()) return;
  out += fmt::format("{:<18} {:<26} {:<6} {:>2} {:>12} {:>12} {:>12} {:>6}\n", "instance", "metric", "unit",
                     "n", "median", "min", "max", "cv%");
  // Headline metrics first, marked with '*'.
  std::vector<std::string> names, others;
  for (const auto& [name, _] : metrics) {
    auto it = in.metric_info.find(name);
    (it != in.metric_info.end() && it->second.headline ? names : others).push_back(name);
  }
  names.insert(names.end(), others.begin(), others.end());
  for (const auto& name : names) {
    auto it = in.metric_info.find(name);
    bool headline = it != in.metric_info.end() && it->second.headline;
    out += row(in.id, headline ? name + " *" : name, metric_units[name], summarize(metrics[name]));
  }
  for (const auto& [event, values] : counters)
    out += row("  counter", event, counter_units[event], summarize(values));
  // Events that failed the same way (all hardware events on a VM) share one line; the bundle
  // keeps each event's full reason.
  std::map<std::string, std::string> events_by_reason;
  for (const auto& [event, why] : unsupported) {
    auto& events = events_by_reason[why];
    events += (events.empty() ? "" : ", ") + event;
  }
  for (const auto& [why, events] : events_by_reason)
    out += fmt::format("{:<18} {}: {}\n", "  counters", events, why);
}

}  // namespace

std::string format_summary(const Bundle& b, const std::string& source,
                           const std::vector<std::string>& warnings) {
  std::string out = fmt::format("bundle   {}\n", source);
  out += fmt::format("run      {} trial {}/{}{}, seed {}, {} to {}\n", b.run_id, b.trial + 1, b.trials,
                     b.label.empty() ? "" : ", label " + b.label, b.seed, b.started_at, b.finished_at);
  out += fmt::format("kernel   {} {}\n", str(b.kernel, "release"), str(b.kernel, "version", ""));
  out += fmt::format("host     {} ({} online CPUs), fingerprint {}\n", str(b.host, "cpu_model"),
                     b.host.contains("topology") ? str(b.host.at("topology"), "online_cpus") : "?",
                     str(b.host, "fingerprint"));
  // What `schedlab diff` does with it: verdicts rest on trials, so a quick run's fewer repetitions make
  // its trial medians noisier but do not by themselves withhold a verdict; one trial does.
  if (b.smoke)
    out += b.trials >= 2
               ? fmt::format(
                     "note     quick run: {} repetitions per trial (9 by default) make each trial's "
                     "median noisier; diff's verdicts rest on the {} trials\n",
                     b.instances.empty() ? 0 : b.instances.front().repetitions.size(), b.trials)
               : "note     quick run of one trial: diff compares its repetitions but gives no verdict; take "
                 "--trials 6 or more (interleaved with the other side) for one\n";
  for (const auto& w : warnings) out += "warning  " + w + "\n";
  for (const auto& in : b.instances) append_instance(out, in);
  return out;
}

}  // namespace schedlab
