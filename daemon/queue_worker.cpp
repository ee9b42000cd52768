#include "daemon/queue_worker.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "collector/runner/interrupt.hpp"
#include "collector/sysinfo/host_class.hpp"
#include "core/atomic_file.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "daemon/attempt_files.hpp"
#include "daemon/campaign/campaign.hpp"
#include "daemon/database_wait.hpp"
#include "daemon/exporter/exporter.hpp"
#include "daemon/lab_boot.hpp"
#include "daemon/step_argv.hpp"
#include "daemon/step_process.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/postgres_store.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/work_queue.hpp"
#include "kernels/process.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;

constexpr double kStopGraceSeconds = 3.0;

// Renews a claim's lease every lease/3 on a connection of its own while the step runs; `lost` once the
// queue says the claim is another's (this box was taken for dead), and the step is then stopped.
class LeaseKeeper {
 public:
  LeaseKeeper(const std::string& url, const QueueClaim& claim, const std::string& host, double lease_s,
              const Log& log)
      : thread_([this, url, claim, host, lease_s, &log] { keep(url, claim, host, lease_s, log); }) {}
  ~LeaseKeeper() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  bool lost() const { return lost_; }

 private:
  void keep(const std::string& url, const QueueClaim& claim, const std::string& host, double lease_s,
            const Log& log) {
    std::unique_ptr<WorkQueue> queue;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::duration<double>(lease_s / 3), [this] { return done_; })) {
      try {
        if (!queue) queue = std::make_unique<WorkQueue>(url);
        if (!queue->renew(claim, host, lease_s)) {
          log.warning(
              fmt::format("step {}: the claim was taken over by another box (its lease ran out); "
                          "stopping it here",
                          claim.key));
          lost_ = true;
          return;
        }
      } catch (const std::exception& e) {  // the database away: the step goes on, the lease may run out
        log.debug(fmt::format("step {}: lease not renewed: {}", claim.key, e.what()));
        queue.reset();
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::atomic<bool> lost_{false};
  std::thread thread_;
};

class QueueDaemon {
 public:
  explicit QueueDaemon(const QueueWorkerOptions& o)
      : options_(o),
        log_(o.log_level),
        host_(store_host(o.host)),
        klass_(this_host_class(HostPaths::live(), o.host_label)),
        worker_{host_, klass_.name(), klass_.label, klass_.shape},
        state_dir_((o.output.empty() ? fs::path("/var/lib/schedlab/queue") : o.output) / ".queue"),
        process_(state_dir_ / (file_safe_name(host_) + ".step"), o.isolation != "session") {
    fs::create_directories(state_dir_);
    if (!o.listen.empty()) {
      ExporterSettings settings;
      settings.listen = o.listen;
      settings.host = host_;
      settings.host_class = klass_;
      exporter_ = std::make_unique<Exporter>(settings);
    }
  }

  int run() {
    log_.info(fmt::format(
        "serving the queue at {} as host {} (class {}, shape {}); steps isolated by {}{}",
        pg::redacted(options_.url), host_, klass_.name(), klass_.shape, process_.isolation(),
        exporter_ ? fmt::format(", metrics on {} (port {})", options_.listen, exporter_->port()) : ""));
    set_state(DaemonState::kIdle);
    if (int killed = process_.kill_leftovers(); killed > 0)
      log_.warning(fmt::format("killed {} process(es) a previous daemon's step left running", killed));
    auto queue = connect();
    if (!queue) return 0;
    const auto own = with_database([&] { return queue->own_claims(host_); });
    if (!own) return 0;
    for (const auto& claim : *own) take_up_own_claim(*queue, claim);
    while (!stopping()) {
      auto claim = with_database([&] {
        queue->heartbeat(worker_);
        return queue->claim(worker_, options_.lease_s);
      });
      if (stopping()) break;
      if (claim && *claim) {
        run_claimed(*queue, **claim);
        continue;
      }
      if (options_.drain && with_database([&] { return queue->open_steps_for(worker_); }).value_or(1) == 0) {
        log_.info("the queue holds nothing more this box could run: drained");
        break;
      }
      sleep_for(options_.poll_s);
    }
    return 0;
  }

 private:
  bool stopping() const { return *interrupt_.flag() != 0; }

  void pause(const std::string& point) {
    log_.warning("paused at " + point + " (SCHEDLAB_DAEMON_PAUSE)");
    while (!stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  void set_state(DaemonState state) {
    if (exporter_) exporter_->set_state(state);
  }

  void sleep_for(double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!stopping() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  std::unique_ptr<WorkQueue> connect() {
    while (true) {
      try {
        auto queue = std::make_unique<WorkQueue>(options_.url);
        backoff_.answered("connected");
        return queue;
      } catch (const pg::DatabaseUnavailable& e) {
        if (!backoff_.wait("connecting", e)) return nullptr;
      }
    }
  }

  // `work` retried with backoff while the database does not answer; nullopt when the daemon was asked to
  // stop first.
  template <typename Work>
  auto with_database(Work work, const std::string& doing = "asking the queue for work")
      -> std::optional<decltype(work())> {
    while (true) {
      try {
        auto result = work();
        backoff_.answered(doing);
        return result;
      } catch (const pg::DatabaseUnavailable& e) {
        if (!backoff_.wait(doing, e)) return std::nullopt;
      }
    }
  }

  // The submitted campaign as a file of this box (the queue holds its bytes), loaded as the campaign
  // daemon loads one; its output is this daemon's when --output was given, its bundles carry this box's
  // class label (the submitter's campaign names no box).
  Campaign campaign_of(const QueueClaim& claim) {
    const fs::path file =
        state_dir_ / fmt::format("submission-{}", claim.submission) / file_safe_name(claim.campaign_file);
    if (!fs::exists(file)) {
      fs::create_directories(file.parent_path());
      write_file_atomic(file, claim.campaign_text, /*replace=*/true);
    }
    Campaign c = load_campaign(file);
    if (!options_.output.empty()) c.output = options_.output;
    c.host_label = klass_.label;
    return c;
  }

  void run_claimed(WorkQueue& queue, const QueueClaim& claim) {
    std::optional<Campaign> campaign;
    std::optional<CampaignStep> step;
    std::string unrunnable;
    try {
      campaign = campaign_of(claim);
      for (const auto& s : expand_plan(*campaign))
        if (s.key == claim.key) step = s;
      if (!step) unrunnable = "the campaign's plan has no step " + claim.key + " on this box";
    } catch (const Error& e) {
      unrunnable = std::string("the submitted campaign does not load on ") + host_ + ": " + e.what();
    }
    if (!unrunnable.empty()) {
      log_.error(fmt::format("step {} of submission {}: {}", claim.key, claim.submission, unrunnable));
      finish(queue, claim, false, std::nullopt, nullptr, unrunnable, std::nullopt);
      return;
    }
    const fs::path attempt_dir = campaign->output / "queue" /
                                 fmt::format("{}-{}", claim.submission, file_safe_name(claim.campaign)) /
                                 fmt::format("{:03}-{}", step->index, file_safe_name(step->key)) /
                                 fmt::format("attempt-{}-{}", claim.attempt, file_safe_name(host_));
    if (fs::exists(attempt_dir)) set_aside(attempt_dir);
    create_durable_directories(attempt_dir);
    if (!with_database([&] {
          queue.set_attempt_dir(claim, host_, attempt_dir);
          return true;
        }))
      return;
    log_.info(fmt::format("step {} of submission {} ({}; attempt {}{})", claim.key, claim.submission,
                          claim.campaign, claim.attempt,
                          claim.reclaimed_from.empty()
                              ? ""
                              : ", taken over from " + claim.reclaimed_from + " whose lease ran out"));
    set_state(DaemonState::kRunning);
    if (exporter_) {
      exporter_->set_current_step(claim.key, claim.index, 0);
      exporter_->count_started();
    }
    if (options_.pause_at == "step-start") pause("step-start");
    const auto argv = step_argv(*campaign, *step, options_.schedlab_binary, attempt_dir);
    const auto [exit, lost] = run_leased(claim, argv, attempt_dir / "step.log");
    const bool staged = campaign->boot != "qemu" && fs::exists(attempt_dir / kBootStateFile);
    if (staged && !lost && (exit.stopped || exit.exit_code == 0)) {
      await_reboot(queue, claim, campaign->boot, attempt_dir);
      return;
    }
    if (staged) fs::remove(attempt_dir / kBootStateFile);  // the staging failed: nothing may resume it
    record_outcome(queue, claim, attempt_dir, exit, lost, "step.log");
  }

  // Runs argv as the claim's process under a lease kept by a thread; stopped when the daemon is asked to
  // stop or the claim is lost. {exit, lost}.
  std::pair<StepExit, bool> run_leased(const QueueClaim& claim, const std::vector<std::string>& argv,
                                       const fs::path& log_file) {
    set_state(DaemonState::kRunning);
    std::pair<StepExit, bool> out;
    {
      LeaseKeeper lease(options_.url, claim, host_, options_.lease_s, log_);
      out.first = process_.run(
          argv, log_file, [&] { return stopping() || lease.lost(); }, kStopGraceSeconds);
      out.second = lease.lost();
    }
    set_state(DaemonState::kIdle);
    if (exporter_) exporter_->set_current_step("", 0, 0);
    return out;
  }

  // The step staged a boot into its kernel (a lab box, boot = "kexec" | "grub") and the machine goes down:
  // the claim is held across the reboot (its lease extended to --reboot-lease), to be resumed by this box's
  // daemon in the new kernel. A machine that does not go down within reboot_wait_s fails the step, its
  // staged boot undone.
  void await_reboot(WorkQueue& queue, const QueueClaim& claim, const std::string& backend,
                    const fs::path& attempt_dir) {
    with_database([&] { return queue.renew(claim, host_, options_.reboot_lease_s); });
    set_state(DaemonState::kBooting);
    log_.info(fmt::format("step {}: staged a {} boot; the claim is held {:g} s across the reboot", claim.key,
                          backend, options_.reboot_lease_s));
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.reboot_wait_s);
    while (!stopping() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (stopping()) return;  // the shutdown: the claim stays this box's
    fs::remove(attempt_dir / kBootStateFile);
    const std::string unstaged = unstage_boot(backend, log_);
    finish(queue, claim, false, std::nullopt, nullptr,
           fmt::format("staged a {} boot, but the machine did not go down within {:g} s; {}", backend,
                       options_.reboot_wait_s, unstaged),
           attempt_dir);
  }

  // A claim this box held when its daemon ended: a boot it staged before going down is resumed here, in
  // the new kernel; anything else goes back to the queue, its attempt set aside.
  void take_up_own_claim(WorkQueue& queue, const QueueClaim& claim) {
    const fs::path attempt_dir = claim.attempt_dir;
    StagedBoot staged = StagedBoot::kNone;
    if (!attempt_dir.empty() && fs::exists(attempt_dir)) {
      try {
        staged = staged_boot(attempt_dir, boot_id());
      } catch (const Error& e) {
        finish(queue, claim, false, std::nullopt, nullptr, e.what(), attempt_dir);
        return;
      }
    }
    if (staged == StagedBoot::kRebooted) {
      log_.info(fmt::format("step {} of submission {} resumes after its reboot (attempt {}, kernel {})",
                            claim.key, claim.submission, claim.attempt,
                            trim(read_text("/proc/sys/kernel/osrelease").value_or("?"))));
      // Written first: a daemon killed during the resume must not resume it twice (see StagedBoot).
      write_file_atomic(attempt_dir / kResumeMarker, boot_id() + "\n", /*replace=*/true);
      const std::vector<std::string> argv{options_.schedlab_binary.string(), "kernel", "resume",
                                          "--state-file", (attempt_dir / kBootStateFile).string()};
      const auto [exit, lost] = run_leased(claim, argv, attempt_dir / "resume.log");
      fs::remove(attempt_dir / kBootStateFile);
      record_outcome(queue, claim, attempt_dir, exit, lost, "resume.log");
      return;
    }
    if (staged == StagedBoot::kWentDown) {
      finish(queue, claim, false, std::nullopt, nullptr,
             "the machine went down while the suite ran in the kernel under test (resumed in boot " +
                 trim(read_text(attempt_dir / kResumeMarker).value_or("?")) + ", now boot " + boot_id() + ")",
             attempt_dir);
      return;
    }
    with_database([&] {
      queue.release(claim, host_, "the daemon on " + host_ + " restarted during this step");
      return true;
    });
    if (!attempt_dir.empty() && fs::exists(attempt_dir))
      log_.warning(
          fmt::format("step {}: this box held it when its daemon ended; back in the queue, its attempt "
                      "set aside as {}",
                      claim.key, set_aside(attempt_dir).string()));
  }

  // The attempt's outcome: its bundle indexed with the step's end, or the step failed with the end of its
  // log; an attempt whose claim was lost, or that the daemon's stop cut short, is set aside.
  void record_outcome(WorkQueue& queue, const QueueClaim& claim, const fs::path& attempt_dir,
                      const StepExit& exit, bool lost, const std::string& log_name) {
    if (lost) {
      log_.warning(fmt::format("step {}: another box holds it now; this attempt is set aside as {}",
                               claim.key, set_aside(attempt_dir).string()));
      return;
    }
    if (exit.stopped) {
      with_database([&] {
        queue.release(claim, host_, "the daemon on " + host_ + " was stopped");
        return true;
      });
      log_.info(fmt::format("step {}: stopped with the daemon, back in the queue; attempt set aside as {}",
                            claim.key, set_aside(attempt_dir).string()));
      return;
    }
    const auto bundle_path = find_bundle(attempt_dir);
    if (!bundle_path) {
      finish(queue, claim, false, std::nullopt, nullptr,
             fmt::format("no bundle (exit {}{}): {}", exit.exit_code,
                         exit.signal ? fmt::format(", signal {}", exit.signal) : "",
                         kernels::last_lines(read_text(attempt_dir / log_name).value_or(""), 3)),
             attempt_dir);
      return;
    }
    const auto bundle = load_bundle(*bundle_path);
    sync_tree(attempt_dir);  // durable before the store points at it
    if (!finish(queue, claim, true, fs::absolute(*bundle_path), &bundle, "", attempt_dir)) return;
    publish(bundle);
    log_.info(fmt::format("step {} done in {:.1f} s: {}", claim.key, exit.seconds, bundle_path->string()));
  }

  // A recorded step's counts and headline gauges; an exporter error costs the series, not the daemon.
  void publish(const Bundle& bundle) {
    if (!exporter_) return;
    exporter_->count_step_recorded(bundle);
    try {
      exporter_->publish(bundle, configuration_name(bundle));
    } catch (const std::exception& e) {
      exporter_->count_publish_error();
      log_.error(fmt::format("recorded, but not published: {}", e.what()));
    }
  }

  // Records the step's end, retrying while the database is away (the bundle waits on disk meanwhile).
  // True when this box recorded it.
  bool finish(WorkQueue& queue, const QueueClaim& claim, bool ok, const std::optional<fs::path>& bundle_path,
              const Bundle* bundle, const std::string& reason, const std::optional<fs::path>& attempt_dir) {
    const auto recorded = with_database(
        [&] { return queue.finish(claim, host_, ok, bundle_path, bundle, reason); },
        bundle_path
            ? "recording step " + claim.key + " (its bundle waits on disk: " + bundle_path->string() + ")"
            : "recording step " + claim.key);
    if (!recorded) return false;  // stopping: the claim runs out and the step is run again
    if (!*recorded) {
      if (attempt_dir)
        log_.warning(
            fmt::format("step {}: another box took it over before its end was recorded here; this "
                        "attempt is set aside as {}",
                        claim.key, set_aside(*attempt_dir).string()));
      return false;
    }
    if (!ok) {
      if (exporter_) exporter_->count_step_failed();
      log_.error(fmt::format("step {} failed: {}", claim.key, reason));
    }
    return true;
  }

  QueueWorkerOptions options_;
  Log log_;
  std::string host_;
  HostClass klass_;
  QueueWorker worker_;
  fs::path state_dir_;
  StepProcess process_;
  DatabaseBackoff backoff_{log_, [this] { return stopping(); },
                           [this](bool away) {
                             if (exporter_) exporter_->set_store_unavailable(away);
                           }};
  std::unique_ptr<Exporter> exporter_;
  InterruptGuard interrupt_;
};

}  // namespace

int run_queue_worker(const QueueWorkerOptions& options) {
  if (!pg::is_postgres_url(options.url))
    throw InputError("--queue " + options.url + ": expected a PostgreSQL URL (postgresql://...)");
  if (options.lease_s < 3) throw InputError("--lease: at least 3 s (it is renewed every third of it)");
  if (!options.output.empty() && !options.output.is_absolute())
    throw InputError("--output " + options.output.string() + ": expected an absolute directory");
  check_host_label(options.host_label);
  QueueDaemon daemon(options);
  return daemon.run();
}

}  // namespace schedlab
