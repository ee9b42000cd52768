// schedlab-scx: attaches one sched_ext scheduler, reports on stdout (JSON lines) that the kernel
// enabled it, holds it until SIGTERM/SIGINT or until the kernel ejects it. schedulers/README.md has
// the protocol; this file is only its sequence.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include "bpf_scheduler.hpp"
#include "events.hpp"
#include "loader_error.hpp"
#include "options.hpp"
#include "sysfs.hpp"

namespace schedlab::scx {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kAttachPoll = std::chrono::milliseconds(10);
constexpr auto kWatchPoll = std::chrono::milliseconds(50);
// After an ejection is seen, how long the kernel may take to run ops.exit and reach "disabled".
constexpr auto kEjectSettle = std::chrono::seconds(2);

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

template <typename Condition>
bool poll_until(Condition done, std::chrono::milliseconds timeout, std::chrono::milliseconds period) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(period);
  }
  return true;
}

// The refusals that need no BPF: a readable object, a kernel with sched_ext, no scheduler attached.
void check_preconditions(const LoaderOptions& options, const SchedExtSysfs& sysfs) {
  if (access(options.object.c_str(), R_OK) != 0) {
    const int err = errno;
    throw LoaderError(ExitCode::refused, "refused", options.object.string() + ": " + std::strerror(err), err);
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(sysfs.dir(), ec)) {
    throw LoaderError(ExitCode::refused, "refused",
                      "this kernel has no sched_ext (CONFIG_SCHED_CLASS_EXT): " + sysfs.dir().string() +
                          ": No such file or directory",
                      ENOENT);
  }
  const auto state = sysfs.state();
  if (!state) {
    throw LoaderError(ExitCode::refused, "refused", sysfs.file("state").string() + ": cannot read");
  }
  if (*state != "disabled") {
    throw LoaderError(ExitCode::refused, "refused",
                      "a sched_ext scheduler is already attached (" + sysfs.file("root/ops").string() +
                          " = " + sysfs.root_ops().value_or("?") + ", state = " + *state + ")");
  }
}

bool has_exited(const BpfScheduler& scheduler) {
  return scheduler.exit_info().value_or(schedlab_exit_info{}).kind != 0;
}

// The kernel ended the scheduler (its watchdog, an error, sysrq-S). PHASE: "attaching" when that
// happened before the loader saw it enabled (broken is ejected within its 3 s while the loader,
// itself one of the tasks it loses, waits), "attached" after.
ExitCode report_ejection(BpfScheduler& scheduler, const SchedExtSysfs& sysfs, const std::string& name,
                         const std::string& phase) {
  // Let the kernel finish disabling, so that ops.exit's record is complete before it is read.
  poll_until([&] { return has_exited(scheduler) && sysfs.state() == "disabled"; }, kEjectSettle, kAttachPoll);
  const auto info = scheduler.exit_info().value_or(schedlab_exit_info{});
  emit_event({{"event", "ejected"},
              {"ops", name},
              {"while", phase},
              {"kind", info.kind},
              {"kind_name", exit_kind_name(info.kind)},
              {"exit_code", info.exit_code},
              {"reason", info.reason},
              {"message", info.msg},
              {"state", sysfs.state().value_or("")}});
  std::cerr << "schedlab-scx: the kernel ejected " << name << ": " << info.reason
            << (info.msg[0] ? std::string(" (") + info.msg + ")" : "") << "\n";
  scheduler.detach();
  return ExitCode::ejected;
}

// Holds the scheduler until a signal (exit 0 after detaching) or an ejection (exit 3).
ExitCode hold(BpfScheduler& scheduler, const SchedExtSysfs& sysfs, const std::string& name,
              const LoaderOptions& options, const sigset_t& stop_signals) {
  const timespec period = {0, std::chrono::nanoseconds(kWatchPoll).count()};
  for (;;) {
    const int sig = sigtimedwait(&stop_signals, nullptr, &period);
    if (sig == SIGTERM || sig == SIGINT) {
      const auto start = Clock::now();
      scheduler.detach();
      if (!poll_until([&] { return sysfs.state() == "disabled"; }, options.attach_timeout, kAttachPoll)) {
        throw LoaderError(ExitCode::failed, "detach",
                          sysfs.file("state").string() + " = " + sysfs.state().value_or("?") +
                              " after the link was destroyed; expected disabled");
      }
      emit_event({{"event", "detached"},
                  {"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"},
                  {"detach_ms", ms_since(start)}});
      return ExitCode::ok;
    }
    if (!has_exited(scheduler) && sysfs.state() == "enabled" && sysfs.root_ops() == name) continue;
    return report_ejection(scheduler, sysfs, name, "attached");
  }
}

ExitCode run(std::span<char* const> args) {
  // Blocked here and taken synchronously by sigtimedwait in hold(): no handler state to share.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  // Die with the parent; the kernel would detach anyway once the link fd closes.
  prctl(PR_SET_PDEATHSIG, SIGTERM);

  const LoaderOptions options = parse_options(args);
  if (options.help) {
    std::cout << usage();
    return ExitCode::ok;
  }
  const SchedExtSysfs sysfs(options.sysfs_dir);
  check_preconditions(options, sysfs);

  const auto start = Clock::now();
  BpfScheduler scheduler(options.object);
  const std::string name = scheduler.ops_name();
  if (name != ops_name_of(options.object)) {
    throw LoaderError(ExitCode::refused, "refused",
                      options.object.string() + ": its ops are named '" + name + "', expected '" +
                          ops_name_of(options.object) + "' (the file's stem)");
  }
  scheduler.load();
  const auto seq_before = sysfs.enable_seq();
  if (!seq_before) {
    throw LoaderError(ExitCode::failed, "attach", sysfs.file("enable_seq").string() + ": cannot read");
  }
  scheduler.attach();
  const bool enabled = poll_until(
      [&] {
        const auto seq = sysfs.enable_seq();
        const bool ready =
            sysfs.state() == "enabled" && sysfs.root_ops() == name && seq && *seq != *seq_before;
        return ready || has_exited(scheduler);
      },
      options.attach_timeout, kAttachPoll);
  if (has_exited(scheduler)) return report_ejection(scheduler, sysfs, name, "attaching");
  if (!enabled) {
    const std::string seen = "state = " + sysfs.state().value_or("?") +
                             ", root/ops = " + sysfs.root_ops().value_or("?") +
                             ", enable_seq = " + std::to_string(sysfs.enable_seq().value_or(0)) +
                             " (before " + std::to_string(*seq_before) + ")";
    scheduler.detach();
    throw LoaderError(ExitCode::failed, "enable",
                      name + " attached but not enabled within " +
                          std::to_string(options.attach_timeout.count()) + " ms: " + seen);
  }
  emit_event({{"event", "attached"},
              {"ops", name},
              {"state", "enabled"},
              {"enable_seq_before", *seq_before},
              {"enable_seq", sysfs.enable_seq().value_or(0)},
              {"attach_ms", ms_since(start)}});
  return hold(scheduler, sysfs, name, options, stop_signals);
}

}  // namespace
}  // namespace schedlab::scx

int main(int argc, char** argv) {
  using namespace schedlab::scx;
  try {
    return static_cast<int>(run(std::span<char* const>(argv + 1, static_cast<std::size_t>(argc - 1))));
  } catch (const LoaderError& e) {
    emit_error(e.stage(), e.what(), e.errno_value());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    emit_error("internal", e.what());
    return static_cast<int>(ExitCode::failed);
  }
}
