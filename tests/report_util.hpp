#pragma once
// Reading a written report back, and reading bundles the way a side holds them, for the report's tests.
#include <algorithm>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace schedlab::testing {

inline constexpr const char* kDataOpen = R"(<script type="application/json" id="report-data">)";

// The page's data block, parsed (JSON reads the \u003c escapes back as `<`).
inline nlohmann::json report_data_of(const std::string& html) {
  auto open = html.find(kDataOpen);
  if (open == std::string::npos) return nullptr;
  open += std::string(kDataOpen).size();
  auto close = html.find("</script>", open);
  return nlohmann::json::parse(html.substr(open, close - open));
}

// A side's bundles (a file, or every *.json under a directory), ordered as schedlab diff orders trials.
inline std::vector<nlohmann::json> bundles_of(const std::filesystem::path& spec) {
  std::vector<nlohmann::json> out;
  if (std::filesystem::is_regular_file(spec)) {
    out.push_back(nlohmann::json::parse(slurp(spec)));
  } else {
    for (const auto& e : std::filesystem::recursive_directory_iterator(spec))
      if (e.path().extension() == ".json") out.push_back(nlohmann::json::parse(slurp(e.path())));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(a["started_at"].template get<std::string>(), a["trial"].template get<int>()) <
           std::make_tuple(b["started_at"].template get<std::string>(), b["trial"].template get<int>());
  });
  return out;
}

inline std::string instance_key(const nlohmann::json& instance) {
  return instance["workload"].get<std::string>() + "/" + instance["params_hash"].get<std::string>();
}

// Every copy (one per trial) of the instance with this key.
inline std::vector<nlohmann::json> instances_of(const std::vector<nlohmann::json>& bundles,
                                                const std::string& key) {
  std::vector<nlohmann::json> out;
  for (const auto& b : bundles)
    for (const auto& in : b["instances"])
      if (instance_key(in) == key) out.push_back(in);
  return out;
}

// The timed ok repetitions, trial after trial, in run order.
inline std::vector<nlohmann::json> ok_repetitions(const std::vector<nlohmann::json>& bundles,
                                                  const std::string& key) {
  std::vector<nlohmann::json> out;
  for (const auto& in : instances_of(bundles, key))
    for (const auto& rep : in["repetitions"])
      if (rep["status"] == "ok") out.push_back(rep);
  return out;
}

}  // namespace schedlab::testing
