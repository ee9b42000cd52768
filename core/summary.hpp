#pragma once
// The plain-text summary of a bundle that `schedlab show` and `schedlab run` print: the run, then one
// line per instance (headline median, CV, n, status, warnings), the repetitions that failed and why, and
// with `counters` every counter per instance.
#include <string>
#include <vector>

#include "core/result.hpp"

namespace schedlab {

struct SummaryOptions {
  bool counters = false;    // show --counters
  std::size_t width = 100;  // columns the text keeps to
};

std::string format_summary(const Bundle& bundle, const std::string& source,
                           const std::vector<std::string>& warnings, const SummaryOptions& options = {});

}  // namespace schedlab
