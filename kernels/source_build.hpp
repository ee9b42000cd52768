#pragma once
// Source recipes: Debian's linux-source tarball at a pinned version, the base recipe's packaged
// config plus a fragment, a patch series, `make olddefconfig`, then a build with all cores. Cached
// under CACHE/builds/<recipe>-<hash of version, base config, fragment and patches>/ like a fetched
// package (root/boot/vmlinuz-R, config-R, System.map-R, lib/modules/R).
#include <filesystem>
#include <iosfwd>
#include <optional>

#include "kernels/package_cache.hpp"
#include "kernels/recipe.hpp"

namespace schedlab::kernels {

struct SourceBuildOptions {
  bool prepare_only = false;  // stop after the patches and olddefconfig (checks they apply)
  int jobs = 0;               // make -j; 0: every online CPU
};

// The built kernel if this exact recipe (by content hash) was built before.
std::optional<KernelArtifacts> cached_build(const Recipe& recipe, const std::filesystem::path& recipes_dir,
                                            const std::filesystem::path& cache_dir);

// Builds (or finds) the kernel. A patch that does not apply, or a fragment option olddefconfig
// drops, is an Error naming the patch or the options. Returns the tree for prepare_only (root empty).
KernelArtifacts build_kernel(const Recipe& recipe, const std::filesystem::path& recipes_dir,
                             const std::filesystem::path& cache_dir, const SourceBuildOptions& options,
                             std::ostream& log);

}  // namespace schedlab::kernels
