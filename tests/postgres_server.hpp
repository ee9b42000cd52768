#pragma once
// A real PostgreSQL server for tests (Debian's postgresql package): initdb into a temp dir, the server
// listening on a Unix socket in that dir only (no TCP: nothing reachable from outside), run as the
// `postgres` user when the test runs as root (PostgreSQL refuses root). Stopped (fast shutdown) and reaped
// by the destructor; PR_SET_PDEATHSIG takes it down if the test binary dies first.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "daemon/store/pg.hpp"
#include "test_util.hpp"

namespace schedlab::testing {

// The newest installed server's bin directory (/usr/lib/postgresql/15/bin), "" when none is.
inline std::filesystem::path postgres_bin_dir() {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
    if (std::filesystem::exists(e.path() / "bin" / "postgres")) found.push_back(e.path() / "bin");
  std::sort(found.begin(), found.end());
  return found.empty() ? std::filesystem::path() : found.back();
}

class PostgresServer {
 public:
  PostgresServer() : bin_(postgres_bin_dir()) {
    if (bin_.empty()) throw std::runtime_error("no PostgreSQL server under /usr/lib/postgresql");
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("postgres");
      if (!pw) throw std::runtime_error("no `postgres` user to run the server as");
      uid_ = pw->pw_uid;
      gid_ = pw->pw_gid;
      if (::chown(dir_.path().c_str(), uid_, gid_) != 0) throw std::runtime_error("chown of the data dir");
    }
    run_as_owner({(bin_ / "initdb").string(), "-D", data().string(), "-U", "postgres", "--auth=trust",
                  "--no-sync", "-E", "UTF8", "--locale=C"},
                 dir_.path() / "initdb.log");
    start();
  }
  ~PostgresServer() { stop(); }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // libpq's URI for the server's `postgres` database over its socket.
  std::string url() const {
    return "postgresql:///postgres?host=" + dir_.path().string() + "&port=" + std::to_string(kPort) +
           "&user=postgres";
  }
  const std::filesystem::path& dir() const { return dir_.path(); }
  std::string log() const { return slurp(dir_.path() / "server.log"); }

  // Starts the server and waits until it takes connections (20 s at most).
  void start() {
    if (pid_ > 0) return;
    pid_ = spawn(
        {(bin_ / "postgres").string(), "-D", data().string(), "-k", dir_.path().string(), "-p",
         std::to_string(kPort), "-c", "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=60"},
        dir_.path() / "server.log", true);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (true) {
      try {
        pg::Connection probe(url());
        return;
      } catch (const pg::DatabaseUnavailable&) {
        if (std::chrono::steady_clock::now() > deadline)
          throw std::runtime_error("PostgreSQL did not start in 20 s: " + log());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }

  // Fast shutdown (SIGINT: sessions ended, transactions rolled back, a checkpoint), reaped.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGINT);
    for (int i = 0; i < 300; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  static constexpr int kPort = 5432;  // only names the socket file, in this server's own directory

  std::filesystem::path data() const { return dir_.path() / "data"; }

  void run_as_owner(const std::vector<std::string>& argv, const std::filesystem::path& log) {
    const pid_t pid = spawn(argv, log, false);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error(argv[0] + " failed: " + slurp(log));
  }

  pid_t spawn(const std::vector<std::string>& argv, const std::filesystem::path& log, bool die_with_parent) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const std::string log_path = log.string();
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot open " + log_path);
    if (uid_ != 0 && ::fchown(fd, uid_, gid_) != 0) throw std::runtime_error("chown of " + log_path);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {  // only async-signal-safe calls: the parent has threads
      if (die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      if (uid_ != 0 && (::setgroups(0, nullptr) != 0 || ::setgid(gid_) != 0 || ::setuid(uid_) != 0))
        ::_exit(126);
      if (die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a change of credentials clears it
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fd);
    return pid;
  }

  TempDir dir_;
  std::filesystem::path bin_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  pid_t pid_ = -1;
};

}  // namespace schedlab::testing
