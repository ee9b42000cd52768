#include "runtime/scx_attachment.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"

namespace schedlab::runtime {
namespace fs = std::filesystem;

ScxAttachment::ScxAttachment(const fs::path& loader, const fs::path& object, const fs::path& sysfs,
                             const std::string& ops_name, double timeout_s)
    : sysfs_(sysfs), ops_name_(ops_name) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw SystemError("pipe for " + loader.string(), errno);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw SystemError("pipe for " + loader.string(), errno);
  }
  const std::string sysfs_arg = sysfs.string(), object_arg = object.string(), loader_arg = loader.string();
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw SystemError("fork for " + loader.string(), errno);
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // we died before the line above took effect
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    std::vector<char*> argv = {const_cast<char*>(loader_arg.c_str()), const_cast<char*>("--sysfs"),
                               const_cast<char*>(sysfs_arg.c_str()), const_cast<char*>(object_arg.c_str()),
                               nullptr};
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  ::fcntl(out_fd_, F_SETFL, O_NONBLOCK);
  ::fcntl(err_fd_, F_SETFL, O_NONBLOCK);
  auto first = next_event(timeout_s);
  if (first && first->value("event", "") == "ejected") {
    // A scheduler that starves its own loader (schedulers/broken) is ejected before "attached" comes.
    reap(/*kill_first=*/false);
    std::string why = "the kernel ejected scx:" + ops_name +
                      " while it attached: " + first->value("reason", std::string("?"));
    if (auto m = first->value("message", std::string()); !m.empty()) why += " (" + m + ")";
    throw Error(why + " [" + first->value("kind_name", std::string()) + "]");
  }
  if (!first || first->value("event", "") != "attached") {
    reap(/*kill_first=*/true);
    throw Error("scx:" + ops_name + ": " + loader.string() + " did not attach " + object.string() +
                (first ? ": " + first->value("message", first->dump())
                       : std::string(" within ") + std::to_string(static_cast<int>(timeout_s)) + " s") +
                loader_words());
  }
  attached_ = std::move(*first);
}

ScxAttachment::~ScxAttachment() {
  if (pid_ > 0) {
    try {
      detach(10);
    } catch (const std::exception&) {
      reap(/*kill_first=*/true);
    }
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

std::string ScxAttachment::loader_words() const {
  std::string text = err_buf_;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() > 2000) text = "..." + text.substr(text.size() - 2000);
  std::string status;
  if (exit_status_ >= 0)
    status = WIFEXITED(exit_status_)
                 ? " (the loader exited " + std::to_string(WEXITSTATUS(exit_status_)) + ")"
             : WIFSIGNALED(exit_status_)
                 ? " (the loader was killed by signal " + std::to_string(WTERMSIG(exit_status_)) + ")"
                 : "";
  return status + (text.empty() ? std::string() : ": " + text);
}

// Drains both pipes until a whole line is on stdout, the loader exits, or the time is up.
std::optional<nlohmann::json> ScxAttachment::next_event(double timeout_s) {
  const double until = monotonic_seconds() + timeout_s;
  for (;;) {
    if (auto nl = out_buf_.find('\n'); nl != std::string::npos) {
      std::string line = out_buf_.substr(0, nl);
      out_buf_.erase(0, nl + 1);
      try {
        return nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception&) {
        err_buf_ += "(stdout) " + line + "\n";
        continue;
      }
    }
    if (out_fd_ < 0) return std::nullopt;
    const double left = until - monotonic_seconds();
    if (left < 0) return std::nullopt;
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    int n = ::poll(fds, err_fd_ >= 0 ? 2 : 1, static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno != EINTR) return std::nullopt;
    char buf[4096];
    bool out_closed = false;
    if (fds[1].revents && err_fd_ >= 0)
      while (true) {
        ssize_t r = ::read(err_fd_, buf, sizeof buf);
        if (r > 0) err_buf_.append(buf, static_cast<std::size_t>(r));
        if (r <= 0) break;
      }
    if (fds[0].revents) {
      while (true) {
        ssize_t r = ::read(out_fd_, buf, sizeof buf);
        if (r > 0) out_buf_.append(buf, static_cast<std::size_t>(r));
        if (r == 0) out_closed = true;
        if (r <= 0) break;
      }
    }
    if (out_closed && out_buf_.find('\n') == std::string::npos) {
      // The loader is gone: collect its status and what it said last.
      if (err_fd_ >= 0)
        for (ssize_t r; (r = ::read(err_fd_, buf, sizeof buf)) > 0;)
          err_buf_.append(buf, static_cast<std::size_t>(r));
      reap(false);
      return std::nullopt;
    }
  }
}

void ScxAttachment::reap(bool kill_first) {
  if (pid_ <= 0) return;
  if (kill_first) ::kill(pid_, SIGKILL);
  int status = 0;
  if (::waitpid(pid_, &status, 0) == pid_) exit_status_ = status;
  pid_ = -1;
}

std::optional<std::string> ScxAttachment::ejected() {
  if (ejected_) return ejected_;
  const auto state = read_line(sysfs_ / "state").value_or("(unreadable)");
  const auto ops = read_line(sysfs_ / "root/ops").value_or("");
  const bool ours = state == "enabled" && ops == ops_name_;
  // The loader notices the ejection within 50 ms and prints the kernel's reason: wait for it a while.
  auto event = next_event(ours ? 0 : 5);
  if (ours && (!event || event->value("event", "") != "ejected")) {
    if (event) err_buf_ += "(unexpected) " + event->dump() + "\n";
    if (pid_ > 0) return std::nullopt;
  }
  std::string why;
  if (event && event->value("event", "") == "ejected") {
    why = "the kernel ejected scx:" + ops_name_ + ": " + event->value("reason", std::string("?"));
    if (auto m = event->value("message", std::string()); !m.empty()) why += " (" + m + ")";
    reap(false);
  } else {
    if (pid_ > 0) reap(true);
    why = "scx:" + ops_name_ + " is no longer attached: state " + state + ", root/ops '" + ops + "'" +
          loader_words();
  }
  ejected_ = why;
  return ejected_;
}

nlohmann::json ScxAttachment::detach(double timeout_s) {
  if (pid_ <= 0) throw Error("scx:" + ops_name_ + ": the loader is gone" + loader_words());
  ::kill(pid_, SIGTERM);
  const double t0 = monotonic_seconds();
  std::optional<nlohmann::json> event;
  while ((event = next_event(timeout_s - (monotonic_seconds() - t0)))) {
    if (event->value("event", "") == "detached") break;
    if (event->value("event", "") == "ejected") ejected_ = event->value("reason", std::string("?"));
  }
  const double seconds = monotonic_seconds() - t0;
  reap(/*kill_first=*/!event);
  if (!event) throw Error("scx:" + ops_name_ + ": no \"detached\" from the loader" + loader_words());
  nlohmann::json out = *event;
  out["wall_ms"] = seconds * 1000;
  return out;
}

}  // namespace schedlab::runtime
