// Starts schedlab-grp-tasks, reads its report, and waits for it under the time limit (the helper
// keeps the limit itself; a few seconds more cover its killing and reaping of the tasks). The helper
// and its tasks have PR_SET_PDEATHSIG; a helper still running when we give up is killed and reaped.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/pipe.hpp"
#include "workloads/common/child_group.hpp"
#include "workloads/groups/tasks.hpp"

namespace schedlab::groups {
namespace {

constexpr std::int64_t kHelperGraceNs = 5000000000;

std::filesystem::path helper_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / "schedlab-grp-tasks"))
    return self.parent_path() / "schedlab-grp-tasks";
#ifdef SCHEDLAB_GRP_TASKS_BUILT
  if (std::filesystem::exists(SCHEDLAB_GRP_TASKS_BUILT)) return SCHEDLAB_GRP_TASKS_BUILT;
#endif
  throw Error("groups.tasks=process: schedlab-grp-tasks is not beside " + self.string() +
              " (install it with schedlab)");
}

class Helper {
 public:
  explicit Helper(pid_t pid) : pid_(pid) {}
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;
  ~Helper() {
    if (reaped_) return;
    ::kill(pid_, SIGKILL);
    wait(0);
  }
  pid_t pid() const { return pid_; }
  bool reaped() const { return reaped_; }
  int status() const { return status_; }
  void wait(int options) {
    pid_t r;
    while ((r = ::waitpid(pid_, &status_, options)) < 0 && errno == EINTR) {
    }
    if (r == pid_) reaped_ = true;
  }

 private:
  pid_t pid_;
  bool reaped_ = false;
  int status_ = 0;
};

}  // namespace

RunOutcome run_in_helper(const Options& o, const std::vector<int>& cpus) {
  const auto path = helper_path().string();
  const pid_t self = ::getpid();
  const auto args = helper_arguments(o, cpus, self);
  std::vector<char*> argv{const_cast<char*>(path.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Pipe report;
  const std::int64_t deadline_ns =
      monotonic_ns() + static_cast<std::int64_t>(o.max_duration_s * 1e9) + kHelperGraceNs;

  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork (schedlab-grp-tasks)", errno);
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != self) ::_exit(125);
    if (::dup2(report.write, 1) == 1) ::execv(path.c_str(), argv.data());
    const std::string what = "exec " + path + ": " + std::strerror(errno);
    if (::write(1, what.data(), what.size()) < 0) ::_exit(127);
    ::_exit(127);
  }
  Helper helper(pid);
  report.close_write();
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  std::string bytes;
  bool eof = false;
  while (!eof) {
    const std::int64_t left_ns = deadline_ns - monotonic_ns();
    if (left_ns <= 0) {
      if (pidfd >= 0) ::close(pidfd);
      throw Error("groups: schedlab-grp-tasks still running " + std::to_string(kHelperGraceNs / 1000000000) +
                  " s after the time limit (max_duration_s), killed");
    }
    pollfd p{report.read, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left_ns / 1000000 + 1, 1000))) < 0 &&
        errno != EINTR)
      throw SystemError("poll (schedlab-grp-tasks)", errno);
    if (!(p.revents & (POLLIN | POLLHUP))) continue;
    char buf[65536];
    const ssize_t n = ::read(report.read, buf, sizeof buf);
    if (n > 0) bytes.append(buf, static_cast<std::size_t>(n));
    if (n == 0) eof = true;
    if (n < 0 && errno != EINTR) throw SystemError("read (schedlab-grp-tasks)", errno);
  }
  // Its standard output closed: it is exiting (or has handed the descriptor on, which it does not).
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    const std::int64_t left_ns = deadline_ns - monotonic_ns();
    ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left_ns / 1000000, 0)));
    ::close(pidfd);
    helper.wait(WNOHANG);
  } else {
    helper.wait(0);
  }
  if (!helper.reaped()) throw Error("groups: schedlab-grp-tasks closed its output but did not exit, killed");
  const int st = helper.status();
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return decode_outcome(bytes, static_cast<std::size_t>(o.task_count()));
  if (WIFEXITED(st) && !bytes.empty()) throw Error(bytes);
  throw Error("groups: schedlab-grp-tasks (pid " + std::to_string(pid) + ") " + describe_wait_status(st));
}

}  // namespace schedlab::groups
