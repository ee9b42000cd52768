#include "core/metric.hpp"

#include <array>
#include <string_view>

#include "core/error.hpp"

namespace schedlab {

std::string to_string(Direction d) {
  return d == Direction::kHigherIsBetter ? "higher_is_better" : "lower_is_better";
}

Direction direction_from_string(const std::string& s) {
  if (s == "higher_is_better") return Direction::kHigherIsBetter;
  if (s == "lower_is_better") return Direction::kLowerIsBetter;
  throw InputError("unknown metric direction '" + s + "' (higher_is_better or lower_is_better)");
}

bool is_duration_unit(const std::string& unit) {
  constexpr std::array<std::string_view, 4> kUnits{"ns", "us", "ms", "s"};
  for (auto u : kUnits)
    if (unit == u) return true;
  return false;
}

}  // namespace schedlab
