#pragma once
// What the tests that boot kernels under qemu share: whether this machine can, and the files a boot
// leaves in its --out directory.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "test_util.hpp"

namespace schedlab::testing {

// False, with why, when a tool a qemu boot needs is missing.
inline bool can_boot(std::string& why, std::initializer_list<const char*> also = {}) {
  std::vector<const char*> tools{"/usr/bin/qemu-system-x86_64", "/bin/busybox", "/usr/bin/cpio",
                                 "/usr/sbin/depmod"};
  tools.insert(tools.end(), also.begin(), also.end());
  for (const char* tool : tools)
    if (!std::filesystem::exists(tool)) {
      why = std::string(tool) + " missing (ci/setup installs it)";
      return false;
    }
  return true;
}

inline nlohmann::json load_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// The files in `dir` named PREFIX...EXT, sorted (bundles start with the year: prefix "2").
inline std::vector<std::filesystem::path> files_with(const std::filesystem::path& dir,
                                                     const std::string& prefix, const std::string& ext) {
  std::vector<std::filesystem::path> out;
  for (const auto& f : files_in(dir)) {
    const auto name = f.filename().string();
    if (name.rfind(prefix, 0) == 0 && f.extension() == ext) out.push_back(f);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace schedlab::testing
