#include "kernels/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "core/error.hpp"

extern char** environ;

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

void make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("pipe2", errno);
  read_end.fd = fds[0];
  write_end.fd = fds[1];
}

}  // namespace

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789-_./=:,+@%") == std::string::npos)
    return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

std::string last_lines(const std::string& text, std::size_t n) {
  std::size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r')) --end;
  std::size_t pos = end;
  for (std::size_t lines = 0; pos > 0; --pos)
    if (text[pos - 1] == '\n' && ++lines == n) break;
  return text.substr(pos, end - pos);
}

std::optional<fs::path> find_tool(const std::string& name) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/sbin";
  std::istringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw Error("run_process: empty command");
  Fd in_read, in_write, out_read, out_write;
  make_pipe(in_read, in_write);
  make_pipe(out_read, out_write);
  Fd out_file;
  if (options.stdout_file) {
    out_file.fd = ::open(options.stdout_file->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_file.fd < 0) throw SystemError("open " + options.stdout_file->string(), errno);
  }

  // Resolved here, not in the child: between fork and exec only async-signal-safe calls are made.
  std::string program = argv[0];
  if (program.find('/') == std::string::npos) {
    std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/local/bin:/usr/bin:/bin";
    std::istringstream dirs(path);
    std::string found;
    for (std::string dir; found.empty() && std::getline(dirs, dir, ':');) {
      const auto candidate = (fs::path(dir.empty() ? "." : dir) / program).string();
      if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) found = candidate;
    }
    if (found.empty()) throw SystemError("start " + argv[0], ENOENT);
    program = found;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Fd exec_read, exec_write;  // the child's exec errno; closed (CLOEXEC) by a successful exec
  make_pipe(exec_read, exec_write);
  const int stdout_fd = out_file.fd >= 0 ? out_file.fd : out_write.fd;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork for " + argv[0], errno);
  if (pid == 0) {
    // A process group of its own, so a timeout kills whatever it started too; and it dies with this
    // process (the SIGKILL of a killed schedlab included), so no qemu outlives the boot that started it.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before the line above took effect
    // dup2 onto the same descriptor keeps its close-on-exec flag: clear it instead.
    auto place = [](int fd, int target) {
      return fd == target ? ::fcntl(target, F_SETFD, 0) : ::dup2(fd, target);
    };
    int fail = 0;
    if (place(in_read.fd, STDIN_FILENO) < 0 || place(stdout_fd, STDOUT_FILENO) < 0 ||
        (options.merge_stderr && place(out_write.fd, STDERR_FILENO) < 0) ||
        (options.cwd && ::chdir(options.cwd->c_str()) != 0))
      fail = errno;
    if (fail == 0) {
      ::execve(program.c_str(), args.data(), environ);
      fail = errno;
    }
    [[maybe_unused]] auto ignored = ::write(exec_write.fd, &fail, sizeof fail);
    ::_exit(127);
  }
  // Whatever way this function is left (an exception from a callback or poll included), the child's
  // group is killed and the child reaped.
  struct Reaper {
    pid_t pid;
    bool reaped = false;
    ~Reaper() {
      if (reaped) return;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  } reaper{pid};
  exec_write.reset();
  int exec_errno = 0;
  ssize_t got_errno;
  while ((got_errno = ::read(exec_read.fd, &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  if (got_errno == static_cast<ssize_t>(sizeof exec_errno)) throw SystemError("start " + argv[0], exec_errno);
  in_read.reset();
  out_write.reset();
  out_file.reset();

  // Feed stdin and drain stdout with poll, so a large input and a large output cannot deadlock.
  ProcessResult r;
  const auto started = Clock::now();
  auto since_start = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  std::size_t scanned = 0;  // output up to here has been passed to on_line
  std::string_view pending = options.stdin_text;
  if (pending.empty()) in_write.reset();
  const auto deadline = options.timeout ? Clock::now() + *options.timeout : Clock::time_point::max();
  ::fcntl(in_write.fd, F_SETFL, O_NONBLOCK);
  while (out_read.fd >= 0) {
    pollfd fds[2] = {{out_read.fd, POLLIN, 0}, {in_write.fd, POLLOUT, 0}};
    int timeout_ms = options.on_tick ? 1000 : -1;
    if (options.on_tick && !r.stopped && !options.on_tick(since_start())) {
      ::kill(-pid, SIGKILL);
      r.stopped = true;
    }
    if (options.timeout) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        ::kill(-pid, SIGKILL);
        r.timed_out = true;
        break;
      }
      timeout_ms = static_cast<int>(std::min<long long>(left, 1000));
    }
    int n = ::poll(fds, in_write.fd >= 0 ? 2 : 1, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("poll on " + argv[0], errno);
    }
    if (in_write.fd >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = ::write(in_write.fd, pending.data(), pending.size());
      if (w > 0) pending.remove_prefix(static_cast<std::size_t>(w));
      if (w < 0 && errno != EAGAIN && errno != EINTR) pending = {};
      if (pending.empty()) in_write.reset();
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t got = ::read(out_read.fd, buf, sizeof buf);
      if (got > 0)
        r.output.append(buf, static_cast<std::size_t>(got));
      else if (got == 0 || (errno != EINTR && errno != EAGAIN))
        out_read.reset();
      // A line ends at "\n", "\r\n" or a lone "\r" (progress lines that rewrite themselves).
      for (std::size_t nl;
           options.on_line && (nl = r.output.find_first_of("\r\n", scanned)) != std::string::npos;) {
        if (r.output[nl] == '\r' && nl + 1 == r.output.size() && out_read.fd >= 0) break;  // "\n" may follow
        std::string line = r.output.substr(scanned, nl - scanned);
        scanned = nl + (r.output.compare(nl, 2, "\r\n") == 0 ? 2 : 1);
        if (line.empty()) continue;
        if (!r.stopped && !options.on_line(line, since_start())) {
          ::kill(-pid, SIGKILL);
          r.stopped = true;
        }
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  reaper.reaped = true;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.seconds = since_start();
  return r;
}

std::string run_checked(const std::vector<std::string>& argv, const ProcessOptions& options) {
  auto r = run_process(argv, options);
  if (r.exit_code == 0 && !r.timed_out) return r.output;
  std::string why = r.timed_out     ? "timed out"
                    : r.signal != 0 ? "was killed by signal " + std::to_string(r.signal)
                                    : "exited with status " + std::to_string(r.exit_code);
  auto tail = last_lines(r.output, 8);
  throw Error("`" + command_line(argv) + "` " + why + (tail.empty() ? "" : ":\n" + tail));
}

}  // namespace schedlab::kernels
