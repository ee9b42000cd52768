#include "core/per_operation.hpp"

#include <fmt/format.h>

namespace schedlab {
namespace {

const MetricValue* operations_of(const Repetition& rep) {
  const auto ops = rep.metrics.find("operations");
  if (!rep.ok() || ops == rep.metrics.end() || !(ops->second.value > 0)) return nullptr;
  return &ops->second;
}

// Only the runner holds the counts, only the workload knows what an operation is. The copy keeps every
// field of the total (whatever fields a counter source adds) and says what it is in its note.
CounterReading per_operation(const std::string& event, const CounterReading& total, double operations) {
  CounterReading d = total;
  d.value = total.value / operations;
  d.unit = total.unit + kPerOperationSuffix;
  d.note = fmt::format("{} divided by the workload's metric operations ({:.0f}){}", event, operations,
                       total.note.empty() ? "" : "; " + total.note);
  return d;
}

}  // namespace

void add_per_operation_counters(Repetition& rep) {
  const auto* ops = operations_of(rep);
  if (!ops) return;
  std::map<std::string, CounterReading> derived;
  for (const auto& [event, c] : rep.counters) {
    if (!c.ok() || !per_operation_source(event).empty()) continue;
    derived.emplace(event + kPerOperationSuffix, per_operation(event, c, ops->value));
  }
  rep.counters.merge(derived);  // keeps a stored copy where there is one
}

std::string per_operation_source(const std::string& event) {
  const std::string suffix = kPerOperationSuffix;
  if (event.size() <= suffix.size() ||
      event.compare(event.size() - suffix.size(), suffix.size(), suffix) != 0)
    return "";
  return event.substr(0, event.size() - suffix.size());
}

bool is_derived_per_operation(const Repetition& rep, const std::string& event) {
  const auto* ops = operations_of(rep);
  const auto source = per_operation_source(event);
  if (!ops || source.empty()) return false;
  const auto total = rep.counters.find(source);
  const auto copy = rep.counters.find(event);
  if (total == rep.counters.end() || copy == rep.counters.end() || !total->second.ok()) return false;
  // Compared as written: every field the encoder writes, whichever fields a source adds.
  return to_json(per_operation(source, total->second, ops->value)) == to_json(copy->second);
}

}  // namespace schedlab
