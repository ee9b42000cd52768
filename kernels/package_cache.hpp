#pragma once
// Package recipes: ask apt which versions the archive has, download the pinned linux-image package
// with `apt-get download PKG=VERSION`, and unpack it into a cache keyed by package version:
// CACHE/kernels/<package>_<version>/root/{boot/vmlinuz-R,boot/System.map-R,boot/config-R,lib/modules/R}
// (modules.dep made with `depmod -b`, since the package leaves that to its postinst).
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/recipe.hpp"

namespace schedlab::kernels {

struct KernelArtifacts {
  std::string package, version, release;
  std::filesystem::path root;                                  // the unpacked package
  std::filesystem::path vmlinuz, system_map, config, modules;  // modules = lib/modules/RELEASE
  // Source builds only (empty for a package): the recipe hash naming CACHE/builds/<name>-<hash> and
  // the GNU build id of its vmlinux, which a booted kernel's bundle must show (kernel.build_id).
  std::string hash = {}, build_id = {};  // defaulted: an aggregate list may stop before them
  // Where a user's kernel came from, as kernel command-line words schedlab.NAME=VALUE that its bundles
  // record under kernel.booted_by: {"source","git"}, {"commit",ID}, {"repo",PATH}, {"image",SHA256}...
  std::vector<std::pair<std::string, std::string>> identity = {};
};

// A kernel installed under `root` as a package installs it: boot/{vmlinuz,System.map,config}-RELEASE
// and lib/modules/RELEASE.
KernelArtifacts artifacts_under(const std::filesystem::path& root, const std::string& package,
                                const std::string& version, const std::string& release);

// What `apt-cache policy PACKAGE` says; versions empty when apt does not know the package.
struct AptPolicy {
  std::optional<std::string> installed, candidate;
  std::vector<std::string> versions;  // the version table, newest first
};
AptPolicy apt_policy(const std::string& package);
AptPolicy parse_apt_policy(const std::string& text);  // exposed for tests

// The kernel of a package recipe if it is already in the cache (fetch never re-downloads it).
std::optional<KernelArtifacts> cached_kernel(const Recipe& recipe, const std::filesystem::path& cache_dir);

// Downloads and unpacks the recipe's pinned package unless cached. A pin the archive lacks is an
// Error naming `schedlab kernel update`. Progress lines go to `log`.
KernelArtifacts fetch_kernel(const Recipe& recipe, const std::filesystem::path& cache_dir, std::ostream& log);

// The pin the recipe's `track` metapackage points at now: its candidate's `linux-image-*` dependency
// and that package's candidate version.
PackageSource newest_pin(const Recipe& recipe);

// The default cache: /var/cache/schedlab as root, else ~/.cache/schedlab (the same as `run`).
std::filesystem::path default_cache_dir();

}  // namespace schedlab::kernels
