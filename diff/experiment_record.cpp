#include "diff/experiment_record.hpp"

#include <fmt/format.h>

#include <fstream>
#include <set>

namespace schedlab {
namespace {

std::string interval_text(const nlohmann::json& pair) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_number()) return "[-, -]";
  return fmt::format("[{:+.2f}%, {:+.2f}%]", pair[0].get<double>(), pair[1].get<double>());
}

}  // namespace

nlohmann::json experiment_behind(const std::vector<Side>& sides, std::vector<std::string>& warnings) {
  if (sides.size() != 2) return nullptr;
  std::set<std::string> ids;
  for (const auto& side : sides)
    for (const auto& b : side.bundles) {
      const auto& tag = b.bundle.experiment;
      ids.insert(tag.is_object() ? tag.value("id", std::string()) : std::string());
    }
  if (ids.size() != 1 || ids.begin()->empty()) return nullptr;
  const std::string id = *ids.begin();
  const auto file = sides[0].bundles.front().path.parent_path().parent_path() / "experiment.json";
  nlohmann::json record;
  try {
    std::ifstream in(file);
    if (in) record = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    warnings.push_back(
        fmt::format("the trials are experiment {}'s, but {} does not parse ({}): its design, "
                    "looks and stop are not shown",
                    id, file.string(), e.what()));
    return nullptr;
  }
  if (!record.is_object() || record.value("id", std::string()) != id) {
    warnings.push_back(
        fmt::format("the trials are experiment {}'s, but {} is {}: its design, looks and stop "
                    "are not shown",
                    id, file.string(), record.is_object() ? "another's" : "missing"));
    return nullptr;
  }
  nlohmann::json j = {{"id", id},
                      {"record", file.string()},
                      {"design", record.value("design", nlohmann::json())},
                      {"plan", record.value("plan", nlohmann::json())},
                      {"looks", record.value("looks", nlohmann::json::array())},
                      {"stop", record.value("stop", nlohmann::json())}};
  const bool sequential = j["design"].is_object() && j["design"].value("kind", "") == "sequential";
  const auto& stop = j["stop"];
  if (sequential && stop.is_object())
    warnings.push_back(fmt::format(
        "the trials are sequential experiment {}'s, which stopped on its own looks ({}): its verdict is "
        "'{}' by its confidence sequence; the fixed-n tests below do not allow for that stopping",
        id, stop.value("reason", "?"), stop.value("verdict", "?")));
  else if (!stop.is_object())
    warnings.push_back(
        fmt::format("experiment {} has not stopped (running, or interrupted before its record "
                    "was finished): the trials below are what it had",
                    id));
  return j;
}

std::string format_experiment_text(const nlohmann::json& e) {
  if (!e.is_object()) return "";
  const auto& d = e["design"];
  std::string out;
  if (d.is_object() && d.value("kind", "") == "sequential")
    out += fmt::format("experiment {} (sequential: target {:g}%, margin ±{:g}%, alpha {:g}; {})\n",
                       e["id"].get<std::string>(), d.value("target_mde_pct", 0.0), d.value("margin_pct", 0.0),
                       d.value("alpha", 0.0), d.value("procedure", ""));
  else
    out += fmt::format("experiment {} (fixed: {} pairs)\n", e["id"].get<std::string>(),
                       d.is_object() ? d.value("pairs", 0) : 0);
  for (const auto& l : e["looks"])
    out += fmt::format("  look n={:<4} estimate {:+.2f}%  interval {}  boundary {}  {}\n", l.value("n", 0),
                       l.value("estimate_pct", 0.0), interval_text(l.value("interval_pct", nlohmann::json())),
                       interval_text(l.value("boundary_pct", nlohmann::json())), l.value("state", ""));
  if (const auto& s = e["stop"]; s.is_object())
    out += fmt::format("  stopped after {} pairs: {}; verdict: {}\n", s.value("pairs_used", 0),
                       s.value("reason", ""), s.value("verdict", ""));
  return out + "\n";
}

}  // namespace schedlab
