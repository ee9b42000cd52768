#pragma once
// After a boot: did each bundle come from the kernel that was asked for? A bundle records the
// running kernel's GNU build id (kernel.build_id, from /sys/kernel/notes) and the recipe on its
// command line (kernel.booted_by.recipe); a source build records its vmlinux's build id in built.json
// (KernelArtifacts::build_id). Two twins, or two revisions of one patch, share a release string, so
// only the build id tells them apart.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/package_cache.hpp"

namespace schedlab::kernels {

// What one boot asked for: the recipe name on the command line and the kernel booted for it.
struct BootedKernel {
  std::string recipe;
  KernelArtifacts kernel;
};

// Why `bundle` (a parsed schedlab.bundle) does not belong to any of `booted`, or nullopt when it does
// or when the ids needed to tell are unknown (a packaged kernel has no recorded build id; a bundle
// from a kernel without notes has build_id null). A bundle whose booted_by names another recipe, or
// whose build_id differs from its recipe's kernel's, is a mismatch naming both.
std::optional<std::string> bundle_identity_mismatch(const nlohmann::json& bundle,
                                                    const std::vector<BootedKernel>& booted);

// The same for bundle files; the reasons joined with "; ", each starting with the file's name. A file
// that cannot be read or parsed is a mismatch too (a result nobody can trace).
std::optional<std::string> bundles_identity_mismatch(const std::vector<std::filesystem::path>& bundles,
                                                     const std::vector<BootedKernel>& booted);

}  // namespace schedlab::kernels
