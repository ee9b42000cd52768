#pragma once
// Counters per operation ("EVENT/op"), derived from a repetition's totals and the workload's metric
// `operations`. The runner adds them to every ok repetition; bundles since schedlab.result/2 do not store
// them (they are the totals divided by a stored number) and the reader derives them again, so every
// reader sees them whichever version it read.
#include <string>

#include "core/result.hpp"

namespace schedlab {

inline constexpr const char* kPerOperationSuffix = "/op";

// Adds "EVENT/op" for every ok counter of an ok repetition that reports `operations` > 0; a copy the
// repetition holds already (a bundle that stored them) is kept as it was.
void add_per_operation_counters(Repetition& rep);

// The total that "EVENT/op" was derived from ("EVENT"), or empty when `event` is not such a name.
std::string per_operation_source(const std::string& event);

// True when the repetition's `event` is exactly what add_per_operation_counters derives from its total:
// a writer may leave it out, since the reader derives the same reading again.
bool is_derived_per_operation(const Repetition& rep, const std::string& event);

}  // namespace schedlab
