#pragma once
// What the diagnostic repetitions measured, two sides side by side, per operation where the workload
// counts operations (else per repetition): the `--trace` summaries of the workload's tasks, and the
// schedstat counters (switched on for those repetitions, where timed ones may have found them off).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diff/samples.hpp"

namespace schedlab {

struct DiagnosticRow {
  std::string measure;
  std::string unit;
  double base = 0;
  double other = 0;
};

struct DiagnosticTable {
  std::string kind;  // "trace" or "schedstat"
  std::string side;
  std::string per;  // "operation" or "repetition"
  std::size_t base_repetitions = 0, other_repetitions = 0;
  std::vector<DiagnosticRow> rows;
};

// Empty `rows` when either side has no traced repetition.
DiagnosticTable diff_traces(const std::string& side, const InstanceSamples& base,
                            const InstanceSamples& other);
// Empty `rows` when either side has no diagnostic repetition with schedstat counters.
DiagnosticTable diff_diagnostic_schedstat(const std::string& side, const InstanceSamples& base,
                                          const InstanceSamples& other);

std::string format_diagnostic_table(const DiagnosticTable& d, const std::string& base_name);
nlohmann::json to_json(const DiagnosticTable& d);

}  // namespace schedlab
