#pragma once
// Starting `schedlab daemon` from tests: its standard error to a file that the test watches for
// log lines, killed (SIGKILL or SIGTERM) and reaped by the test; never left behind.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace schedlab::testing {

// The [campaign] lines every daemon test starts with: its name and schedule, and a store and an
// output directory under `dir`. The test appends its own keys and tables.
inline std::string campaign_header(const std::string& name, const std::string& schedule,
                                   const std::filesystem::path& dir) {
  return "[campaign]\nname = \"" + name + "\"\nschedule = \"" + schedule + "\"\nstore = \"sqlite://" +
         (dir / "store.db").string() + "\"\noutput = \"" + (dir / "bundles").string() + "\"\n";
}

// The rest of a short, quiet campaign: `configurations` (a TOML array), no counters, no settle wait,
// no exporter, and one yield instance of 20,000 yields.
inline std::string short_yield_campaign(const std::string& configurations, int repetitions) {
  return "configurations = " + configurations +
         "\ncounters = false\nsettle_timeout_s = 0\n[exporter]\nlisten = \"\"\n[[workload]]\nname = "
         "\"yield\"\nrepetitions = " +
         std::to_string(repetitions) + "\nparams = { yields = 20000 }\n";
}

class DaemonProcess {
 public:
  // `path`: the daemon's PATH when given (the lab-boot tests put an interlock first in it).
  DaemonProcess(const std::filesystem::path& config, const std::filesystem::path& log,
                const std::string& pause_at = "", const std::string& path = "")
      : DaemonProcess(std::vector<std::string>{"--config", config.string()}, log, pause_at, path) {}

  // `schedlab daemon ARGS... --log-level debug` (a queue daemon: --queue URL --host NAME ...).
  DaemonProcess(const std::vector<std::string>& args, const std::filesystem::path& log,
                const std::string& pause_at = "", const std::string& path = "")
      : log_(log) {
    std::vector<std::string> argv{SCHEDLAB_BINARY, "daemon"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--log-level", "debug"});
    std::vector<char*> c_argv;
    for (auto& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      if (!path.empty()) ::setenv("PATH", path.c_str(), 1);
      if (pause_at.empty())
        ::unsetenv("SCHEDLAB_DAEMON_PAUSE");
      else
        ::setenv("SCHEDLAB_DAEMON_PAUSE", pause_at.c_str(), 1);
      ::unsetenv("JOURNAL_STREAM");
      std::FILE* f = std::freopen(log.c_str(), "a", stderr);
      if (!f) ::_exit(125);
      ::dup2(STDERR_FILENO, STDOUT_FILENO);
      ::execv(SCHEDLAB_BINARY, c_argv.data());
      ::_exit(127);
    }
  }
  ~DaemonProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string log_text() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Waits until the log holds `needle` `times` times; false on timeout or when the daemon exited.
  bool wait_for_log(const std::string& needle, int times = 1, double timeout_s = 60) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (count(log_text(), needle) >= times) return true;
      if (exited()) return count(log_text(), needle) >= times;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  void kill_hard() {
    ::kill(pid_, SIGKILL);
    wait();
  }
  void terminate() { ::kill(pid_, SIGTERM); }
  // The exit code, -1 when killed by a signal.
  int wait() {
    if (!reaped_) {
      ::waitpid(pid_, &status_, 0);
      reaped_ = true;
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }
  bool exited() {
    if (reaped_) return true;
    if (::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return reaped_;
  }

  static int count(const std::string& text, const std::string& needle) {
    int n = 0;
    for (auto p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
    return n;
  }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

}  // namespace schedlab::testing
