#pragma once
// What `kernbench.tree` names, turned into a place where make can run without touching the
// user's files: the generated tree; a copy of a plain directory with a Makefile; a kernel tree
// (built out of tree with O=); a tarball, extracted once. All of it lives in the cache.
#include <filesystem>
#include <string>
#include <vector>

namespace schedlab::kernbench {

struct BuildTree {
  std::string kind;                    // "generated", "directory", "kernel"
  std::string origin;                  // "generated", "directory" or "tarball"
  std::filesystem::path source;        // the user's path, or the generated tree
  std::filesystem::path make_dir;      // make -C this
  std::vector<std::string> make_vars;  // O=OBJDIR for a kernel tree
  std::string tree_hash;
  std::string prepared;  // what this call did: "generated", "extracted", "copied", "configured", "cached"
};

// Cheap checks for validate(): the path exists and has a usable form, the programs and headers the
// build needs are installed. Throws InputError naming what is wrong or missing.
void check_tree(const std::string& tree);

// Generates, extracts, copies or configures as needed (untimed work of a repetition). `files`
// sizes the generated tree. Throws Error with make's or tar's error output on failure.
BuildTree prepare_tree(const std::string& tree, int files, const std::filesystem::path& cache_root);

// make -C DIR VARS... EXTRA...
std::vector<std::string> make_command(const BuildTree& tree, const std::vector<std::string>& extra);

}  // namespace schedlab::kernbench
