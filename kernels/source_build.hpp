#pragma once
// Source recipes: Debian's linux-source tarball at a pinned version, the base recipe's packaged
// config plus a fragment, a patch series, `make olddefconfig`, then a build with all cores. Cached
// under CACHE/builds/<recipe>-<hash of version, base config, fragment and patches>/ like a fetched
// package (root/boot/vmlinuz-R, config-R, System.map-R, lib/modules/R).
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include "kernels/package_cache.hpp"
#include "kernels/recipe.hpp"

namespace schedlab::kernels {

struct SourceBuildOptions {
  bool prepare_only = false;  // stop after the patches and olddefconfig (checks they apply)
  int jobs = 0;               // make -j; 0: every online CPU
  bool allow_dirty = false;   // a tree recipe: build a repository with uncommitted changes
};

// The built kernel if this exact recipe (by content hash) was built before. Every kind but package:
// git and tree recipes are built by user_build.hpp, image recipes installed by image_kernel.hpp.
std::optional<KernelArtifacts> cached_build(const Recipe& recipe, const std::filesystem::path& recipes_dir,
                                            const std::filesystem::path& cache_dir);

// Builds (or finds) the kernel. A patch that does not apply exactly (no fuzz), a fragment option
// olddefconfig drops (or turns on where the fragment says off), or a [config] require the configured
// tree lacks, is an Error naming the patch, the file and the options, before anything is compiled.
// Every tool's output goes to CACHE/builds/<name>-<hash>/build.log, kept on failure. Returns the tree
// for prepare_only (root empty); a finished build is returned as it is, for prepare_only too.
KernelArtifacts build_kernel(const Recipe& recipe, const std::filesystem::path& recipes_dir,
                             const std::filesystem::path& cache_dir, const SourceBuildOptions& options,
                             std::ostream& log);

// The first line of a tool's output that reads like the cause of a failure (`error:`, make's
// "Error 2", kconfig's "***"), or nullopt: what a failed build shows before the path of its log.
std::optional<std::string> first_error_line(const std::string& output);

// The GNU build ID note of an ELF64 file (a built vmlinux) as hex, the same id a booted kernel shows
// in /sys/kernel/notes (and a bundle records as kernel.build_id); nullopt when absent or unreadable.
std::optional<std::string> elf_build_id(const std::filesystem::path& elf);

}  // namespace schedlab::kernels
