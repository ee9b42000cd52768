#pragma once
// The sections of the report's data, each built from the loaded sides (report_data.cpp puts them together).
#include <vector>

#include <nlohmann/json.hpp>

#include "diff/sides.hpp"

namespace schedlab::report {

// Per side: name, spec, and per bundle the run's identity (label, run id, kernel, host, dates, path).
nlohmann::json side_identities(const std::vector<Side>& sides);

// Every environment field of the diff's table (objects and feature lists one row per key), the value of
// each side, and whether the sides differ.
nlohmann::json environment_rows(const std::vector<Side>& sides);

// Per workload instance of the first side: for headline metrics the values the charts plot (per side and
// trial, the ok repetitions' values in run order, as the diff reads them) and their summary; latency
// histograms merged over the ok repetitions. With one side, where there is no diff to make the tables
// from, a summary of every metric and counter too, and the profile's top symbols.
nlohmann::json instance_series(const std::vector<Side>& sides);

}  // namespace schedlab::report
