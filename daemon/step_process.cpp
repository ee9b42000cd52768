#include "daemon/step_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
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
  // A cgroup whose last process was just killed stays busy for a moment (the kernel is still taking
  // its tasks out): without the wait, the next step found it and could not make its own (EEXIST).
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) remove_cgroup_dir(*d, 2);
  return killed;
}

// The live (not zombie) processes whose session is `sid`. A workload's processes stay in the step's
// session even when they make process groups of their own (each repetition calls setpgid(0, 0)).
std::vector<pid_t> session_members(pid_t sid) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    auto stat = read_text(fs::path("/proc") / e->d_name / "stat");
    if (!stat) continue;  // gone meanwhile
    const auto close = stat->rfind(')');
    if (close == std::string::npos) continue;
    // After "(comm)": state ppid pgrp session ...
    const auto fields = split_ws(stat->substr(close + 1));
    if (fields.size() < 4 || fields[0] == "Z" || fields[0] == "X") continue;
    if (std::strtol(fields[3].c_str(), nullptr, 10) == sid) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

// SIGKILLs every process of session `sid` until none is left or `timeout_s` passed; returns how many
// it signalled.
int kill_session(pid_t sid, double timeout_s) {
  std::set<pid_t> killed;
  const double deadline = monotonic_seconds() + timeout_s;
  for (;;) {
    const auto members = session_members(sid);
    if (members.empty()) break;
    for (pid_t pid : members)
      if (::kill(pid, SIGKILL) == 0) killed.insert(pid);
    if (monotonic_seconds() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return static_cast<int>(killed.size());
}

// The child's side of run(), between fork and exec: async-signal-safe calls only (the daemon has
// other threads). Returns only to _exit.
[[noreturn]] void exec_step(char* const* args, const char* procs, int go_fd, int go_write_fd, int log_fd) {
  ::close(go_write_fd);  // the daemon's end: held here, a daemon that died would never be noticed
  // The daemon's dispositions are not the workload's: civetweb ignores SIGPIPE for the process, and
  // the interrupt guard handles SIGINT/SIGTERM. A step runs as it would from a shell.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // EINVAL for KILL/STOP: fine
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (procs) {  // first: from here on, killing the cgroup the marker names kills this process too
    int fd = ::open(procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(126);
    ::close(fd);
  }
  // A session of its own: every process the step starts stays in it, whatever groups they make.
  ::setsid();
  // Nothing runs before the daemon has recorded where the step is (the marker): a daemon killed
  // in between closes the pipe, and the child gives up.
  char go = 0;
  ssize_t n;
  do {
    n = ::read(go_fd, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) ::_exit(125);
  ::close(go_fd);
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
  ::execv(args[0], args);
  ::_exit(127);
}

// Lets the child go on to exec; false when it is gone already (killed meanwhile). SIGPIPE is held off
// this thread for the write: without an exporter nothing ignores it, and it would end the daemon.
bool release_child(int go_fd) {
  sigset_t pipe_only, old;
  ::sigemptyset(&pipe_only);
  ::sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  const bool written = ::write(go_fd, "g", 1) == 1;
  ::close(go_fd);
  const timespec now{0, 0};
  if (!written) ::sigtimedwait(&pipe_only, nullptr, &now);  // the pending SIGPIPE, if the write raised one
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return written;
}

}  // namespace

StepProcess::StepProcess(fs::path marker, bool use_cgroup) : marker_(std::move(marker)) {
  if (auto own = use_cgroup ? own_cgroup() : fs::path(); !own.empty())
    cgroup_ = own / ("schedlab-step-" + hex64(fnv1a64(marker_.string())));
}

int StepProcess::kill_leftovers() {
  auto text = read_text(marker_);
  if (!text) return 0;
  auto words = split_ws(*text);
  int killed = 0;
  if (words.size() == 2 && words[0] == "cgroup") {
    killed = kill_and_remove_cgroup(words[1]);
  } else if (words.size() == 4 && words[0] == "session" && words[2] == "boot") {
    // Only in the boot that wrote it: after a reboot the session died with the machine, and its number
    // may now belong to an unrelated process.
    if (words[3] == boot_id()) killed = kill_session(static_cast<pid_t>(std::stol(words[1])), 5);
  }
  // Anything else (a marker of an older schedlab, naming a bare process group with no boot id) is
  // not trusted with a SIGKILL.
  fs::remove(marker_);
  return killed;
}

StepExit StepProcess::run(const std::vector<std::string>& argv, const fs::path& log_file,
                          const std::function<bool()>& stop_requested, double grace_s) {
  fs::create_directories(marker_.parent_path());
  if (!cgroup_.empty()) {
    kill_and_remove_cgroup(cgroup_);  // a stale one of ours, should a previous step have left it
    // Still there after that wait: ours by its name, and empty, so the step takes it as it is.
    if (::mkdir(cgroup_.c_str(), 0755) != 0) {
      const int err = errno;
      if (err != EEXIST || !read_text(cgroup_ / "cgroup.procs").value_or("x").empty())
        throw SystemError("creating " + cgroup_.string(), err);
    }
    write_file_atomic(marker_, "cgroup " + cgroup_.string() + "\n", true);
  }
  const int log_fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw SystemError("opening " + log_file.string(), errno);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string procs = cgroup_.empty() ? std::string() : (cgroup_ / "cgroup.procs").string();
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(log_fd);
    throw SystemError("pipe", err);
  }
  const double start = monotonic_seconds();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    for (int fd : {log_fd, go[0], go[1]}) ::close(fd);
    throw SystemError("fork", err);
  }
  if (pid == 0) exec_step(args.data(), procs.empty() ? nullptr : procs.c_str(), go[0], go[1], log_fd);
  ::close(log_fd);
  ::close(go[0]);
  try {
    if (cgroup_.empty())
      write_file_atomic(marker_, "session " + std::to_string(pid) + " boot " + boot_id() + "\n", true);
  } catch (...) {
    ::close(go[1]);  // the child reads end of file and exits without running the step
    ::waitpid(pid, nullptr, 0);
    throw;
  }
  if (!release_child(go[1])) {
    ::waitpid(pid, nullptr, 0);
    throw Error("the step's process ended before it started");
  }

  StepExit out;
  double stop_sent_at = -1;
  for (;;) {
    // WNOWAIT: the exited step stays a zombie, so its pid (the session's id) cannot be reused before
    // whatever it left in its session is killed below.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno != EINTR)
      throw SystemError("waitid", errno);
    if (info.si_pid == pid) break;
    if (stop_requested() && stop_sent_at < 0) {
      ::kill(pid, SIGTERM);  // the runner kills its repetition's workload and writes what it has
      stop_sent_at = monotonic_seconds();
      out.stopped = true;
    }
    if (stop_sent_at >= 0 && monotonic_seconds() - stop_sent_at > grace_s) {
      if (!cgroup_.empty())
        kill_cgroup_tree(cgroup_, 1);
      else
        kill_session(pid, 1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  out.seconds = monotonic_seconds() - start;
  // Whatever the step left behind (a workload that escaped its repetition) goes with it.
  if (!cgroup_.empty())
    kill_and_remove_cgroup(cgroup_);
  else
    kill_session(pid, 5);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  out.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  std::error_code ec;
  fs::remove(marker_, ec);
  return out;
}

}  // namespace schedlab
