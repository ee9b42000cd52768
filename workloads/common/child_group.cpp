#include "workloads/common/child_group.hpp"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/pipe.hpp"

namespace schedlab {
namespace {

void write_fully(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone: nobody to tell
    off += static_cast<std::size_t>(n);
  }
}

// Reads what is there; false at end of file.
bool drain(int fd, std::string& into) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n != 0;  // EAGAIN: more may come; 0: end of file
  }
}

}  // namespace

std::string pack_report(const nlohmann::json& summary, const std::vector<std::int64_t>& samples_ns) {
  std::string out = summary.dump() + "\n";
  const auto* bytes = reinterpret_cast<const char*>(samples_ns.data());
  out.append(bytes, samples_ns.size() * sizeof(std::int64_t));
  return out;
}

void unpack_report(const std::string& report, const std::string& who, nlohmann::json& summary,
                   std::vector<std::int64_t>& samples_ns) {
  const auto newline = report.find('\n');
  const std::size_t binary = newline == std::string::npos ? 0 : report.size() - newline - 1;
  if (newline == std::string::npos || binary % sizeof(std::int64_t) != 0)
    throw Error(who + ": malformed report (" + std::to_string(report.size()) + " bytes)");
  summary = nlohmann::json::parse(report.substr(0, newline), nullptr, /*allow_exceptions=*/false);
  if (summary.is_discarded()) throw Error(who + ": report is not JSON");
  samples_ns.resize(binary / sizeof(std::int64_t));
  if (binary > 0) std::memcpy(samples_ns.data(), report.data() + newline + 1, binary);
}

std::string describe_wait_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* abbrev = sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
  }
  return "exit status " + std::to_string(WEXITSTATUS(wait_status));
}

ChildGroup::~ChildGroup() {
  kill_all();
}

void ChildGroup::spawn(const std::string& name, const std::function<std::string()>& body,
                       ProcessGroup group) {
  Pipe report;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork (" + name + ")", errno);
  if (pid == 0) {
    // A child never returns into the caller's stack and skips atexit handlers (_exit): the
    // parent's objects are the parent's to clean up.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
    if (group == ProcessGroup::kOwn) ::setpgid(0, 0);
    report.close_read();
    for (auto& c : children_)
      if (c.report_fd >= 0) ::close(c.report_fd);
    std::string out;
    int code = 0;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = e.what();
      code = 1;
    } catch (...) {
      out = "unknown exception";
      code = 1;
    }
    write_fully(report.write, out);
    ::_exit(code);
  }
  report.close_write();
  Child c;
  if (group == ProcessGroup::kOwn) {
    ::setpgid(pid, pid);  // also here: the group must exist before anyone kills it, whoever runs first
    c.own_group = true;
  }
  c.result.name = name;
  c.result.pid = pid;
  c.report_fd = report.read;
  report.read = -1;  // owned by the group from here
  ::fcntl(c.report_fd, F_SETFL, O_NONBLOCK);
  c.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  children_.push_back(std::move(c));
}

void ChildGroup::reap(Child& c, int options) {
  if (c.reaped) return;
  if (c.own_group) {
    // Its group dies with it, killed while the leader is still a zombie: until it is reaped its pid
    // cannot name another process's group.
    siginfo_t info{};
    int r;
    do {
      r = ::waitid(P_PID, static_cast<id_t>(c.result.pid), &info, WEXITED | WNOWAIT | options);
    } while (r < 0 && errno == EINTR);
    if (r == 0 && info.si_pid == c.result.pid) ::kill(-c.result.pid, SIGKILL);
  }
  int status = 0;
  rusage ru{};
  pid_t r;
  do {
    r = ::wait4(c.result.pid, &status, options, &ru);
  } while (r < 0 && errno == EINTR);
  if (r == c.result.pid) {
    c.reaped = true;
    c.wait_status = status;
    c.result.usage = ru;
  }
}

void ChildGroup::kill_all() {
  for (auto& c : children_)
    if (!c.reaped) {
      ::kill(c.result.pid, SIGKILL);
      if (c.own_group) ::kill(-c.result.pid, SIGKILL);
    }
  for (auto& c : children_) {
    reap(c, 0);
    if (c.report_fd >= 0) ::close(c.report_fd);
    if (c.pidfd >= 0) ::close(c.pidfd);
    c.report_fd = c.pidfd = -1;
  }
}

bool ChildGroup::failed(const Child& c) {
  return c.reaped && !(WIFEXITED(c.wait_status) && WEXITSTATUS(c.wait_status) == 0);
}

bool ChildGroup::any_failed() const {
  return std::any_of(children_.begin(), children_.end(), [](const Child& c) { return failed(c); });
}

void ChildGroup::settle_after_failure() {
  const std::int64_t until = monotonic_ns() + 500000000LL;
  for (auto& c : children_) {
    while (!c.reaped && monotonic_ns() < until) {
      if (!c.eof) c.eof = !drain(c.report_fd, c.result.report);
      reap(c, WNOHANG);
      if (!c.reaped) ::usleep(5000);
    }
    if (c.reaped && !c.eof) c.eof = !drain(c.report_fd, c.result.report);
  }
}

std::string ChildGroup::describe_failures() {
  auto describe = [](const Child& c) {
    std::string what =
        c.result.name + " (pid " + std::to_string(c.result.pid) + ") " + describe_wait_status(c.wait_status);
    if (WIFEXITED(c.wait_status) && !c.result.report.empty()) what += ": " + c.result.report;
    return what;
  };
  const Child* cause = nullptr;
  for (const auto& c : children_)
    if (failed(c) && (!cause || (WIFSIGNALED(c.wait_status) && !WIFSIGNALED(cause->wait_status)))) cause = &c;
  std::string what = describe(*cause);
  for (const auto& c : children_)
    if (failed(c) && &c != cause) what += "; then " + describe(c);
  kill_all();
  return what;
}

void ChildGroup::throw_if_any_ended(const std::string& when) {
  for (auto& c : children_) {
    if (!c.eof) c.eof = !drain(c.report_fd, c.result.report);
    reap(c, WNOHANG);
  }
  const auto ended =
      std::find_if(children_.begin(), children_.end(), [](const Child& c) { return c.reaped; });
  if (ended == children_.end()) return;
  settle_after_failure();
  if (any_failed()) throw Error(describe_failures());
  const std::string name = ended->result.name;
  kill_all();
  throw Error(name + " ended " + when);
}

std::vector<ChildReport> ChildGroup::wait_all(std::int64_t deadline_ns) {
  for (;;) {
    // Reap what has exited, and read what the children wrote (a report may exceed a pipe's
    // buffer, so it is read while the child is still running).
    std::vector<pollfd> fds;
    bool running = false;
    for (auto& c : children_) {
      if (!c.eof) c.eof = !drain(c.report_fd, c.result.report);
      reap(c, WNOHANG);
      if (c.reaped && !c.eof) c.eof = !drain(c.report_fd, c.result.report);
      if (!c.reaped) running = true;
      if (!c.reaped && c.pidfd >= 0) fds.push_back({c.pidfd, POLLIN, 0});
      if (!c.eof) fds.push_back({c.report_fd, POLLIN, 0});
    }
    if (any_failed()) {
      // The others usually fail at once for want of their peer: let them, so that the cause (a
      // child killed by a signal first) is told apart from its consequences.
      settle_after_failure();
      throw Error(describe_failures());
    }
    if (!running) break;
    const std::int64_t left_ns = deadline_ns - monotonic_ns();
    if (left_ns <= 0) {
      std::string names;
      for (const auto& c : children_)
        if (!c.reaped) names += (names.empty() ? "" : ", ") + c.result.name;
      kill_all();
      throw Error("still running at the workload's time limit, killed: " + names);
    }
    // Without pidfds (Linux < 5.3) look again every 10 ms.
    const bool have_pidfds = !children_.empty() && children_.front().pidfd >= 0;
    const int timeout_ms =
        have_pidfds ? static_cast<int>(std::min<std::int64_t>(left_ns / 1000000 + 1, 1000)) : 10;
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) throw SystemError("poll", errno);
  }
  std::vector<ChildReport> out;
  for (auto& c : children_) out.push_back(c.result);
  kill_all();  // closes the descriptors; everyone is reaped already
  children_.clear();
  return out;
}

}  // namespace schedlab
