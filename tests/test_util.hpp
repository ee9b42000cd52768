#pragma once
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace schedlab::testing {

// What `f` threw, or "(no error)": tests match on the message, which must name the file or field.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

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

// Every test binary that includes this header is the subreaper of what it starts: a leftover that
// outlived the schedlab process it came from is reparented here rather than to init, so the leak
// checks below find it among this test's own descendants and never look at anybody else's processes.
inline const bool kTestIsSubreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;

// The living (not zombie) descendants of this test process, found through each process's parent.
inline std::vector<pid_t> descendant_pids() {
  std::multimap<pid_t, pid_t> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto stat = slurp(entry.path() / "stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    if (rest >> state >> ppid && state != 'Z') children.emplace(ppid, std::stoi(name));
  }
  std::vector<pid_t> out;
  std::vector<pid_t> todo{::getpid()};
  while (!todo.empty()) {
    const pid_t parent = todo.back();
    todo.pop_back();
    for (auto [it, end] = children.equal_range(parent); it != end; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

// Threads of this test's descendants whose name starts with `prefix` (workload threads name
// themselves "schedlab-yield", "schedlab-spin", ...), as "/proc/PID/task/TID: comm".
inline std::vector<std::string> threads_named(const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const pid_t pid : descendant_pids())
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
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
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p);
  out << text;
}

}  // namespace schedlab::testing
