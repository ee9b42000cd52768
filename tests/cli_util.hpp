#pragma once
// Running the built schedlab binary (and peers) from tests.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace schedlab::testing {

struct Outcome {
  int code = -1;
  std::string out;  // stdout and stderr
};

inline Outcome sh(const std::string& cmd) {
  Outcome o;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return o;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) o.out.append(buf, n);
  int status = ::pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

inline Outcome schedlab(const std::string& args) {
  return sh(std::string(SCHEDLAB_BINARY) + " " + args);
}

inline std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) out.push_back(e.path());
  return out;
}

}  // namespace schedlab::testing
