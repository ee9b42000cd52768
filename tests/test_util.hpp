#pragma once
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace schedlab::testing {

// A fresh directory under the system temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "schedlab-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// True while the process exists and is not a zombie.
inline bool process_alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

inline std::string slurp(const std::filesystem::path& p);

// Threads anywhere on the machine whose name starts with `prefix` (workload threads name
// themselves "schedlab-yield", "schedlab-spin", ...), as "/proc/PID/task/TID: comm".
inline std::vector<std::string> threads_named(const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec))
    for (const auto& task : std::filesystem::directory_iterator(proc.path() / "task", ec)) {
      auto comm = slurp(task.path() / "comm");
      if (comm.rfind(prefix, 0) == 0) out.push_back(task.path().string() + ": " + comm);
    }
  return out;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void spit(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

}  // namespace schedlab::testing
