#include "workloads/sdet/user.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "workloads/common/child_group.hpp"

namespace schedlab::sdet {
namespace {

// The first lines of what a failed script wrote to its standard error.
std::string error_excerpt(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string out, line;
  for (int n = 0; n < 5 && std::getline(in, line); ++n) out += (out.empty() ? "" : " | ") + line;
  if (out.size() > 600) out = out.substr(0, 600) + "...";
  return out.empty() ? "(nothing on standard error)" : out;
}

std::string ordinal(std::size_t n) {
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

struct Exec {
  const char* dir;
  const char* err_file;
  char** argv;
  char** envp;
  pid_t parent;
  sigset_t mask;  // the caller's signal mask, for the program
};

// The child of run_script's clone: it shares the user's memory until it execs, so it only makes
// system calls and writes nothing the parent reads.
int exec_shell(void* arg) {
  const auto* e = static_cast<const Exec*>(arg);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != e->parent) ::_exit(125);
  // Scripts start with every signal at its default, as from a login shell: an ignored SIGPIPE
  // inherited from the caller would turn `sort | head` into write errors. This also keeps the
  // caller's handlers from running on the shared memory before the exec.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  ::sigprocmask(SIG_SETMASK, &e->mask, nullptr);
  const int null_fd = ::open("/dev/null", O_RDWR);
  const int err_fd = ::open(e->err_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (null_fd < 0 || err_fd < 0 || ::chdir(e->dir) != 0) ::_exit(126);
  ::dup2(null_fd, STDIN_FILENO);
  ::dup2(null_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  ::execve(kShell, e->argv, e->envp);
  static const char kMessage[] = "sdet: cannot execute /bin/sh\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  ::_exit(127);
}

// Starts `/bin/sh FILE` in the plan's directory and waits for it; returns the wait status. The
// shell is started as posix_spawn starts a program (CLONE_VM | CLONE_VFORK: the user's memory is
// not copied, so what a script costs does not grow with schedlab's size), with PR_SET_PDEATHSIG,
// which posix_spawn cannot set.
int run_script(const UserPlan& plan, const std::filesystem::path& file, char** envp,
               std::vector<char>& stack) {
  const std::string script = file.string(), dir = plan.dir.string(), err = plan.err_file.string();
  char sh_name[] = "sh";
  char* argv[] = {sh_name, const_cast<char*>(script.c_str()), nullptr};
  Exec e{dir.c_str(), err.c_str(), argv, envp, ::getpid(), {}};
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, &e.mask);
  const pid_t pid = ::clone(exec_shell, stack.data() + stack.size(), CLONE_VM | CLONE_VFORK | SIGCHLD, &e);
  const int clone_errno = errno;
  ::sigprocmask(SIG_SETMASK, &e.mask, nullptr);
  if (pid < 0) throw SystemError("user " + std::to_string(plan.user) + ": clone", clone_errno);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw SystemError("user " + std::to_string(plan.user) + ": waitpid", errno);
  }
  return status;
}

}  // namespace

std::string run_user(const UserPlan& plan) {
  std::vector<char*> envp;
  for (const auto& e : plan.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<char> stack(64 * 1024);  // the clone's, until it execs (the stack grows down from its end)
  std::vector<std::int64_t> times_ns;
  times_ns.reserve(plan.files.size());
  const std::int64_t start_ns = monotonic_ns();
  for (std::size_t i = 0; i < plan.files.size(); ++i) {
    const std::string who = "script '" + plan.names[i] + "' (user " + std::to_string(plan.user) + ", its " +
                            ordinal(i + 1) + " of " + std::to_string(plan.files.size()) + ")";
    if (monotonic_ns() > plan.deadline_ns) throw Error("the time limit came before " + who + " could start");
    const std::int64_t t0 = monotonic_ns();
    const int status = run_script(plan, plan.files[i], envp.data(), stack);
    times_ns.push_back(monotonic_ns() - t0);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      throw Error(who + " failed, " + describe_wait_status(status) + ": " + error_excerpt(plan.err_file));
  }
  const std::int64_t end_ns = monotonic_ns();
  return pack_report({{"scripts", plan.files.size()}, {"start_ns", start_ns}, {"end_ns", end_ns}}, times_ns);
}

}  // namespace schedlab::sdet
