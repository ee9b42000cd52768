#pragma once
// Parameter declarations and their validation. A workload declares its parameters as data;
// `schedlab workloads` lists them and `--param WORKLOAD.KEY=VALUE` is checked against them.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace schedlab {

enum class ParamKind { kInteger, kNumber, kChoice, kText };

struct ParamSpec {
  std::string key;
  ParamKind kind = ParamKind::kInteger;
  nlohmann::json default_value;
  std::string unit;  // "" when dimensionless
  std::string help;
  std::optional<double> min;
  std::optional<double> max;
  // kChoice, listed as `schedlab workloads` and errors show them; an entry PREFIX:PLACEHOLDER, the
  // placeholder in capitals (fifo:PRIO, hogs:N), takes any value after PREFIX: that the workload checks.
  std::vector<std::string> choices;
  // A parameter added after bundles were stored whose default changes nothing (yield.spin_ns = 0):
  // left out of the resolved parameters at its default, so their hash, and the instance old bundles
  // and the store know, stays the same.
  bool omitted_at_default = false;

  std::string kind_name() const;
};

// Resolved parameters: every declared key present, validated. Stored in bundles as given here.
using ParamValues = nlohmann::json;

// Converts one textual value; throws InputError "WORKLOAD.KEY: ...".
nlohmann::json parse_param_value(const std::string& workload, const ParamSpec& spec, const std::string& text);

// Defaults overlaid with the given textual values; unknown keys are InputErrors naming the known ones.
// A parameter `omitted_at_default` is absent while it holds its default.
ParamValues resolve_params(const std::string& workload, const std::vector<ParamSpec>& specs,
                           const std::map<std::string, std::string>& given);

}  // namespace schedlab
