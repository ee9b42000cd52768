#include "core/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/display.hpp"
#include "core/error.hpp"
#include "core/per_operation.hpp"
#include "core/stats.hpp"
#include "core/text_table.hpp"

namespace schedlab {
namespace {

std::string str(const nlohmann::json& j, const char* key, const std::string& fallback = "?") {
  if (j.is_object() && j.contains(key) && j.at(key).is_string()) return j.at(key).get<std::string>();
  if (j.is_object() && j.contains(key) && j.at(key).is_number()) return j.at(key).dump();
  return fallback;
}

std::vector<double> ok_values(const Instance& in, const std::string& metric) {
  std::vector<double> out;
  for (const auto& r : in.repetitions) {
    if (!r.ok()) continue;
    if (auto it = r.metrics.find(metric); it != r.metrics.end()) out.push_back(it->second.value);
  }
  return out;
}

std::string status_text(const Instance& in) {
  std::map<std::string, int> statuses;
  for (const auto& r : in.repetitions) ++statuses[r.status];
  std::string out;
  // ok first: what the medians rest on.
  if (auto ok = statuses.find(status::kOk); ok != statuses.end()) out = fmt::format("{} ok", ok->second);
  for (const auto& [s, n] : statuses)
    if (s != status::kOk) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, s);
  return out.empty() ? "none" : out;
}

// What a reader should know before trusting the line: a failed warm-up, a kernel that was tainted or
// switched its clocksource during a repetition, processes the workload left behind, and counters that
// are not the workload's alone (other tasks on its CPUs, #22) or are estimates (multiplexed).
std::string instance_warnings(const Instance& in) {
  std::set<std::string> out;
  if (in.warmup && !in.warmup->ok()) out.insert("warm-up " + in.warmup->status);
  int contaminated = 0, multiplexed = 0;
  double worst_share = 0;
  for (const auto& r : in.repetitions) {
    if (r.kernel.value("tainted", false)) out.insert("kernel tainted");
    if (r.kernel.value("clocksource_changed", false)) out.insert("clocksource changed");
    if (r.isolation.value("stray_processes", 0) > 0) out.insert("stray processes killed");
    bool dirty = false, scaled = false;
    for (const auto& [name, c] : r.counters) {
      if (c.contaminated) {
        dirty = true;
        worst_share = std::max(worst_share, c.foreign_share);
      }
      scaled = scaled || c.multiplexed();
    }
    contaminated += dirty ? 1 : 0;
    multiplexed += scaled ? 1 : 0;
  }
  const auto n = in.repetitions.size();
  // Short enough to stay on its row in 100 columns: wrapped, a line each for a dozen instances pushed
  // the quick suite's table off one screen (CI, under ASan, where more counts were contaminated).
  if (contaminated > 0)
    out.insert(fmt::format("counters contaminated in {}/{} (others up to {:.0f}%)", contaminated, n,
                           100 * worst_share));
  if (multiplexed > 0) out.insert(fmt::format("counters multiplexed in {}/{}", multiplexed, n));
  std::string text;
  for (const auto& w : out) text += (text.empty() ? "" : "; ") + w;
  return text;
}

std::vector<std::string> headline_metrics(const Instance& in) {
  std::vector<std::string> out;
  for (const auto& [name, info] : in.metric_info)
    if (info.headline) out.push_back(name);
  return out;
}

void add_instance_rows(Table& t, const Instance& in) {
  const auto label = instance_label(in.id, in.workload);
  auto names = headline_metrics(in);
  if (names.empty()) names.push_back("");
  bool first = true;
  for (const auto& name : names) {
    const auto values = name.empty() ? std::vector<double>{} : ok_values(in, name);
    std::vector<std::string> row = {first ? label : "", name.empty() ? "-" : name};
    if (values.empty()) {
      row.insert(row.end(), {"-", "-", "0"});
    } else {
      const auto s = summarize(values);
      const auto unit = in.metric_info.at(name).unit;
      row.insert(row.end(),
                 {human_value(s.median, unit), fmt::format("{:.1f}%", 100 * s.cv), std::to_string(s.n)});
    }
    row.push_back(first ? status_text(in) : "");
    row.push_back(first ? instance_warnings(in) : "");
    t.add(std::move(row));
    first = false;
  }
}

// Repetitions that did not succeed, with their reasons, counted from 1 as the progress lines count them
// ("rep 1/3"; the bundle's index is 0-based).
std::string failures(const Instance& in, std::size_t width) {
  std::string out;
  if (in.warmup && !in.warmup->ok())
    out += wrap(fmt::format("  warm-up: {}: {}", in.warmup->status, in.warmup->reason), width, 4) + "\n";
  for (const auto& r : in.repetitions)
    if (!r.ok())
      out += wrap(fmt::format("  repetition {}: {}: {}", r.index + 1, r.status, r.reason), width, 4) + "\n";
  return out.empty() ? "" : in.id + ":\n" + out;
}

// Every counter of an instance over its ok repetitions, per operation where the workload counts
// operations (the totals they come from are left out), and the events that could not be counted.
std::string counters(const Instance& in, std::size_t width) {
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, std::string> units, unsupported;
  for (const auto& r : in.repetitions) {
    if (!r.ok()) continue;
    for (const auto& [event, c] : r.counters) {
      if (c.ok()) {
        values[event].push_back(c.value);
        units[event] = c.unit;
      } else {
        unsupported[event] = c.status +
                             (c.error_number ? " (" + errno_name(c.error_number) + ")" : std::string()) +
                             ": " + c.reason;
      }
    }
  }
  std::string params;
  for (const auto& [k, v] : in.params.items())
    params += (params.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  std::string out =
      wrap(fmt::format("{} ({} {}: {})", in.id, in.workload, in.workload_version, params), width, 4) + "\n";
  Table t({{"counter", false, false, true, 16},
           {"n", true},
           {"median", true},
           {"min", true},
           {"max", true},
           {"CV", true}},
          2);
  for (const auto& [event, v] : values) {
    if (values.count(event + kPerOperationSuffix)) continue;  // shown per operation
    const auto s = summarize(v);
    t.add({event, std::to_string(s.n), human_value(s.median, units[event]), human_value(s.min, units[event]),
           human_value(s.max, units[event]), fmt::format("{:.1f}%", 100 * s.cv)});
  }
  if (!t.empty()) out += t.text(width);
  // Events that failed the same way (all hardware events on a VM) share one line; the bundle keeps each
  // event's full reason.
  std::map<std::string, std::string> events_by_reason;
  for (const auto& [event, why] : unsupported) {
    auto& events = events_by_reason[why];
    events += (events.empty() ? "" : ", ") + event;
  }
  for (const auto& [why, events] : events_by_reason)
    out += wrap("  not counted: " + events + ": " + why, width, 4) + "\n";
  return out;
}

}  // namespace

std::string format_summary(const Bundle& b, const std::string& source,
                           const std::vector<std::string>& warnings, const SummaryOptions& options) {
  const auto width = options.width;
  auto line = [width](const std::string& text) { return wrap(text, width, 9) + "\n"; };
  std::string out = line(fmt::format("bundle   {}", source));
  out += line(fmt::format("run      {} trial {}/{}{}, seed {}, {} to {}", b.run_id, b.trial + 1, b.trials,
                          b.label.empty() ? "" : ", label " + b.label, b.seed, b.started_at, b.finished_at));
  out += line(fmt::format("kernel   {} {}", str(b.kernel, "release"), str(b.kernel, "version", "")));
  out += line(fmt::format("host     {} ({} online CPUs), fingerprint {}", str(b.host, "cpu_model"),
                          b.host.contains("topology") ? str(b.host.at("topology"), "online_cpus") : "?",
                          str(b.host, "fingerprint")));
  // What `schedlab diff` does with it: verdicts rest on trials, so a quick run's fewer repetitions make
  // its trial medians noisier but do not by themselves withhold a verdict; one trial does.
  if (b.smoke)
    out += line(
        b.trials >= 2
            ? fmt::format("note     quick run: {} repetitions per trial (9 by default) make each trial's "
                          "median noisier; diff's verdicts rest on the {} trials",
                          b.instances.empty() ? 0 : b.instances.front().repetitions.size(), b.trials)
            : "note     quick run of one trial: diff compares its repetitions but gives no verdict; take "
              "--trials 6 or more (interleaved with the other side) for one");
  for (const auto& w : warnings) out += line("warning  " + w);
  Table t({{"instance", false, false, true, 12},
           {"headline", false, false, true, 10},
           {"median", true},
           {"CV", true},
           {"n", true},
           {"status", false},
           {"warnings", false}});
  for (const auto& in : b.instances) add_instance_rows(t, in);
  out += "\n" + t.text(width);
  std::string failed;
  for (const auto& in : b.instances) failed += failures(in, width);
  if (!failed.empty()) out += "\n" + failed;
  if (options.counters)
    for (const auto& in : b.instances) out += "\n" + counters(in, width);
  else if (std::any_of(b.instances.begin(), b.instances.end(), [](const Instance& in) {
             return !in.repetitions.empty() && !in.repetitions[0].counters.empty();
           }))
    out += "(counters: schedlab show --counters BUNDLE)\n";
  return out;
}

}  // namespace schedlab
