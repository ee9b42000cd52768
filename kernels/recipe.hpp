#pragma once
// A recipe names one reference kernel: where it comes from (a pinned Debian linux-image package, or
// linux-source plus a config fragment and patches), how it boots, which kernel config options the
// suite needs from it, and scheduler features/tunables to set after boot. One TOML file per recipe
// under kernels/recipes/; a recipe may derive from another (`base = "debian-6.1"`) and then only
// changes what it names (a scheduler-feature variant is compared like a different kernel).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace schedlab::kernels {

// package: a Debian linux-image package; source: Debian's linux-source plus patches; git: a local
// repository at a ref; tree: a local source directory as it is; image: a kernel built elsewhere.
enum class SourceKind { kPackage, kSource, kGit, kTree, kImage };

// The kinds `schedlab kernel build` compiles (the rest are fetched or installed as they are).
inline bool compiled_kind(SourceKind k) {
  return k == SourceKind::kSource || k == SourceKind::kGit || k == SourceKind::kTree;
}
const char* kind_name(SourceKind k);

struct PackageSource {
  std::string package;  // linux-image-6.1.0-50-amd64
  std::string version;  // 6.1.176-1: the pin; changes only through `schedlab kernel update`
  std::string release;  // 6.1.0-50-amd64: `uname -r`, names boot/vmlinuz-RELEASE and lib/modules/RELEASE
  std::string track;    // metapackage `update` follows to the newest ABI (linux-image-amd64); may be empty
};

struct SourceBuild {
  std::string package;      // linux-source-6.12
  std::string version;      // pinned like a package source
  std::string base_config;  // recipe whose packaged config starts the build
  // Or a config file of its own (absolute; exactly one of the two): a small config such as
  // x86_64_defconfig plus what a feature needs builds in a fraction of a distro config's time.
  std::filesystem::path base_config_file;
  std::filesystem::path config_fragment;       // CONFIG_X=y lines applied on top (absolute)
  std::vector<std::filesystem::path> patches;  // applied in order with `patch -p1` (absolute)
  // false: `make mod2noconfig` after olddefconfig, so only the kernel proper is compiled (what the
  // guest needs is built in by the fragment). A distro config's ~4,000 modules take hours on 2 cores
  // and none of them is the scheduler.
  bool loadable_modules = true;
};

// A kernel the user brings as source (git, tree). The build's config, fragment and modules come from
// the recipe's SourceBuild (package and version stay empty); `config` names where the config starts
// when it is neither a base recipe's nor a file: "defconfig" (make defconfig) or, for a tree, "tree"
// (the .config already in it).
struct UserSource {
  std::filesystem::path path;  // git: the repository; tree: the source directory (absolute)
  std::string ref;             // git: a commit, branch, tag or HEAD~1, resolved when built
  std::string config;          // "defconfig", "tree" or empty (then base_config / base_config_file)
  bool allow_dirty = false;    // tree: build a repository with uncommitted changes
};

// A kernel built elsewhere: a bzImage/vmlinuz with what the suite uses beside it, or a kernel .deb
// (`make bindeb-pkg`) holding all of them. Paths absolute; empty when not given.
struct ImageSource {
  std::filesystem::path kernel, system_map, vmlinux, config, modules;  // modules: lib/modules/RELEASE
  std::filesystem::path deb;
};

// A config requirement: CONFIG_<option> must have one of `allowed` ("y", "m", or a literal value;
// "n": off, which a config writes as "# CONFIG_X is not set", as "CONFIG_X=n" or by leaving it out).
struct ConfigRequirement {
  std::string option;                // without the CONFIG_ prefix
  std::vector<std::string> allowed;  // default {"y"}
};

struct Recipe {
  std::string name;                          // file stem: debian-6.1
  std::filesystem::path file;                // where it was read from
  std::vector<std::filesystem::path> chain;  // base recipes' files, outermost first (for `info`)
  std::string label;                         // short alias in bundles and diffs: 6.1-cfs
  std::string description;
  SourceKind kind = SourceKind::kPackage;
  PackageSource package;  // kind == kPackage
  SourceBuild source;     // kind == kSource, and the config of kGit and kTree
  UserSource user;        // kind == kGit or kTree
  ImageSource image;      // kind == kImage
  std::string cmdline;    // boot command line (the backend adds console/root/init arguments)
  std::vector<ConfigRequirement> require;
  std::vector<std::string> sched_features;            // written to /sys/kernel/debug/sched/features
  std::map<std::string, std::string> sched_tunables;  // debugfs sched/NAME -> value
  std::vector<std::string> extra_modules;             // added to the guest initramfs closure

  // The package-version key of the kernel's cache directory ("linux-image-6.1.0-50-amd64_6.1.176-1").
  std::string cache_key() const;
  // The `uname -r` the kernel will report.
  std::string release() const;
};

// Reads one recipe file (and its bases from the same directory). Errors are InputError naming the
// file, the line and the key: "kernels/recipes/x.toml:7: [source] version: expected a string".
Recipe load_recipe_file(const std::filesystem::path& file);

// The recipe NAME in `dir` (NAME.toml); an unknown name lists the known ones.
Recipe load_recipe(const std::filesystem::path& dir, const std::string& name);

// Every recipe in `dir`, sorted by name; a broken file is an error, not a silent omission.
std::vector<Recipe> load_recipes(const std::filesystem::path& dir);

// Rewrites the [source] package/version/release of a package recipe file in place, keeping every
// comment and the layout; the file must define those keys itself (not inherit them).
void repin_recipe_file(const std::filesystem::path& file, const PackageSource& pin);

// The built-in recipes directory (the source tree's kernels/recipes).
std::filesystem::path default_recipes_dir();

}  // namespace schedlab::kernels
