#pragma once
// The `--trace` summaries of two sides side by side: the workload's tasks' totals from the traced
// diagnostic repetitions, per operation where the workload counts operations (else per repetition).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diff/samples.hpp"

namespace schedlab {

struct TraceRow {
  std::string measure;
  std::string unit;
  double base = 0;
  double other = 0;
};

struct TraceDiff {
  std::string side;
  std::string per;  // "operation" or "repetition"
  std::size_t base_repetitions = 0, other_repetitions = 0;
  std::vector<TraceRow> rows;
};

// Empty `rows` when either side has no traced repetition.
TraceDiff diff_traces(const std::string& side, const InstanceSamples& base, const InstanceSamples& other);

std::string format_trace_diff(const TraceDiff& d, const std::string& base_name);
nlohmann::json to_json(const TraceDiff& d);

}  // namespace schedlab
