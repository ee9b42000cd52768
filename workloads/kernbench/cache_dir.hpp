#pragma once
// The workload's corner of the cache directory: inputs (generated trees, extracted tarballs,
// copies of user trees, kernel object directories) made once and reused across repetitions.
#include <filesystem>
#include <functional>

namespace schedlab::kernbench {

// An exclusive flock() on a lock file, held while one repetition prepares and builds its tree.
// The kernel drops it when the process dies, so a killed repetition never leaves it held.
class CacheLock {
 public:
  explicit CacheLock(const std::filesystem::path& lock_file);  // throws Error when another run holds it
  ~CacheLock();
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_ = -1;
};

// Makes `final_dir` appear complete or not at all: `fill` writes into a temporary sibling that is
// then renamed into place. Temporaries left by a killed process are removed first. Returns false
// when `final_dir` already existed (nothing was done).
bool publish_directory(const std::filesystem::path& final_dir,
                       const std::function<void(const std::filesystem::path& tmp)>& fill);

}  // namespace schedlab::kernbench
