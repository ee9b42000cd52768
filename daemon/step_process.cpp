#include "daemon/step_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "collector/runner/isolation.hpp"
#include "core/atomic_file.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/host_paths.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;

// The cgroup v2 directory of this process when it is writable, "" otherwise.
fs::path own_cgroup() {
  std::string why;
  fs::path dir = own_cgroup_dir(HostPaths::live(), why);
  if (dir.empty() || ::access((dir / "cgroup.procs").c_str(), W_OK) != 0) return {};
  return dir;
}

// Kills what is left in `dir` and below, then removes the cgroups, deepest first.
int kill_and_remove_cgroup(const fs::path& dir) {
  const int killed = kill_cgroup_tree(dir, 5);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return killed;
  std::vector<fs::path> dirs{dir};
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_directory()) dirs.push_back(it->path());
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) ::rmdir(d->c_str());
  return killed;
}

}  // namespace

StepProcess::StepProcess(fs::path marker) : marker_(std::move(marker)) {
  if (auto own = own_cgroup(); !own.empty())
    cgroup_ = own / ("schedlab-step-" + hex64(fnv1a64(marker_.string())));
}

int StepProcess::kill_leftovers() {
  auto text = read_text(marker_);
  if (!text) return 0;
  auto words = split_ws(*text);
  int killed = 0;
  if (words.size() == 2 && words[0] == "cgroup") {
    killed = kill_and_remove_cgroup(words[1]);
  } else if (words.size() == 2 && words[0] == "pgid") {
    const auto pgid = static_cast<pid_t>(std::stol(words[1]));
    if (::kill(-pgid, SIGKILL) == 0) ++killed;
  }
  fs::remove(marker_);
  return killed;
}

StepExit StepProcess::run(const std::vector<std::string>& argv, const fs::path& log_file,
                          const std::function<bool()>& stop_requested, double grace_s) {
  fs::create_directories(marker_.parent_path());
  if (!cgroup_.empty()) {
    kill_and_remove_cgroup(cgroup_);  // a stale one of ours, should a previous step have left it
    if (::mkdir(cgroup_.c_str(), 0755) != 0) throw SystemError("creating " + cgroup_.string(), errno);
    write_file_atomic(marker_, "cgroup " + cgroup_.string() + "\n", true);
  }
  const int log_fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw SystemError("opening " + log_file.string(), errno);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string procs = cgroup_.empty() ? std::string() : (cgroup_ / "cgroup.procs").string();
  const double start = monotonic_seconds();
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork", errno);
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec: the daemon has other threads.
    if (!procs.empty()) {
      int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(126);
      ::close(fd);
    }
    ::setpgid(0, 0);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::setpgid(pid, pid);  // as the child does: whichever runs first, the group exists before any kill
  if (cgroup_.empty()) write_file_atomic(marker_, "pgid " + std::to_string(pid) + "\n", true);

  StepExit out;
  double stop_sent_at = -1;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      out.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      break;
    }
    if (r < 0 && errno != EINTR) throw SystemError("waitpid", errno);
    if (stop_requested() && stop_sent_at < 0) {
      ::kill(pid, SIGTERM);  // the runner kills its repetition's workload and writes what it has
      stop_sent_at = monotonic_seconds();
      out.stopped = true;
    }
    if (stop_sent_at >= 0 && monotonic_seconds() - stop_sent_at > grace_s) {
      if (!cgroup_.empty())
        kill_cgroup_tree(cgroup_, 1);
      else
        ::kill(-pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  out.seconds = monotonic_seconds() - start;
  // Whatever the step left behind (a workload that escaped its repetition) goes with it.
  if (!cgroup_.empty())
    kill_and_remove_cgroup(cgroup_);
  else
    ::kill(-pid, SIGKILL);
  std::error_code ec;
  fs::remove(marker_, ec);
  return out;
}

}  // namespace schedlab
