#include "kernels/config_check.hpp"

#include <algorithm>
#include <map>
#include <sstream>

namespace schedlab::kernels {
namespace {

std::string allowed_text(const ConfigRequirement& r) {
  std::string out;
  for (const auto& a : r.allowed) out += (out.empty() ? "" : " or ") + a;
  return out;
}

}  // namespace

std::string ConfigFinding::text() const {
  const std::string name = "CONFIG_" + requirement.option;
  if (ok) return actual.empty() ? name + " is not set" : name + "=" + actual;
  if (actual.empty()) return name + " is not set (need " + allowed_text(requirement) + ")";
  return name + "=" + actual + " (need " + allowed_text(requirement) + ")";
}

bool ConfigReport::ok() const {
  return std::all_of(findings.begin(), findings.end(), [](const ConfigFinding& f) { return f.ok; });
}

std::vector<std::string> ConfigReport::missing() const {
  std::vector<std::string> out;
  for (const auto& f : findings)
    if (!f.ok) out.push_back(f.text());
  return out;
}

ConfigReport check_config(const std::vector<ConfigRequirement>& require, const std::string& config_text) {
  std::map<std::string, std::string> values;  // "SCHEDSTATS" -> "y"; "# ... is not set" lines are absent
  std::istringstream in(config_text);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (line.rfind("CONFIG_", 0) != 0 || eq == std::string::npos) continue;
    auto value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    values[line.substr(7, eq - 7)] = value;
  }
  ConfigReport report;
  for (const auto& r : require) {
    ConfigFinding f{r, "", false};
    if (auto it = values.find(r.option); it != values.end()) f.actual = it->second;
    auto allows = [&](const std::string& v) {
      return std::find(r.allowed.begin(), r.allowed.end(), v) != r.allowed.end();
    };
    // "n" is "must be off": a config says that with "# CONFIG_X is not set", "CONFIG_X=n" or by
    // leaving the option out (one that depends on something off is not even listed).
    f.ok = (f.actual.empty() || f.actual == "n") ? allows("n") : allows(f.actual);
    report.findings.push_back(std::move(f));
  }
  return report;
}

}  // namespace schedlab::kernels
