#include "workloads/sdet/user.hpp"

#include <fcntl.h>
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

// Forks and execs `/bin/sh FILE` in the plan's directory; returns the wait status.
int run_script(const UserPlan& plan, const std::filesystem::path& file, std::vector<char*>& envp) {
  // Everything the child needs is built before the fork: between fork and exec it makes system
  // calls only.
  const std::string script = file.string(), dir = plan.dir.string(), err = plan.err_file.string();
  char sh_name[] = "sh";
  std::vector<char*> argv{sh_name, const_cast<char*>(script.c_str()), nullptr};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("user " + std::to_string(plan.user) + ": fork", errno);
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
    const int null_fd = ::open("/dev/null", O_RDWR);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (null_fd < 0 || err_fd < 0 || ::chdir(dir.c_str()) != 0) ::_exit(126);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    ::execve(kShell, argv.data(), envp.data());
    static const char kMessage[] = "sdet: cannot execute /bin/sh\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    ::_exit(127);
  }
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
  std::vector<std::int64_t> times_ns;
  times_ns.reserve(plan.files.size());
  const std::int64_t start_ns = monotonic_ns();
  for (std::size_t i = 0; i < plan.files.size(); ++i) {
    const std::string who = "script '" + plan.names[i] + "' (user " + std::to_string(plan.user) + ", its " +
                            ordinal(i + 1) + " of " + std::to_string(plan.files.size()) + ")";
    if (monotonic_ns() > plan.deadline_ns) throw Error("the time limit came before " + who + " could start");
    const std::int64_t t0 = monotonic_ns();
    const int status = run_script(plan, plan.files[i], envp);
    times_ns.push_back(monotonic_ns() - t0);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      throw Error(who + " failed, " + describe_wait_status(status) + ": " + error_excerpt(plan.err_file));
  }
  const std::int64_t end_ns = monotonic_ns();
  return pack_report({{"scripts", plan.files.size()}, {"start_ns", start_ns}, {"end_ns", end_ns}}, times_ns);
}

}  // namespace schedlab::sdet
