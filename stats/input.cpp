#include "stats/input.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace schedlab::stats::detail {

void require_no_nan(std::span<const double> values, const char* function, const char* name) {
  for (double v : values)
    if (std::isnan(v)) throw std::invalid_argument(std::string(function) + ": " + name + " contains NaN");
}

void require_finite(std::span<const double> values, const char* function, const char* name) {
  require_no_nan(values, function, name);
  for (double v : values)
    if (std::isinf(v))
      throw std::invalid_argument(std::string(function) + ": " + name + " contains an infinite value");
}

void require_open_unit(double value, const char* function, const char* name) {
  if (!(value > 0 && value < 1))  // also rejects NaN
    throw std::invalid_argument(std::string(function) + ": " + name +
                                " must lie strictly between 0 and 1, got " + std::to_string(value));
}

}  // namespace schedlab::stats::detail
