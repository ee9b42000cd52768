#include "core/display.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

namespace schedlab {
namespace {

// Seconds per unit of the time units a metric or counter may carry.
const std::map<std::string, double>& time_units() {
  static const std::map<std::string, double> units = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};
  return units;
}

std::string three_digits(double v) {
  const double a = std::fabs(v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  if (a >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3g}", v);
}

// The unit per operation ("ns/op") keeps its suffix through a change of time unit.
std::pair<std::string, std::string> split_per(const std::string& unit) {
  const auto slash = unit.find('/');
  return slash == std::string::npos ? std::pair{unit, std::string()}
                                    : std::pair{unit.substr(0, slash), unit.substr(slash)};
}

}  // namespace

DisplayScale display_scale(double v, const std::string& unit) {
  auto [base, per] = split_per(unit);
  const double a = std::fabs(v);
  if (auto it = time_units().find(base); it != time_units().end() && v != 0 && std::isfinite(v)) {
    for (const auto& [name, seconds] : {std::pair{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}})
      if (a * it->second / seconds < 1000 || std::string(name) == "s")
        return {it->second / seconds, "", std::string(" ") + name + per};
  }
  DisplayScale s;
  if (a >= 1e10)
    s = {1e-9, "G", ""};
  else if (a >= 1e7)
    s = {1e-6, "M", ""};
  else if (a >= 1e4)
    s = {1e-3, "k", ""};
  if (base == "pct" || base == "%")
    s.unit = "%" + per;
  else if (base == "count")
    s.unit = per;
  else if (!unit.empty())
    s.unit = " " + unit;
  return s;
}

std::string scaled_number(double v, const DisplayScale& s, bool sign) {
  if (!std::isfinite(v)) return "n/a";
  if (v == 0) return "0";
  return (sign && v > 0 ? "+" : "") + three_digits(v * s.factor) + s.magnitude;
}

std::string human_value(double v, const std::string& unit) {
  if (!std::isfinite(v)) return "n/a";
  const auto s = display_scale(v, unit);
  return scaled_number(v, s, false) + s.unit;
}

std::string instance_label(const std::string& id, const std::string& workload) {
  // The runner names a sweep's instance ID.KEY=VALUE[,KEY=VALUE...] (collector/runner/runner.cpp).
  const auto prefix = workload + ".";
  if (id.rfind(prefix, 0) != 0) return id;
  std::string values;
  std::size_t start = prefix.size();
  for (;;) {
    const auto eq = id.find('=', start);
    if (eq == std::string::npos) return id;
    const auto comma = id.find(',', eq);
    const auto value = id.substr(eq + 1, comma - eq - 1);
    // "pipe:other-core" says what it is; "4" needs its key ("jobs=4").
    const bool words = std::any_of(value.begin(), value.end(),
                                   [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
    values += (values.empty() ? "" : ",") + (words ? value : id.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return workload + " " + values;
}

}  // namespace schedlab
