#pragma once
// Real Prometheus peers for tests: a Prometheus server scraping given targets and a Pushgateway, each
// started on a free 127.0.0.1 port with its data in a temp dir (never the system service's), and
// killed and reaped by the destructor, so no process outlives its test. Also a minimal HTTP GET.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.hpp"
#include "test_util.hpp"

namespace schedlab::testing {

inline const std::filesystem::path kPrometheusBinary = "/usr/bin/prometheus";
inline const std::filesystem::path kPushgatewayBinary = "/usr/bin/prometheus-pushgateway";
inline const std::filesystem::path kPromtoolBinary = "/usr/bin/promtool";

// `promtool check metrics` on an exposition: its exit code and its lint findings ("" when clean).
inline Outcome promtool_lint(const std::string& exposition) {
  TempDir dir;
  spit(dir.path() / "metrics.txt", exposition);
  return sh(kPromtoolBinary.string() + " check metrics < " + (dir.path() / "metrics.txt").string());
}

// A port nobody listens on right now (bound to 0 and released: a small race, retried by nobody).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("free_port: socket failed");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("free_port: bind failed");
  }
  ::close(fd);
  return ntohs(sa.sin_port);
}

struct HttpResponse {
  int status = 0;  // 0: no response (connection refused, timeout, garbage)
  std::string body;
};

// HTTP/1.0 GET (no chunking, connection closed by the server) from 127.0.0.1:port.
inline HttpResponse http_get(int port, const std::string& target,
                             std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  HttpResponse r;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return r;
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string raw;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    const std::string req = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) raw.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  const auto head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos || raw.size() < 12) return r;
  r.status = std::stoi(raw.substr(9, 3));
  r.body = raw.substr(head_end + 4);
  return r;
}

inline std::string url_encode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Polls `done` every 100 ms until it is true or `timeout` passes; returns its last answer.
inline bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

// A child process with stdout and stderr in `log`; SIGTERM, then SIGKILL, and reaped on destruction.
// PR_SET_PDEATHSIG kills it too if the test binary dies first.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::filesystem::path& log) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const std::string log_path = log.string();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {  // only async-signal-safe calls: the parent has threads
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Child() { stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 50; ++i) {  // 5 s for a clean shutdown (Prometheus closes its TSDB)
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// Tag of the PrometheusServer constructor that runs a configuration file of the test's own (a shipped
// one, adapted): a second argument, so that a braced list of targets never reads as a path.
struct WithConfigFile {};

// A Prometheus server scraping `targets` ("127.0.0.1:PORT") every second, and evaluating the rules of
// `rule_files` (absolute paths) every second too; or running a given configuration file.
class PrometheusServer {
 public:
  explicit PrometheusServer(const std::vector<std::string>& targets, bool honor_labels = false,
                            const std::vector<std::filesystem::path>& rule_files = {})
      : port_(free_port()) {
    std::string list;
    for (const auto& t : targets) list += (list.empty() ? "'" : ", '") + t + "'";
    std::string rules;
    for (const auto& f : rule_files) rules += "  - '" + f.string() + "'\n";
    spit(dir_.path() / "prometheus.yml", "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n" +
                                             (rules.empty() ? std::string() : "rule_files:\n" + rules) +
                                             "scrape_configs:\n  - job_name: schedlab\n    honor_labels: " +
                                             std::string(honor_labels ? "true" : "false") +
                                             "\n    static_configs:\n      - targets: [" + list + "]\n");
    start(dir_.path() / "prometheus.yml");
  }
  PrometheusServer(WithConfigFile, const std::filesystem::path& config) : port_(free_port()) {
    start(config);
  }

  int port() const { return port_; }
  pid_t pid() const { return child_->pid(); }
  std::string log() const { return slurp(dir_.path() / "prometheus.log"); }

  // Waits for /-/ready (TSDB open, config loaded).
  bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    return wait_until([&] { return child_->running() && http_get(port_, "/-/ready").status == 200; },
                      timeout);
  }

  // The raw JSON answer of an instant query.
  HttpResponse query(const std::string& promql) {
    return http_get(port_, "/api/v1/query?query=" + url_encode(promql));
  }

 private:
  void start(const std::filesystem::path& config) {
    child_ = std::make_unique<Child>(
        std::vector<std::string>{kPrometheusBinary.string(), "--config.file=" + config.string(),
                                 "--storage.tsdb.path=" + (dir_.path() / "data").string(),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                 "--log.level=warn"},
        dir_.path() / "prometheus.log");
  }

  TempDir dir_;
  int port_;
  std::unique_ptr<Child> child_;
};

// A Pushgateway without persistence: Debian's defaults to /var/lib/prometheus/pushgateway.data, which
// every test's gateway would then load and write, each seeing what earlier tests (or other trees) pushed.
class Pushgateway {
 public:
  Pushgateway() : port_(free_port()) {
    child_ = std::make_unique<Child>(
        std::vector<std::string>{kPushgatewayBinary.string(),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                 "--persistence.file=", "--log.level=warn"},
        dir_.path() / "pushgateway.log");
  }
  int port() const { return port_; }
  pid_t pid() const { return child_->pid(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return slurp(dir_.path() / "pushgateway.log"); }
  bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return wait_until([&] { return child_->running() && http_get(port_, "/-/ready").status == 200; },
                      timeout);
  }

 private:
  TempDir dir_;
  int port_;
  std::unique_ptr<Child> child_;
};

}  // namespace schedlab::testing
