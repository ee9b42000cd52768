#include "collector/runner/repetition.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include "collector/runner/memory_limit.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/per_operation.hpp"
#include "core/pipe.hpp"

namespace schedlab {
namespace {

void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

// Reads what is available; returns false at end of file.
bool drain(int fd, std::string& into) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n != 0 ? true : false;  // EAGAIN: more may come; 0: EOF
  }
}

[[noreturn]] void child_main(RepetitionRequest& req, const WorkloadContext& context, pid_t parent, int go_fd,
                             int result_fd) {
  ::setpgid(0, 0);
  // Before the death signal: a change of credentials clears it.
  const std::string become_error = req.run_as ? become(*req.run_as) : std::string();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(120);
  // A change of credentials also makes the process undumpable: keep core dumps and /proc as for any workload.
  if (req.run_as) ::prctl(PR_SET_DUMPABLE, 1);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  // The runner's SIGPIPE handler is for its own output; the workload gets the default (or the
  // inherited SIG_IGN) it had before the runner caught SIGPIPE.
  struct sigaction pipe_action {};
  if (::sigaction(SIGPIPE, nullptr, &pipe_action) == 0 && pipe_action.sa_handler != SIG_IGN)
    ::signal(SIGPIPE, SIG_DFL);
  char go = 0;
  ssize_t n;
  do {
    n = ::read(go_fd, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) ::_exit(121);  // the runner gave up before starting us
  nlohmann::json out;
  int code = 0;
  try {
    if (!become_error.empty())
      throw Error("cannot run the workload as user " + req.run_as->name + ": " + become_error);
    auto result = req.workload->run(*req.params, context);
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& [name, m] : result.metrics) metrics[name] = {{"value", m.value}, {"unit", m.unit}};
    out = {{"ok", true}, {"metrics", metrics}, {"details", result.details}};
  } catch (const std::exception& e) {
    out = {{"ok", false}, {"error", e.what()}};
    code = 1;
  }
  write_all(result_fd, out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  ::_exit(code);
}

std::string describe_signal(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return std::string("killed by signal ") + std::to_string(sig) +
         (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
}

void apply_child_result(Repetition& rep, const std::string& text, int wait_status) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (WIFSIGNALED(wait_status)) {
    rep.status = status::kFailed;
    rep.reason = "workload " + describe_signal(WTERMSIG(wait_status));
    return;
  }
  if (j.is_object() && j.value("ok", false)) {
    for (const auto& [name, m] : j.at("metrics").items()) {
      double v = m.at("value").is_number() ? m.at("value").get<double>() : NAN;
      if (!std::isfinite(v)) {
        rep.status = status::kFailed;
        rep.reason = "workload reported a non-finite value for metric " + name;
        return;
      }
      rep.metrics[name] = {v, m.at("unit").get<std::string>()};
    }
    rep.details = j.at("details");
    if (WEXITSTATUS(wait_status) != 0) {
      rep.status = status::kFailed;
      rep.reason = "workload exited with status " + std::to_string(WEXITSTATUS(wait_status));
    }
    return;
  }
  rep.status = status::kFailed;
  if (j.is_object() && j.contains("error"))
    rep.reason = j.at("error").get<std::string>();
  else
    rep.reason = "workload exited with status " + std::to_string(WEXITSTATUS(wait_status)) + " and no result";
}

nlohmann::json rusage_json(const rusage& ru) {
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return {{"user_s", secs(ru.ru_utime)},       {"system_s", secs(ru.ru_stime)},
          {"voluntary_switches", ru.ru_nvcsw}, {"involuntary_switches", ru.ru_nivcsw},
          {"minor_faults", ru.ru_minflt},      {"major_faults", ru.ru_majflt},
          {"max_rss_kib", ru.ru_maxrss}};
}

enum class WaitOutcome { kExited, kTimeout, kInterrupted };

// Waits for the child to exit while collecting its output; no polling of the workload.
WaitOutcome wait_for_child(pid_t pid, int result_fd, double deadline,
                           const volatile std::sig_atomic_t* interrupted, std::string& output) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  bool eof = false;
  for (;;) {
    if (interrupted && *interrupted) return WaitOutcome::kInterrupted;
    double left = deadline - monotonic_seconds();
    if (left <= 0) return WaitOutcome::kTimeout;
    pollfd fds[2] = {{pidfd, POLLIN, 0}, {eof ? -1 : result_fd, POLLIN, 0}};
    // Without pidfds (Linux < 5.3) wake every 10 ms to check with waitid.
    int timeout_ms = pidfd >= 0 ? static_cast<int>(std::ceil(left * 1000)) : 10;
    int rc = ::poll(fds, 2, timeout_ms);
    if (rc < 0 && errno != EINTR) throw SystemError("poll", errno);
    if (rc > 0 && (fds[1].revents & (POLLIN | POLLHUP))) eof = !drain(result_fd, output);
    bool exited = false;
    if (pidfd >= 0) {
      exited = rc > 0 && (fds[0].revents & POLLIN);
    } else {
      siginfo_t info{};
      exited = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               info.si_pid == pid;
    }
    if (exited) {
      if (pidfd >= 0) ::close(pidfd);
      return WaitOutcome::kExited;
    }
  }
}

class SubreaperScope {
 public:
  SubreaperScope() {
    ::prctl(PR_GET_CHILD_SUBREAPER, &previous_);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  ~SubreaperScope() { ::prctl(PR_SET_CHILD_SUBREAPER, previous_); }

 private:
  int previous_ = 0;
};

}  // namespace

Repetition run_repetition(RepetitionRequest& req) {
  Repetition rep;
  rep.started_at = utc_timestamp();
  // Orphans of the workload (a daemonised grandchild) are re-parented to us, not to init,
  // so they can be found and reaped.
  SubreaperScope subreaper;
  // Made before the isolation so that it is removed after: a memory cgroup empties once its processes died.
  std::unique_ptr<MemoryLimit> memory;
  auto cgroup2_parent = req.cgroup2_parent;
  if (req.memory_limit_bytes) {
    std::string why;
    const auto where = find_memory_controller(HostPaths::live(), why);
    if (!where) throw Error("the memory limit cannot be set: " + why);
    if (where->version == 2 && req.isolation == IsolationMode::kProcessGroup)
      throw Error(
          "a memory limit on cgroup v2 goes on the repetition's cgroup, and process-group isolation "
          "was asked for");
    if (where->version == 2 && cgroup2_parent.empty()) cgroup2_parent = where->parent;
    memory = std::make_unique<MemoryLimit>(*req.memory_limit_bytes, *where, req.leaf_name);
  }
  auto isolation = make_isolation(req.isolation, req.leaf_name, HostPaths::live(), cgroup2_parent);
  if (memory) memory->apply_to_leaf(isolation->cgroup_dir());
  // An unprivileged workload keeps its generated inputs in its own corner of the cache.
  WorkloadContext context = *req.context;
  if (req.run_as && !context.cache_dir.empty())
    context.cache_dir = cache_dir_for(*req.run_as, context.cache_dir);
  Pipe go, result;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork", errno);
  if (pid == 0) child_main(req, context, parent, go.read, result.write);
  go.close_read();
  result.close_write();
  ::fcntl(result.read, F_SETFL, O_NONBLOCK);

  std::string setup_error;
  try {
    isolation->adopt(pid);
    if (memory) memory->adopt(pid);
    // Before "go": the workload's first instruction already runs under the configuration's limits.
    for (const auto& group : req.extra_cgroups_v1) {
      std::string error;
      if (!write_kernel_file(group / "cgroup.procs", std::to_string(pid), error))
        throw Error("join the runtime configuration's cgroup: " + error);
    }
    AttachTarget target{pid, isolation->cgroup_dir(), {}, req.workload->cpus(*req.params, *req.context)};
    for (const auto& cpu : req.context->topology.cpus) target.cpus.push_back(cpu.cpu);
    for (auto& s : req.sources) s->attach(target);
    for (auto& s : req.sources) s->enable();
  } catch (const std::exception& e) {
    setup_error = e.what();
  }
  const double t0 = monotonic_seconds();
  WaitOutcome outcome = WaitOutcome::kExited;
  std::string output;
  if (setup_error.empty()) {
    write_all(go.write, "g");
    go.close_write();
    outcome = wait_for_child(pid, result.read, t0 + req.timeout_s, req.interrupted, output);
  }
  if (!setup_error.empty() || outcome != WaitOutcome::kExited) ::kill(pid, SIGKILL);
  go.close_write();
  int wait_status = 0;
  rusage ru{};
  while (::wait4(pid, &wait_status, 0, &ru) < 0 && errno == EINTR) {
  }
  rep.duration_s = monotonic_seconds() - t0;
  drain(result.read, output);
  rep.rusage = rusage_json(ru);
  for (auto& s : req.sources) s->collect(rep);
  const int stray = isolation->live_processes();
  const int killed = isolation->kill_all();
  rep.isolation = isolation->describe();
  rep.isolation["stray_processes"] = stray;
  rep.isolation["killed"] = killed;
  const long oom_kills = memory ? memory->oom_kills() : 0;
  if (memory) rep.isolation["memory_limit"] = memory->describe();
  if (req.run_as) {
    rep.isolation["user"] = req.run_as->name;
    rep.isolation["uid"] = req.run_as->uid;
  } else if (!req.why_root.empty()) {
    rep.isolation["user"] = "root";
    rep.isolation["why_root"] = req.why_root;
  }

  if (!setup_error.empty()) {
    rep.status = status::kFailed;
    rep.reason = "setting up the repetition failed: " + setup_error;
  } else if (outcome == WaitOutcome::kTimeout) {
    rep.status = status::kTimeout;
    rep.reason =
        fmt::format("time limit of {:g} s reached; the workload and {} other process(es) were killed",
                    req.timeout_s, killed);
  } else if (outcome == WaitOutcome::kInterrupted) {
    rep.status = status::kFailed;
    rep.reason = "interrupted by a signal to schedlab; the workload was killed";
  } else {
    apply_child_result(rep, output, wait_status);
    add_per_operation_counters(rep);
  }
  // Even a workload that finished lost part of its work with a killed process: its numbers are not a result.
  if (oom_kills > 0 && outcome == WaitOutcome::kExited && setup_error.empty()) {
    rep.status = status::kFailed;
    rep.reason = fmt::format(
        "memory limit of {} reached: the kernel's OOM killer killed {} process(es) of the repetition{}; {} "
        "other process(es) were killed after it",
        format_memory_size(memory->bytes()), oom_kills, rep.reason.empty() ? "" : " (" + rep.reason + ")",
        killed);
  }
  return rep;
}

}  // namespace schedlab
