#pragma once
// `schedlab kernel build --git PATH --ref A --ref B`: the common case of "diff my two commits" without
// writing recipes by hand. One git recipe per ref is written (so `kernel boot`, campaigns and the
// daemon find them by name like any other), then each is built in order: the second from the first's
// compiled clone.
#include <filesystem>
#include <string>
#include <vector>

namespace schedlab::kernels {

struct RefRecipesRequest {
  std::filesystem::path repository;
  std::vector<std::string> refs;
  // "defconfig" (default, with fragments/schedlab-defconfig-guest.config), a recipe name whose
  // packaged config starts the build (with fragments/schedlab-build-builtin.config), or a config file.
  std::string config = "defconfig";
  std::filesystem::path fragment;         // replaces the default fragment when given
  std::string prefix;                     // recipe names PREFIX-REF; default: the repository's directory name
  std::filesystem::path out_dir;          // where the recipes are written
  std::filesystem::path builtin_recipes;  // the suite's own recipes (bases and fragments)
};

struct RefRecipe {
  std::string name;
  std::filesystem::path file;
  std::string commit;  // what the ref names now
};

// Writes the recipes (an existing file with other content is an InputError: it is someone's recipe)
// after resolving every ref (a ref that does not resolve is an InputError naming it).
std::vector<RefRecipe> write_ref_recipes(const RefRecipesRequest& request);

// "HEAD~1" -> "HEAD-1", "tip/sched/core" -> "tip-sched-core": a ref as a recipe-name part.
std::string ref_name_part(const std::string& ref);

// `git log --oneline A..B`, at most `cap` lines, and how many commits there are in all.
struct CommitsBetween {
  std::vector<std::string> lines;
  long count = 0;
};
CommitsBetween commits_between(const std::filesystem::path& repository, const std::string& from,
                               const std::string& to, std::size_t cap);

}  // namespace schedlab::kernels
