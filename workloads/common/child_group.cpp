#include "workloads/common/child_group.hpp"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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
  std::memcpy(samples_ns.data(), report.data() + newline + 1, binary);
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

void ChildGroup::spawn(const std::string& name, const std::function<std::string()>& body) {
  Pipe report;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork (" + name + ")", errno);
  if (pid == 0) {
    // A child never returns into the caller's stack and skips atexit handlers (_exit): the
    // parent's objects are the parent's to clean up.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
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
    if (!c.reaped) ::kill(c.result.pid, SIGKILL);
  for (auto& c : children_) {
    reap(c, 0);
    if (c.report_fd >= 0) ::close(c.report_fd);
    if (c.pidfd >= 0) ::close(c.pidfd);
    c.report_fd = c.pidfd = -1;
  }
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
    // A child killed by a signal is the cause; one that then failed for lack of its peer is not.
    Child* failed = nullptr;
    for (auto& c : children_) {
      if (!c.reaped || (WIFEXITED(c.wait_status) && WEXITSTATUS(c.wait_status) == 0)) continue;
      if (!failed || (WIFSIGNALED(c.wait_status) && !WIFSIGNALED(failed->wait_status))) failed = &c;
    }
    if (failed) {
      std::string what = failed->result.name + " (pid " + std::to_string(failed->result.pid) + ") " +
                         describe_wait_status(failed->wait_status);
      if (WIFEXITED(failed->wait_status) && !failed->result.report.empty())
        what += ": " + failed->result.report;
      kill_all();
      throw Error(what);
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
