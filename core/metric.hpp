#pragma once
// The metric catalogue is data: a workload declares each metric once with its unit,
// direction and help text; bundles, `schedlab workloads` and (later) exporters read it.
#include <string>

namespace schedlab {

enum class Direction { kLowerIsBetter, kHigherIsBetter };

std::string to_string(Direction d);
Direction direction_from_string(const std::string& s);  // throws InputError

struct MetricValue {
  double value = 0;
  std::string unit;
};

struct MetricDesc {
  std::string name;
  std::string unit;  // "ns", "s", "count", "us", "pct", ...
  Direction direction = Direction::kLowerIsBetter;
  bool headline = false;  // the diff gives verdicts only on headline metrics
  std::string help;
};

// Units that measure a duration: such values may never be negative.
bool is_duration_unit(const std::string& unit);

}  // namespace schedlab
