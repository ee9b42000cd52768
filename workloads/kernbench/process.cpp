#include "workloads/kernbench/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>

#include "core/error.hpp"

extern char** environ;

namespace schedlab::kernbench {
namespace {

constexpr std::size_t kCaptureLimit = 1 << 20;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

int checked(int fd, const std::string& what) {
  if (fd < 0) throw SystemError(what, errno);
  return fd;
}

double monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string read_back(int fd) {
  std::string text;
  char buf[65536];
  for (off_t off = 0; text.size() < kCaptureLimit;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    off += n;
  }
  if (text.size() > kCaptureLimit) text.resize(kCaptureLimit);
  return text;
}

// The caller's environment for a build: make's own variables from an enclosing make (a jobserver
// that is not ours, a MAKELEVEL) removed, and the C locale so that messages do not depend on it.
std::vector<std::string> build_environment() {
  static constexpr const char* kDropped[] = {"MAKEFLAGS",    "MFLAGS",       "MAKELEVEL",    "MAKEFILES",
                                             "GNUMAKEFLAGS", "MAKE_TERMOUT", "MAKE_TERMERR", "LC_ALL"};
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    if (std::none_of(std::begin(kDropped), std::end(kDropped), [&](const char* d) { return key == d; }))
      env.push_back(entry);
  }
  env.emplace_back("LC_ALL=C");
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (auto& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// In the forked child: reports why it could not exec through the error pipe, then exits.
[[noreturn]] void child_fail(int error_fd, int err, const std::string& what) {
  (void)!::write(error_fd, &err, sizeof err);
  (void)!::write(error_fd, what.data(), what.size());
  ::_exit(127);
}

void move_fd(int from, int to) {
  if (from == to)
    ::fcntl(to, F_SETFD, 0);
  else
    ::dup2(from, to);
}

}  // namespace

bool ProcessResult::ok() const {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

std::string ProcessResult::status_text() const {
  if (WIFEXITED(wait_status)) return "exit status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* abbrev = sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
  }
  return "wait status " + std::to_string(wait_status);
}

std::optional<std::filesystem::path> find_in_path(const std::string& program) {
  auto executable = [](const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos)
    return executable(program) ? std::optional<std::filesystem::path>(program) : std::nullopt;
  const char* path_env = std::getenv("PATH");
  std::istringstream dirs(path_env && *path_env ? path_env : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / program;
    if (executable(candidate)) return candidate;
  }
  return std::nullopt;
}

ProcessResult run_process(const ProcessRequest& req) {
  if (req.argv.empty()) throw Error("run_process: empty command line");
  auto path = find_in_path(req.argv[0]);
  if (!path) throw SystemError("cannot run '" + req.argv[0] + "': not found in PATH", ENOENT);

  std::vector<std::string> argv = req.argv;
  std::vector<std::string> env = build_environment();
  auto argv_p = pointers(argv);
  auto env_p = pointers(env);
  const std::string path_text = path->string();

  Fd null_fd(checked(::open("/dev/null", O_RDWR | O_CLOEXEC), "open /dev/null"));
  Fd err_fd(checked(::memfd_create("kernbench-stderr", MFD_CLOEXEC), "memfd_create"));
  Fd out_fd(req.capture_stdout ? checked(::memfd_create("kernbench-stdout", MFD_CLOEXEC), "memfd_create")
                               : -1);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw SystemError("pipe2", errno);
  Fd report_read(pipe_fds[0]), report_write(pipe_fds[1]);

  ProcessResult result;
  const double t0 = monotonic_now();
  // No setsid()/setpgid(): the program stays in the runner's process group and cgroup leaf.
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork for " + path_text, errno);
  if (pid == 0) {
    move_fd(null_fd.get(), STDIN_FILENO);
    move_fd(req.capture_stdout ? out_fd.get() : null_fd.get(), STDOUT_FILENO);
    move_fd(err_fd.get(), STDERR_FILENO);
    if (req.policy) {
      try {
        apply_policy_to_current_thread(*req.policy, req.nice);
      } catch (const SystemError& e) {
        child_fail(report_write.get(), e.code(), e.what());
      }
    }
    ::execve(path_text.c_str(), argv_p.data(), env_p.data());
    child_fail(report_write.get(), errno, "execve " + path_text);
  }
  report_write.reset();
  std::string report;
  char buf[512];
  for (;;) {
    ssize_t n = ::read(report_read.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    report.append(buf, static_cast<std::size_t>(n));
  }
  while (::wait4(pid, &result.wait_status, 0, &result.usage) < 0) {
    if (errno != EINTR) throw SystemError("wait4 for " + path_text, errno);
  }
  result.elapsed_s = monotonic_now() - t0;
  if (report.size() >= sizeof(int)) {
    int err = 0;
    std::memcpy(&err, report.data(), sizeof err);
    throw SystemError(report.substr(sizeof err), err);
  }
  result.err = read_back(err_fd.get());
  if (req.capture_stdout) result.out = read_back(out_fd.get());
  return result;
}

std::string error_excerpt(const std::string& err, int n) {
  std::vector<std::string> lines;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  auto mentions_error = [](std::string line) {
    std::transform(line.begin(), line.end(), line.begin(), [](unsigned char c) { return std::tolower(c); });
    return line.find("error") != std::string::npos;
  };
  const auto head = std::min(lines.size(), static_cast<std::size_t>(n));
  std::string out;
  bool seen_error = false;
  for (std::size_t i = 0; i < head; ++i) {
    out += lines[i] + "\n";
    seen_error |= mentions_error(lines[i]);
  }
  if (!seen_error) {
    int added = 0;
    for (std::size_t i = head; i < lines.size() && added < 5; ++i)
      if (mentions_error(lines[i])) {
        out += (added++ == 0 ? "...\n" : "") + lines[i] + "\n";
      }
  }
  if (lines.size() > head) out += "(" + std::to_string(lines.size()) + " lines in all)\n";
  if (out.empty()) out = "(no error output)\n";
  out.pop_back();
  return out;
}

std::string program_version(const std::string& program) {
  try {
    auto r = run_process({{program, "--version"}, true, std::nullopt, 0});
    auto line = r.out.substr(0, r.out.find('\n'));
    if (r.ok() && !line.empty()) return line;
  } catch (const Error&) {
  }
  return "unknown";
}

}  // namespace schedlab::kernbench
