#pragma once
// The plain-text summary of a bundle that `schedlab show` and `schedlab run` print.
#include <string>
#include <vector>

#include "core/result.hpp"

namespace schedlab {

std::string format_summary(const Bundle& bundle, const std::string& source,
                           const std::vector<std::string>& warnings);

}  // namespace schedlab
