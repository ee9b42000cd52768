#pragma once
// Kernels a developer brings as source: a git repository at a ref (built at the commit the ref names
// when built, in a clone of its own) or a local tree as it is (built out of tree with O=, or in place
// when the recipe takes the tree's own .config). Cached under CACHE/builds/<name>-<hash>/ like a source
// recipe, with built.json recording the commit, whether the tree was dirty, and how the build began.
//
// Two refs of one repository, one build and a bit: a git build starts from the compiled clone of the
// last build of the same repository (copied, then `git checkout` of the new commit, which rewrites
// only the files the commits between them touch), so make compiles only what changed.
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include "kernels/package_cache.hpp"
#include "kernels/recipe.hpp"
#include "kernels/source_build.hpp"

namespace schedlab::kernels {

// What the recipe's source is right now.
struct UserSourceState {
  std::filesystem::path repository;  // canonical
  std::string commit;                // 40 hex; empty for a tree that is not a git repository
  std::string describe;              // tree: `git describe --always --dirty`, or "" outside git
  bool dirty = false;                // tree: uncommitted changes to tracked files
};

// Resolves a git recipe's ref (InputError "REPO: ref 'X' does not resolve to a commit") or reads a tree
// (InputError for a dirty repository unless allow_dirty).
UserSourceState user_source_state(const Recipe& recipe);

std::optional<KernelArtifacts> cached_user_build(const Recipe& recipe,
                                                 const std::filesystem::path& recipes_dir,
                                                 const std::filesystem::path& cache_dir);

KernelArtifacts build_user_kernel(const Recipe& recipe, const std::filesystem::path& recipes_dir,
                                  const std::filesystem::path& cache_dir, const SourceBuildOptions& options,
                                  std::ostream& log);

}  // namespace schedlab::kernels
