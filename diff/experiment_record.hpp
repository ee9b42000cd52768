#pragma once
// The experiment behind a diff: when the two sides are the two sides of one `run --versus` experiment
// (OUT/<id>/a and OUT/<id>/b), its record OUT/<id>/experiment.json holds what the diff's fixed-n tests
// cannot know: the design, every look and why it stopped.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diff/sides.hpp"

namespace schedlab {

// {id, record, design, plan, looks, stop} of that experiment; null when the sides are not one
// experiment's, or its record is missing or not of that experiment (then `warnings` says so).
nlohmann::json experiment_behind(const std::vector<Side>& sides, std::vector<std::string>& warnings);

// The text report's lines for it: the design, each look (n, estimate, interval, boundary, state) and
// the stop.
std::string format_experiment_text(const nlohmann::json& experiment);

}  // namespace schedlab
