#pragma once
// The commits between two kernels built from one git repository (a `git` or `tree` kernel recipe: the
// bundles' kernel.booted_by.commit and .repository): `schedlab diff` shows them at its top, so that a
// shift is read beside the changes that could have made it.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "diff/sides.hpp"

namespace schedlab {

// The log is capped at this many lines; the counts say how many there are.
inline constexpr std::size_t kCommitLogLines = 20;

struct CommitLogLine {
  std::string commit;  // abbreviated to 12 hex digits (or more where git needs them to be unique)
  std::string subject;
};

// What git says of base..other in `repository`. When git cannot say (the repository is not readable
// here, a commit is not in it, git is missing or fails), `error` says why and the counts are 0.
struct CommitRange {
  std::string repository;
  std::string base_commit, other_commit;  // full ids, as the bundles record them
  std::optional<std::string> error;
  std::size_t ahead = 0;   // `git rev-list --count base..other`: commits only the other has
  std::size_t behind = 0;  // `git rev-list --count other..base`: commits only the base has
  // The range `log` lists: "base..other", or "other..base" when the other has nothing the base lacks
  // (an older kernel: what the base has more is what matters); the log is empty when neither has any.
  std::string listed = "base..other";
  std::vector<CommitLogLine> log;  // `git log --oneline --no-decorate` of that range, at most kCommitLogLines
  std::size_t listed_count() const { return listed == "base..other" ? ahead : behind; }
};

// Runs git (never a shell) with `git -C repository`; never throws for a repository or git that fails.
CommitRange commits_between(const std::filesystem::path& repository, const std::string& base_commit,
                            const std::string& other_commit);

// Where a side's kernel came from when every bundle of it was booted from one commit of one repository.
struct GitKernel {
  std::string commit;
  std::string repository;
  bool dirty = false;  // a tree with changes the commit does not hold (booted_by.dirty in any bundle)
};
std::optional<GitKernel> git_kernel(const Side& side);

// One other side against the base, when both are git kernels of the same repository.
struct KernelCommits {
  std::string side;  // the other side's name
  bool base_dirty = false, other_dirty = false;
  CommitRange range;
};
std::vector<KernelCommits> kernel_commits(const std::vector<Side>& sides);

}  // namespace schedlab
