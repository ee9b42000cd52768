#pragma once
// The workload's corner of the cache directory: inputs (generated trees, extracted tarballs,
// copies of user trees, kernel object directories) made once and reused across repetitions.
#include <filesystem>
#include <functional>

namespace schedlab::kernbench {

// Makes `final_dir` appear complete or not at all: `fill` writes into a temporary sibling that is
// then renamed into place. Temporaries left by a killed process are removed first. Returns false
// when `final_dir` already existed (nothing was done).
bool publish_directory(const std::filesystem::path& final_dir,
                       const std::function<void(const std::filesystem::path& tmp)>& fill);

}  // namespace schedlab::kernbench
