#pragma once
// Checks a kernel config (boot/config-RELEASE of a package, or a built .config) against what a
// recipe requires, and says what is missing: "CONFIG_SCHED_CLASS_EXT is not set (need y)".
#include <string>
#include <vector>

#include "kernels/recipe.hpp"

namespace schedlab::kernels {

struct ConfigFinding {
  ConfigRequirement requirement;
  std::string actual;  // "y", "m", "250", or "" when not set / absent
  bool ok = false;
  std::string text() const;  // "CONFIG_X=y ok" / "CONFIG_X is not set (need y)"
};

struct ConfigReport {
  std::vector<ConfigFinding> findings;
  bool ok() const;
  std::vector<std::string> missing() const;  // the text() of each failed finding
};

ConfigReport check_config(const std::vector<ConfigRequirement>& require, const std::string& config_text);

}  // namespace schedlab::kernels
