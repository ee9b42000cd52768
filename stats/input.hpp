#pragma once
// Argument checks shared by the statistics functions (internal to schedlab_stats). Each throws
// std::invalid_argument naming the function and the argument at fault.
#include <span>

namespace schedlab::stats::detail {

// Rank-based functions only order their input: infinities are fine, NaN is not.
void require_no_nan(std::span<const double> values, const char* function, const char* name);
// Functions that subtract or average their input need every value finite.
void require_finite(std::span<const double> values, const char* function, const char* name);
// A probability strictly between 0 and 1 (a confidence level, alpha or power).
void require_open_unit(double value, const char* function, const char* name);

}  // namespace schedlab::stats::detail
