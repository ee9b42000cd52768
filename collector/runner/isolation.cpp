#include "collector/runner/isolation.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/cgroup_hierarchy.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"

namespace schedlab {
namespace {

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  out.flush();
  if (!out) throw SystemError("write '" + text + "' to " + p.string(), errno ? errno : EIO);
}

nlohmann::json parse_key_values(const std::string& text) {
  nlohmann::json j = nlohmann::json::object();
  std::istringstream in(text);
  std::string key;
  long long value = 0;
  while (in >> key >> value) j[key] = value;
  return j;
}

// The cgroup v2 directory this process belongs to, or "" with `why` set.
std::filesystem::path own_cgroup2_dir(const HostPaths& paths, std::string& why) {
  const auto mount = cgroup2_mount(paths);
  if (mount.empty()) {
    why = "no cgroup v2 hierarchy is mounted";
    return {};
  }
  auto cgroups = read_text(paths.proc / "self/cgroup");
  if (cgroups) {
    std::istringstream in(*cgroups);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("0::", 0) == 0) return std::filesystem::path(mount) / line.substr(4);
  }
  why = "this process has no cgroup v2 membership line in /proc/self/cgroup";
  return {};
}

std::vector<pid_t> pids_in(const std::filesystem::path& cgroup) {
  std::vector<pid_t> out;
  for (const auto& word : split_ws(read_text(cgroup / "cgroup.procs").value_or("")))
    out.push_back(static_cast<pid_t>(std::stol(word)));
  return out;
}

// Already on its way out: exiting (PF_EXITING in /proc/PID/stat's flags, a zombie) or with SIGKILL
// pending. A workload that kills what it started (sdet's users take their scripts' commands with them)
// leaves such processes for a few scheduler ticks on a loaded machine; they are not strays it left behind.
bool dying(pid_t pid) {
  const auto proc = std::filesystem::path("/proc") / std::to_string(pid);
  const auto stat = read_text(proc / "stat");
  if (!stat) return true;  // gone already
  const auto close = stat->rfind(')');
  if (close == std::string::npos) return false;
  const auto fields = split_ws(stat->substr(close + 1));
  constexpr unsigned long kPfExiting = 0x4;
  if (fields.size() > 6 &&
      (fields[0] == "Z" || fields[0] == "X" || (std::stoul(fields[6]) & kPfExiting) != 0))
    return true;
  std::istringstream status(read_text(proc / "status").value_or(""));
  constexpr unsigned long long kSigkill = 1ULL << (SIGKILL - 1);
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigPnd:", 0) == 0 || line.rfind("ShdPnd:", 0) == 0)
      if ((std::stoull(line.substr(7), nullptr, 16) & kSigkill) != 0) return true;
  return false;
}

int not_dying(const std::vector<pid_t>& pids) {
  int n = 0;
  for (const pid_t p : pids) n += dying(p) ? 0 : 1;
  return n;
}

class CgroupLeaf : public Isolation {
 public:
  explicit CgroupLeaf(std::filesystem::path dir) : dir_(std::move(dir)) {}
  ~CgroupLeaf() override { remove_cgroup_dir(dir_, 1); }
  std::string mode() const override { return "cgroup"; }
  std::filesystem::path cgroup_dir() const override { return dir_; }
  void adopt(pid_t pid) override { write_file(dir_ / "cgroup.procs", std::to_string(pid)); }

  int live_processes() const override { return not_dying(pids_in(dir_)); }

  int kill_all() override {
    const auto pids = split_ws(read_text(dir_ / "cgroup.procs").value_or(""));
    const int n = kill_cgroup_tree(dir_, 10);
    // Orphans were re-parented to us (we are their subreaper): reap them, leave no zombie.
    for (const auto& pid : pids) ::waitpid(std::stoi(pid), nullptr, WNOHANG | __WALL);
    return n;
  }

  nlohmann::json describe() const override {
    return {{"mode", mode()},
            {"cgroup", dir_.string()},
            {"cpu_stat", parse_key_values(read_text(dir_ / "cpu.stat").value_or(""))}};
  }

 private:
  std::filesystem::path dir_;
};

class ProcessGroup : public Isolation {
 public:
  explicit ProcessGroup(std::string fallback_reason) : fallback_reason_(std::move(fallback_reason)) {}
  std::string mode() const override { return "process-group"; }
  void adopt(pid_t pid) override {
    pgid_ = pid;
    // The child calls setpgid(0, 0) itself too; whichever runs first wins the race harmlessly.
    if (::setpgid(pid, pid) != 0 && errno != EACCES) throw SystemError("setpgid", errno);
  }
  int live_processes() const override { return not_dying(descendants_of(::getpid())); }
  int kill_all() override {
    if (pgid_ > 0) ::kill(-pgid_, SIGKILL);
    return kill_descendants(10);
  }
  nlohmann::json describe() const override {
    nlohmann::json j{{"mode", mode()}, {"pgid", pgid_}};
    if (!fallback_reason_.empty()) j["why_not_cgroup"] = fallback_reason_;
    return j;
  }

 private:
  pid_t pgid_ = -1;
  std::string fallback_reason_;
};

}  // namespace

int kill_cgroup_tree(const std::filesystem::path& dir, double timeout_s) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  std::vector<fs::path> dirs{dir};
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_directory()) dirs.push_back(it->path());
  const auto live = [&] {
    std::size_t n = 0;
    for (const auto& d : dirs) n += pids_in(d).size();
    return static_cast<int>(n);
  };
  const int inside = live();
  if (inside == 0) return 0;
  const bool has_kill = fs::exists(dir / "cgroup.kill");
  if (has_kill) write_file(dir / "cgroup.kill", "1");
  const double until = monotonic_seconds() + timeout_s;
  while (live() > 0 && monotonic_seconds() < until) {
    if (!has_kill)  // before Linux 5.14: a fork may race each sweep, so sweep until none is left
      for (const auto& d : dirs)
        for (pid_t pid : pids_in(d)) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return inside;
}

bool remove_cgroup_dir(const std::filesystem::path& dir, double timeout_s) {
  const double until = monotonic_seconds() + timeout_s;
  while (::rmdir(dir.c_str()) != 0) {
    if (errno != EBUSY || monotonic_seconds() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

IsolationMode parse_isolation_mode(const std::string& text) {
  if (text == "auto") return IsolationMode::kAuto;
  if (text == "cgroup") return IsolationMode::kCgroup;
  if (text == "process-group") return IsolationMode::kProcessGroup;
  throw InputError("isolation '" + text + "' is not one of auto, cgroup, process-group");
}

std::filesystem::path own_cgroup_dir(const HostPaths& paths, std::string& why) {
  return own_cgroup2_dir(paths, why);
}

std::unique_ptr<Isolation> make_isolation(IsolationMode mode, const std::string& leaf_name,
                                          const HostPaths& paths, const std::filesystem::path& given_parent) {
  if (!given_parent.empty()) {
    if (mode == IsolationMode::kProcessGroup)
      throw Error("the runtime configuration's cgroup " + given_parent.string() +
                  " needs cgroup isolation, and process-group isolation was asked for");
    auto dir = given_parent / leaf_name;
    if (::mkdir(dir.c_str(), 0755) != 0)
      throw SystemError("create the repetition's cgroup " + dir.string(), errno);
    return std::make_unique<CgroupLeaf>(dir);
  }
  if (mode == IsolationMode::kProcessGroup)
    return std::make_unique<ProcessGroup>("process-group isolation was asked for");
  std::string why;
  auto parent = own_cgroup2_dir(paths, why);
  if (!parent.empty()) {
    auto dir = parent / leaf_name;
    if (::mkdir(dir.c_str(), 0755) == 0) return std::make_unique<CgroupLeaf>(dir);
    why = "cannot create " + dir.string() + ": " + errno_text(errno);
  }
  if (mode == IsolationMode::kCgroup) throw Error("cgroup isolation unavailable: " + why);
  return std::make_unique<ProcessGroup>(why);
}

std::vector<pid_t> descendants_of(pid_t ancestor, const HostPaths& paths) {
  std::multimap<pid_t, pid_t> children;  // ppid -> pid
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(paths.proc, ec)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    auto stat = read_line(entry.path() / "stat");
    if (!stat) continue;
    auto close = stat->rfind(')');  // comm may contain spaces and parentheses
    if (close == std::string::npos) continue;
    auto fields = split_ws(stat->substr(close + 1));
    if (fields.size() < 2 || fields[0] == "Z" || fields[0] == "X") continue;
    children.emplace(static_cast<pid_t>(std::stol(fields[1])), static_cast<pid_t>(std::stol(name)));
  }
  std::vector<pid_t> out;
  std::vector<pid_t> frontier{ancestor};
  while (!frontier.empty()) {
    std::vector<pid_t> next;
    for (pid_t p : frontier) {
      auto [b, e] = children.equal_range(p);
      for (auto it = b; it != e; ++it) {
        out.push_back(it->second);
        next.push_back(it->second);
      }
    }
    frontier = std::move(next);
  }
  return out;
}

int kill_descendants(double timeout_s) {
  std::set<pid_t> killed;
  const double until = monotonic_seconds() + timeout_s;
  for (;;) {
    // Reap what already died (zombies are not listed as live but must not linger).
    while (::waitpid(-1, nullptr, WNOHANG | __WALL) > 0) {
    }
    auto pids = descendants_of(::getpid());
    if (pids.empty() || monotonic_seconds() > until) break;
    for (pid_t p : pids)
      if (::kill(p, SIGKILL) == 0) killed.insert(p);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return static_cast<int>(killed.size());
}

}  // namespace schedlab
