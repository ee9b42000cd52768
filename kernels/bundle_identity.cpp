#include "kernels/bundle_identity.hpp"

#include "core/host_paths.hpp"

namespace schedlab::kernels {

std::optional<std::string> bundle_identity_mismatch(const nlohmann::json& bundle,
                                                    const std::vector<BootedKernel>& booted) {
  if (!bundle.is_object() || !bundle.contains("kernel") || !bundle["kernel"].is_object()) return std::nullopt;
  const auto& k = bundle["kernel"];
  std::string recipe;
  if (k.contains("booted_by") && k["booted_by"].is_object() && k["booted_by"].contains("recipe") &&
      k["booted_by"]["recipe"].is_string())
    recipe = k["booted_by"]["recipe"].get<std::string>();
  const BootedKernel* match = nullptr;
  for (const auto& b : booted)
    if (b.recipe == recipe) match = &b;
  if (!recipe.empty() && !match) {
    std::string asked;
    for (const auto& b : booted) asked += (asked.empty() ? "" : " or ") + b.recipe;
    return "booted by recipe " + recipe + ", not by the requested " + asked;
  }
  // Without a booted_by (a guest whose command line lost the marker) the only kernel asked for is
  // the one to compare with; with two (a --then boot) there is nothing to choose by.
  if (!match && booted.size() == 1) match = &booted.front();
  if (!match || match->kernel.build_id.empty()) return std::nullopt;
  if (!k.contains("build_id") || !k["build_id"].is_string()) return std::nullopt;
  const auto id = k["build_id"].get<std::string>();
  if (id == match->kernel.build_id) return std::nullopt;
  return "kernel build id " + id + " is not the build id " + match->kernel.build_id + " of " + match->recipe +
         "'s vmlinux" + (match->kernel.hash.empty() ? "" : " (build " + match->kernel.hash + ")");
}

std::optional<std::string> bundles_identity_mismatch(const std::vector<std::filesystem::path>& bundles,
                                                     const std::vector<BootedKernel>& booted) {
  std::string reasons;
  for (const auto& file : bundles) {
    std::optional<std::string> why;
    const auto text = read_text(file);
    if (!text) {
      why = "cannot read it";
    } else {
      const auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
      why = j.is_discarded() ? std::optional<std::string>("not JSON") : bundle_identity_mismatch(j, booted);
    }
    if (why) reasons += (reasons.empty() ? "" : "; ") + file.filename().string() + ": " + *why;
  }
  return reasons.empty() ? std::nullopt : std::optional<std::string>(reasons);
}

}  // namespace schedlab::kernels
