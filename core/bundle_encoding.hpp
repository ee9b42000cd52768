#pragma once
// The file form of schedlab.result/2: what a bundle holds, with the parts that repeat written once.
//
// - `counter_defaults` {EVENT: {field: value}} holds the fields that every reading of a counter in the
//   bundle has, with the same value (its encoding, unit, scope, an unsupported event's errno and reason
//   ...); each repetition's reading keeps the rest ({"value": 60, "raw": 60, ...}, or {} when nothing
//   varies). Which fields is decided per bundle from the readings themselves, so a field a counter source
//   adds later is factored, or kept per reading, like any other.
// - `system.per_cpu_table` {"cpus": [...], "fields": [...], "values": [[one row per CPU]]} replaces the
//   object of objects `system.per_cpu`, and `system.schedstat.cpu_table` the per-CPU and per-domain
//   deltas under `system.schedstat.cpus`; a value a CPU lacks is null. Written only where every value is
//   a number (otherwise the object stays as it was).
// - A latency histogram's `buckets` [[lower, upper, count], ...] (core/histogram.hpp) become
//   `bucket_runs` [[lower, width, count, count, ...], ...]: a run per stretch of adjacent buckets of one
//   width, whose bounds lower + k * width give back exactly the bounds written (checked when writing).
//
// Expanding gives back exactly the JSON that was compacted. Per-operation copies of counters are not
// stored at all in /2 (per_operation.hpp): the writer leaves out the ones the reader derives identically.
#include <string>

#include <nlohmann/json.hpp>

namespace schedlab {

// `bundle` as to_json writes it (schema /2) -> the file form.
nlohmann::json compact_bundle(nlohmann::json bundle);

// True for a /2 document with compact parts to expand.
bool has_compact_parts(const nlohmann::json& bundle);

// The file form -> the JSON to_json writes; throws BundleError naming `source` and the JSON path of a
// malformed compact part.
nlohmann::json expand_bundle(nlohmann::json bundle, const std::string& source);

}  // namespace schedlab
