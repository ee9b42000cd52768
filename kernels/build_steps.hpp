#pragma once
// The steps every compiled recipe shares (Debian's linux-source, a git commit, a local tree): the
// build log, the configuration from a base config plus a fragment, the checks on the configured
// .config, and make, modules_install and the copy into root/{boot,lib/modules}.
#include <filesystem>
#include <fstream>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "kernels/process.hpp"
#include "kernels/recipe.hpp"

namespace schedlab::kernels {

std::string text_of(const std::filesystem::path& file);  // InputError naming the file when unreadable

// "gcc (Debian 12.2.0-14) 12.2.0": the compiler the kernel's Makefile uses by default; part of every
// build's hash, since a gcc upgrade gives another kernel under the same recipe.
std::string compiler_identity();

// The one directory in `parent` (an unpacked tarball's top directory).
std::filesystem::path only_subdirectory(const std::filesystem::path& parent);

// The whole output of every tool the build runs, appended to the build's build.log as it comes, so that
// a failed (or interrupted) 40-minute make leaves its cause on disk.
class BuildLog {
 public:
  explicit BuildLog(std::filesystem::path path);
  const std::filesystem::path& path() const { return path_; }
  // Runs argv in `cwd` with its output (standard error merged) going to the log; a non-zero exit is
  // an Error quoting the first error line and naming the log.
  ProcessResult run(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                    bool check = true);

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

// Where make runs: in the source tree (`objtree` empty: an in-tree build) or with O=objtree.
struct MakeTree {
  std::filesystem::path source;
  std::filesystem::path objtree;  // empty: the source tree itself
  std::filesystem::path objects() const { return objtree.empty() ? source : objtree; }
  std::vector<std::string> make(std::vector<std::string> targets) const;  // {"make", [O=...], targets...}
};

// base_config plus the recipe's fragment as .config, make olddefconfig, and make mod2noconfig for
// modules = false. Never a previous build's .config as the start: an option a change adds would take
// its default (say =m) where a fresh build turns it off, and one hash would name two configs.
void configure(const Recipe& r, const std::string& base_config, const MakeTree& tree, BuildLog& log,
               std::ostream& progress);

// The configured .config keeps every option of the fragment that the tree's Kconfig defines (one it
// does not is left out, said on `progress`) and has every [config] require; else an InputError listing
// what is missing, before anything is compiled (a miss found after a 40-minute build is 40 minutes lost).
void check_configured(const Recipe& r, const MakeTree& tree, std::ostream& progress);

// make bzImage modules, then modules_install, the image, System.map and .config copied into
// root/{boot,lib/modules}, depmod. Returns the release and the vmlinux's GNU build id.
struct CompiledKernel {
  std::string release;
  std::optional<std::string> build_id;
  std::string jobs;
};
CompiledKernel compile_and_install(const Recipe& r, const MakeTree& tree, const std::filesystem::path& root,
                                   int jobs, BuildLog& log, std::ostream& progress);

}  // namespace schedlab::kernels
