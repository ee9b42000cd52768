#include "daemon/daemon.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "changes/update.hpp"
#include "collector/runner/interrupt.hpp"
#include "collector/sysinfo/host_class.hpp"
#include "core/atomic_file.hpp"
#include "core/bundle_io.hpp"
#include "core/clock.hpp"
#include "core/disk_full.hpp"
#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "daemon/attempt_files.hpp"
#include "daemon/campaign/campaign.hpp"
#include "daemon/campaign_experiments.hpp"
#include "daemon/database_wait.hpp"
#include "daemon/exporter/exporter.hpp"
#include "daemon/lab_boot.hpp"
#include "daemon/schedule.hpp"
#include "daemon/step_argv.hpp"
#include "daemon/step_process.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/store.hpp"
#include "kernels/process.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;

constexpr double kStopGraceSeconds = 3.0;  // SIGTERM to the step, then SIGKILL: within systemd's 5 s

// Thrown out of the run when the disk is full and the campaign says on_disk_full = "stop": run_daemon
// turns it into kExitDiskFull, which the unit does not restart on.
struct StopForFullDisk {};

// Free space where `path` lives (its nearest existing ancestor's file system): bytes and inodes
// available to an unprivileged writer. Zeros when statvfs fails.
struct FreeSpace {
  std::uint64_t bytes = 0, inodes = 0;
  bool more_than(const FreeSpace& o) const { return bytes > o.bytes || inodes > o.inodes; }
};
FreeSpace free_space(fs::path path) {
  std::error_code ec;
  while (!path.empty() && path != path.root_path() && !fs::exists(path, ec)) path = path.parent_path();
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return {};
  return {static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize, static_cast<std::uint64_t>(st.f_favail)};
}

// The SQLite store's file; empty for a PostgreSQL store (the server's disk is not this box's to watch).
fs::path store_file(const std::string& url) {
  if (pg::is_postgres_url(url)) return {};
  const std::string scheme = "sqlite://";
  return url.rfind(scheme, 0) == 0 ? fs::path(url.substr(scheme.size())) : fs::path(url);
}

// One daemon per campaign: the lock is held for the daemon's life, next to the step marker, and the
// holder's pid is written beside it so that a second daemon can say who runs the campaign.
class CampaignLock {
 public:
  CampaignLock(const fs::path& dir, const std::string& campaign, const std::string& file_stem)
      : pid_file_(dir / (file_stem + ".pid")) {
    fs::create_directories(dir);
    const fs::path lock_file = dir / (file_stem + ".lock");
    try {
      lock_ = std::make_unique<FileLock>(lock_file, "running campaign '" + campaign + "'");
    } catch (const SystemError&) {
      throw;
    } catch (const Error&) {
      const std::string holder = trim(read_text(pid_file_).value_or(""));
      throw InputError(
          fmt::format("campaign '{}' is already run by another schedlab daemon ({}; it holds {})", campaign,
                      holder.empty() ? "pid not yet recorded" : "pid " + holder, lock_file.string()));
    }
    write_file_atomic(pid_file_, std::to_string(::getpid()) + "\n", /*replace=*/true);
  }

 private:
  fs::path pid_file_;
  std::unique_ptr<FileLock> lock_;
};

class Daemon {
 public:
  Daemon(const DaemonOptions& options, Campaign campaign)
      : options_(options),
        log_(options.log_level),
        campaign_(std::move(campaign)),
        lock_(campaign_.output / ".daemon", campaign_.name, file_safe_name(campaign_.name)),
        store_(open_store(campaign_.store_url, campaign_.exporter.host)),
        process_(campaign_.output / ".daemon" / (file_safe_name(campaign_.name) + ".step"),
                 options.isolation != "session") {
    // Which box this is, for the exporter's `class` label: read once, at start-up (a reboot starts anew).
    campaign_.exporter.host_class = this_host_class(HostPaths::live(), campaign_.host_label);
    // A Pushgateway without a listen address is push-only: the exporter holds the series it pushes.
    if (!campaign_.exporter.listen.empty() || !campaign_.exporter.pushgateway.empty())
      exporter_ = std::make_unique<Exporter>(campaign_.exporter);
    if (options.pause_at == "store-write") store_->set_commit_hook([this] { pause("store-write"); });
    if (exporter_)
      exporter_->set_disk_paths(
          store_file_.empty() ? std::vector<std::string>{campaign_.output.string()}
                              : std::vector<std::string>{campaign_.output.string(), store_file_.string()});
  }

  int run() {
    log_.info(fmt::format(
        "campaign '{}' from {}: {} step(s), store {}, steps isolated by {}{}", campaign_.name,
        campaign_.file.string(), expand_plan(campaign_).size(), pg::redacted(campaign_.store_url),
        process_.isolation(),
        exporter_ && !campaign_.exporter.listen.empty()
            ? fmt::format(", metrics on {} (port {})", campaign_.exporter.listen, exporter_->port())
            : ""));
    const auto& host_class = campaign_.exporter.host_class;
    log_.info(host_class.label.empty()
                  ? fmt::format("host class {} (its shape; no [campaign] host_label)", host_class.shape)
                  : fmt::format("host class {} (shape {})", host_class.label, host_class.shape));
    if (int killed = process_.kill_leftovers(); killed > 0)
      log_.warning(fmt::format("killed {} process(es) a previous daemon's step left running", killed));
    if (exporter_) {
      // The plan's size from start-up, and only the campaign's instances on show (not one removed from it).
      const auto plan = expand_plan(campaign_);
      exporter_->set_plan_steps(static_cast<int>(plan.size()));
      std::set<std::string> instances;
      for (const auto& step : plan) instances.insert(step.instance_id);
      exporter_->set_instances(instances);
    }
    republish_latest();
    refresh_changes(/*confirm=*/false);  // what the store knows, on /metrics before the next run
    if (!campaign_.schedule) return run_once();
    return run_scheduled();
  }

 private:
  bool stopping() const { return *interrupt_.flag() != 0; }

  void set_state(DaemonState s) {
    if (exporter_) exporter_->set_state(s);
  }

  void pause(const std::string& point) {
    log_.warning("paused at " + point + " (SCHEDLAB_DAEMON_PAUSE)");
    while (!stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  // An unfinished run of this campaign: resumed when the file is unchanged, else superseded.
  std::optional<CampaignRun> resumable_run() {
    auto run = store_->unfinished_run(campaign_.name);
    if (run && run->content_hash != campaign_.content_hash) {
      log_.warning(
          fmt::format("run {} of '{}' was planned from a different campaign file: superseded, not resumed",
                      run->id, campaign_.name));
      discard_running_steps(*run, "its run was superseded");
      store_->end_run(run->id, "superseded");
      return std::nullopt;
    }
    return run;
  }

  int run_once() {
    auto run = resumable_run();
    if (run) {
      log_.info(fmt::format("resuming run {} started {}", run->id, run->started_at));
    } else if (auto done = finished_once_run()) {
      // A restart (the unit's, or by hand) after the run ended: the run is final, and the exit status
      // is still the run's.
      const int failed = failed_steps(done->id);
      log_.info(
          fmt::format("run {} of '{}' finished at {} ({} failed step(s)); a once campaign runs once "
                      "(change the campaign file to plan a new run)",
                      done->id, campaign_.name, done->finished_at, failed));
      set_state(DaemonState::kStopping);
      return failed > 0 ? 1 : 0;
    } else {
      run = store_->begin_run(campaign_.name, campaign_.content_hash, "",
                              static_cast<int>(expand_plan(campaign_).size()));
    }
    const bool complete = execute_through_full_disk(*run);
    set_state(DaemonState::kStopping);
    if (!complete) {
      log_.info("stopped before the plan's end; the next start resumes it");
      return 0;
    }
    return failed_steps(run->id) > 0 ? 1 : 0;
  }

  // The last run of this campaign when it is a finished once run of this very campaign file.
  std::optional<CampaignRun> finished_once_run() {
    auto last = store_->last_run(campaign_.name);
    if (last && last->status == "finished" && last->scheduled_for.empty() &&
        last->content_hash == campaign_.content_hash)
      return last;
    return std::nullopt;
  }

  // Failed steps of a run, from the store: the same whichever process ran which step.
  int failed_steps(std::int64_t run) {
    int failed = 0;
    for (const auto& [key, record] : store_->steps(run)) failed += record.status == StepStatus::kFailed;
    return failed;
  }

  // The persistence start for the next elapse: the later of the campaign's first sighting and the
  // last run's elapse. A time ahead of the clock (recorded while the clock
  // was wrong) counts as the moment this daemon first saw it, as systemd treats a timer's last trigger
  // in the future: the schedule goes on from there instead of waiting for the clock to catch up —
  // unless this daemon ran that run itself: then the clock went back, and that elapse is served.
  TimePoint schedule_since(TimePoint first_seen, const std::optional<CampaignRun>& last, TimePoint now) {
    if (!last || last->scheduled_for.empty()) return first_seen;
    const TimePoint scheduled = parse_utc_timestamp(last->scheduled_for);
    if (scheduled <= now) return std::max(first_seen, scheduled);
    if (runs_here_.count(last->id)) {
      // This daemon ran it when the clock said so: the clock went back since (`date`, NTP stepping).
      // Its elapse is served; waiting for the clock to pass it again runs no elapse twice.
      if (clock_back_logged_ != last->id) {
        clock_back_logged_ = last->id;
        log_.warning(
            fmt::format("the clock went back to {}, before run {}'s elapse at {}, which this daemon "
                        "ran: no elapse up to it runs again",
                        format_utc_timestamp(now), last->id, last->scheduled_for));
      }
      return std::max(first_seen, scheduled);
    }
    if (!future_run_seen_ || future_run_seen_->first != last->id) {
      future_run_seen_ = std::make_pair(last->id, now);
      log_.warning(
          fmt::format("run {} was scheduled for {}, ahead of the clock ({}): the schedule goes on "
                      "from now",
                      last->id, last->scheduled_for, format_utc_timestamp(now)));
    }
    return std::max(first_seen, future_run_seen_->second);
  }

  int run_scheduled() {
    // Seen "in the future" (the clock was ahead then): seen now. Clamped once, so it does not
    // follow the clock and postpone the first elapse for ever.
    const auto first_seen =
        std::min(parse_utc_timestamp(store_->first_seen(campaign_.name)), std::chrono::system_clock::now());
    while (!stopping()) {
      if (auto run = resumable_run()) {
        log_.info(fmt::format("resuming run {} (scheduled for {})", run->id, run->scheduled_for));
        if (!execute_through_full_disk(*run)) break;
        continue;
      }
      const auto now = std::chrono::system_clock::now();
      const TimePoint since = schedule_since(first_seen, store_->last_run(campaign_.name), now);
      if (auto due = latest_missed_elapse(*campaign_.schedule, since, now)) {
        auto run = store_->begin_run(campaign_.name, campaign_.content_hash, format_utc_timestamp(*due),
                                     static_cast<int>(expand_plan(campaign_).size()));
        log_.info(fmt::format("run {} for the elapse at {}", run.id, run.scheduled_for));
        if (!execute_through_full_disk(run)) break;
        continue;
      }
      auto next = next_elapse(*campaign_.schedule, now);
      if (exporter_) exporter_->set_next_run(next);
      set_state(DaemonState::kIdle);
      if (!next) {
        log_.info("the schedule has no further elapse; idle until stopped");
        while (!stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        break;
      }
      log_.info("next run at " + format_utc_timestamp(*next));
      // Short sleeps: SIGTERM is noticed at once, and a changed wall clock (NTP, suspend) is re-read.
      while (!stopping() && std::chrono::system_clock::now() < *next)
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    set_state(DaemonState::kStopping);
    log_.info("stopped");
    return 0;
  }

  // execute(), through a full disk: a write refused for want of space (the step's bundle, the store, the
  // daemon's own files) leaves its step unrecorded, and the daemon waits for space and tries again, or
  // stops, as the campaign's on_disk_full says. False when stopped by a signal while waiting.
  bool execute_through_full_disk(const CampaignRun& run) {
    for (;;) {
      try {
        const bool complete = execute(run);
        if (complete) space_is_back("the run's end");
        return complete;
      } catch (const DiskFullError& e) {
        if (!wait_for_space(run, e.file(), e.what())) return false;
      } catch (const pg::DatabaseUnavailable& e) {
        // Between steps (a step's begin, the plan's progress): nothing measured is waiting; once the store
        // answers, the run resumes as after a restart.
        if (!database_.wait("running the campaign", e)) return false;
      } catch (const SystemError& e) {
        if (!is_disk_full(e.code())) throw;
        if (!wait_for_space(run, campaign_.output, e.what()))
          return false;  // the daemon's own files live there
      }
    }
  }

  // Where a refused write lands, as the log and schedlab_daemon_disk_full name it: the output directory
  // for anything under it (bundles, attempts, the daemon's state files), the store's file, or the file.
  fs::path disk_of(const fs::path& file) const {
    const auto rel = file.lexically_relative(campaign_.output);
    if (!rel.empty() && *rel.begin() != "..") return campaign_.output;
    return file;
  }

  // The disk is full at `file` (`what`: the refused write). "stop": logs why and stops (kExitDiskFull).
  // "wait": logs once that the daemon waits (schedlab_daemon_disk_full{path} 1), then every
  // disk_full_retry checks the space; when it tries again, it sets the unrecorded step aside (its attempt
  // kept as *.discarded, the step pending again) and returns true to run the plan on. False when a signal
  // stopped the daemon while it waited.
  bool wait_for_space(const CampaignRun& run, const fs::path& file, const std::string& what) {
    const fs::path path = disk_of(file);
    FreeSpace at_failure = free_space(path);
    if (campaign_.on_disk_full == OnDiskFull::kStop) {
      log_.error(fmt::format(
          "disk full: {} has {} bytes free ({}); on_disk_full = \"stop\": the daemon stops (exit {}) with "
          "nothing half-recorded. Free space and start it again: the step that could not be written runs "
          "again",
          path.string(), at_failure.bytes, what, kExitDiskFull));
      set_state(DaemonState::kStopping);
      throw StopForFullDisk{};
    }
    // One wait from the first refused write to the first write that goes through; the output directory and
    // the store may take turns being refused in it (on one file system), each logged once.
    const bool newly = !disk_wait_;
    if (newly) disk_wait_ = DiskWait{path, std::chrono::steady_clock::now(), {}};
    disk_wait_->path = path;
    if (disk_wait_->logged.insert(path).second)
      log_.warning(fmt::format(
          "disk full: {} has {} bytes free ({}); on_disk_full = \"wait\": nothing of the step is recorded, "
          "and the daemon tries again every {:g} s once space is freed",
          path.string(), at_failure.bytes, what, campaign_.disk_full_retry_s));
    else
      log_.debug(
          fmt::format("disk still full: {} has {} bytes free ({})", path.string(), at_failure.bytes, what));
    if (exporter_) exporter_->set_disk_full(path.string());
    set_state(DaemonState::kIdle);
    // The first check of a new wait tries again whatever the space (it may have been freed before it was
    // measured); later ones only once there is more than at the last failure: a step is not rerun in vain
    // every disk_full_retry, leaving an attempt each time.
    for (bool retry_anyway = newly;; retry_anyway = false) {
      const auto until =
          std::chrono::steady_clock::now() + std::chrono::duration<double>(campaign_.disk_full_retry_s);
      while (!stopping() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (stopping()) return false;
      const FreeSpace now = free_space(path);
      if (!retry_anyway && !now.more_than(at_failure)) {
        log_.debug(fmt::format("disk still full: {} has {} bytes free", path.string(), now.bytes));
        continue;
      }
      try {
        discard_running_steps(run, "its result could not be written: disk full");
        return true;
      } catch (const SystemError& e) {
        if (!is_disk_full(e.code())) throw;
        at_failure = free_space(path);
        log_.debug(fmt::format("disk still full: {} has {} bytes free ({})", path.string(), at_failure.bytes,
                               e.what()));
      }
    }
  }

  // A write went through after the daemon waited for space: it says so, once, and /metrics goes back to 0.
  void space_is_back(const std::string& what) {
    if (!disk_wait_) return;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - disk_wait_->since).count();
    log_.info(fmt::format(
        "disk space is back: {} has {} bytes free; {} recorded: resumed after {:.0f} s of waiting",
        disk_wait_->path.string(), free_space(disk_wait_->path).bytes, what, waited));
    disk_wait_.reset();
    if (exporter_) exporter_->set_disk_full("");
  }

  // Runs the plan's unfinished steps. True when the plan is complete (the run is then ended).
  bool execute(const CampaignRun& run) {
    runs_here_.insert(run.id);
    const auto plan = expand_plan(campaign_);
    const fs::path run_dir = campaign_runs_directory(campaign_) / run_directory_name(run);
    auto records = store_->steps(run.id);
    for (const auto& step : plan) {
      auto record = records.find(step.key);
      if (record == records.end() || record->second.status != StepStatus::kRunning) continue;
      if (campaign_.boot == "qemu") {
        discard(run, record->second, "the daemon ended during this step");
        continue;
      }
      StagedBoot staged;
      try {
        staged = staged_boot(record->second.attempt_dir, boot_id());
      } catch (const Error& e) {  // a malformed state file: this step fails, not every restart
        set_aside_attempt(record->second);
        fail_step(run, step.key, e.what());
        continue;
      }
      if (staged == StagedBoot::kRebooted) {
        if (!resume_step(run, step, record->second, plan.size())) return false;
      } else if (staged == StagedBoot::kWentDown) {
        const auto resumed_in =
            trim(read_text(fs::path(record->second.attempt_dir) / kResumeMarker).value_or(""));
        // What the cut suite wrote is no result: set aside, so that a rebuild does not index it.
        set_aside_attempt(record->second);
        fail_step(
            run, step.key,
            fmt::format("the machine went down while the suite ran in {} (resumed in boot {}, now boot {})",
                        step.configuration, resumed_in, boot_id()));
      } else {
        discard(run, record->second, "the daemon ended during this step: " + to_string(staged));
      }
    }
    records = store_->steps(run.id);
    std::optional<CampaignExperiments> experiments;
    if (campaign_.target) experiments.emplace(campaign_, plan, run_dir, run.started_at);
    std::size_t skipped = 0;
    for (const auto& step : plan) {
      if (stopping()) return false;
      auto record = records.find(step.key);
      const int attempts = record == records.end() ? 0 : record->second.attempts;
      if (record != records.end() &&
          (record->second.status == StepStatus::kFinished || record->second.status == StepStatus::kFailed))
        continue;
      if (experiments) {
        look(run, *experiments);
        if (auto why = experiments->skip_reason(step)) {
          ++skipped;
          log_.debug(fmt::format("step {} not run: {}", step.key, *why));
          continue;
        }
      }
      if (!run_step(run, step, run_dir, attempts + 1, plan.size())) return false;
      if (options_.pause_at == "between-steps") pause("between-steps");
    }
    if (experiments) look(run, *experiments);
    store_->end_run(run.id, "finished");
    log_.info(fmt::format(
        "run {} finished: {} step(s), {} failed{}", run.id, plan.size() - skipped, failed_steps(run.id),
        skipped ? fmt::format(", {} not needed once the comparisons stopped", skipped) : ""));
    if (exporter_) exporter_->set_current_step("", 0, static_cast<int>(plan.size()));
    refresh_changes(campaign_.changes.confirm);
    return !stopping();
  }

  // The change points of this host's series of the campaign's instances, with their stored statuses;
  // with `confirm`, each suspected one is rerun (a paired experiment of the configurations either side,
  // in the step's cgroup, so a killed daemon's rerun is killed like its steps) before the next run.
  // Published on /metrics. A failure here is logged: the run's results are recorded already.
  void refresh_changes(bool confirm) {
    if (!campaign_.changes.detect) return;
    try {
      ChangeQuery query;
      for (const auto& step : expand_plan(campaign_)) query.instance_ids.insert(step.instance_id);
      query.host = running_hostname();
      stats::ChangePointOptions options;
      options.alpha = campaign_.changes.alpha;
      options.min_effect = campaign_.changes.min_effect_pct / 100;
      options.seed = campaign_.seed;
      const ChangeSearch found = find_changes(*store_, query, options);
      ChangeUpdate how;
      how.confirm = confirm;
      how.rerun.budget_s = campaign_.changes.budget_s;
      how.rerun.seed = campaign_.seed;
      how.rerun.boot = campaign_.boot;
      how.rerun.kernel_cache = campaign_.kernel_cache;
      how.rerun.timeout_s = campaign_.timeout_s;
      how.rerun.settle_timeout_s = campaign_.settle_timeout_s;
      how.rerun_root = campaign_runs_directory(campaign_) / "reruns";
      how.running_release = running_kernel_release();
      how.running_host = query.host;
      how.run = [this](const std::vector<std::string>& args, const fs::path& log) {
        std::vector<std::string> argv{options_.schedlab_binary.string()};
        argv.insert(argv.end(), args.begin(), args.end());
        set_state(DaemonState::kRunning);
        const auto exit = process_.run(
            argv, log, [this] { return stopping(); }, kStopGraceSeconds);
        return exit.stopped ? -1 : exit.exit_code;
      };
      how.say = [this](const std::string& line) { log_.info(line); };
      // Once, when the rerun decides: the journal's reader is told as Prometheus is.
      how.decided = [this](const ChangeRecord& r) {
        if (r.status == kConfirmed)
          log_.warning(fmt::format("confirmed change: {}.{} {} at {}: {:+.1f}% {} ({})", r.workload, r.metric,
                                   r.instance_id, r.at, r.relative * 100, r.direction, r.reason));
      };
      how.stop_requested = [this] { return stopping(); };
      const auto records = update_changes(*store_, found, how);
      std::map<std::string, int> by_status;
      for (const auto& r : records) ++by_status[r.status];
      std::string counts;
      for (const auto& [status, n] : by_status) counts += fmt::format(", {} {}", n, status);
      log_.info(fmt::format("change points: {} in {} series{}", records.size(), found.series, counts));
      if (!exporter_) return;
      std::vector<ExportedChange> exported;
      for (const auto& r : records)
        exported.push_back({campaign_.exporter.host.empty() ? r.host : campaign_.exporter.host, r.workload,
                            r.metric, r.instance_id, r.params_hash, r.configuration, r.direction, r.status,
                            r.at, r.relative, r.lower, r.upper});
      try {
        exporter_->set_change_points(exported);
      } catch (const Error& e) {
        log_.warning(std::string("change points on /metrics: ") + e.what());
        exporter_->count_publish_error();
      }
    } catch (const std::exception& e) {
      log_.warning(std::string("change points not brought up to date: ") + e.what());
    }
  }

  // A target campaign's comparisons brought up to date with the run's finished steps: new plans, looks
  // and verdicts logged, each instance's record rewritten beside the run's steps.
  void look(const CampaignRun& run, CampaignExperiments& experiments) {
    double elapsed = 0;
    try {
      elapsed = std::chrono::duration<double>(std::chrono::system_clock::now() -
                                              parse_utc_timestamp(run.started_at))
                    .count();
    } catch (const Error& e) {
      log_.warning(fmt::format("run {}: {}; its budget counts from now", run.id, e.what()));
    }
    for (const auto& line : experiments.update(store_->steps(run.id), elapsed)) log_.info(line);
    experiments.write();
  }

  void discard(const CampaignRun& run, const StepRecord& record, const std::string& why) {
    set_aside_attempt(record);
    store_->abandon_step(run.id, record.key, why);
    log_.warning(
        fmt::format("step {} attempt {} discarded ({}); it runs again", record.key, record.attempts, why));
  }

  void set_aside_attempt(const StepRecord& record) {
    std::error_code ec;
    if (!record.attempt_dir.empty() && fs::exists(record.attempt_dir, ec)) set_aside(record.attempt_dir);
  }

  // The running steps of a run that will not be resumed: their attempts set aside and the steps
  // back to pending, so that disk and store agree on what is a result.
  void discard_running_steps(const CampaignRun& run, const std::string& why) {
    for (const auto& [key, record] : store_->steps(run.id))
      if (record.status == StepStatus::kRunning) discard(run, record, why);
  }

  // "run-ID-STARTED": unique across stores. Run ids restart at 1 when the store is recreated, and
  // a directory of an earlier store's run must never be taken for this run's.
  static std::string run_directory_name(const CampaignRun& run) {
    std::string stamp;
    for (char c : run.started_at)
      if (std::isalnum(static_cast<unsigned char>(c))) stamp += c;
    return fmt::format("run-{}-{}", run.id, stamp);
  }

  // False when the daemon was asked to stop during the step (the step is then discarded).
  bool run_step(const CampaignRun& run, const CampaignStep& step, const fs::path& run_dir, int attempt,
                std::size_t total) {
    const fs::path attempt_dir = run_dir / fmt::format("{:03}-{}", step.index, file_safe_name(step.key)) /
                                 fmt::format("attempt-{}", attempt);
    if (fs::exists(attempt_dir)) {  // not this run's: only a fresh directory can hold this attempt's bundle
      const auto kept = set_aside(attempt_dir);
      log_.warning(fmt::format("{} existed before its attempt began: set aside as {}", attempt_dir.string(),
                               kept.string()));
    }
    create_durable_directories(attempt_dir);
    try {
      store_->begin_step(run.id, step.index, step.key, attempt_dir);
    } catch (const std::exception&) {  // a full store, say: the attempt never began, so its directory goes
      std::error_code ec;
      fs::remove(attempt_dir, ec);  // empty: only a directory nothing was written in
      throw;
    }
    set_state(on_running_kernel(step.configuration) ? DaemonState::kRunning : DaemonState::kBooting);
    if (exporter_) {
      exporter_->set_current_step(step.key, step.index, static_cast<int>(total));
      exporter_->count_started();
    }
    log_.info(fmt::format("step {}/{} {} (attempt {})", step.index + 1, total, step.key, attempt));
    if (options_.pause_at == "step-start") pause("step-start");
    const auto argv = step_argv(campaign_, step, options_.schedlab_binary, attempt_dir);
    const auto exit = process_.run(
        argv, attempt_dir / "step.log", [this] { return stopping(); }, kStopGraceSeconds);
    const bool staged = campaign_.boot != "qemu" && fs::exists(attempt_dir / kBootStateFile);
    if (staged && (exit.stopped || exit.exit_code == 0)) return await_reboot(run, step, attempt_dir);
    if (exit.stopped) {
      discard(run,
              {step.key, step.index, StepStatus::kRunning, attempt, attempt_dir.string(), "", "", "", ""},
              "the daemon was stopped");
      return false;
    }
    // A staging that failed after writing its state (kexec -l refused the kernel, say): no reboot
    // comes, and nothing may resume it later.
    if (staged) fs::remove(attempt_dir / kBootStateFile);
    // The step could not write its bundle for want of space: not a failed step, an unrecorded one (the
    // step stays running in the store until the wait sets its attempt aside).
    if (exit.exit_code == kExitDiskFull && !find_bundle(attempt_dir))
      throw DiskFullError(
          fmt::format("step {} could not write its bundle (exit {}): {}", step.key, exit.exit_code,
                      trim(kernels::last_lines(read_text(attempt_dir / "step.log").value_or(""), 1))),
          ENOSPC, attempt_dir);
    return record_outcome(run, step, attempt_dir, exit, "step.log");
  }

  // The step staged a boot into its kernel, and the machine is going down: the step stays running in
  // the store, to be resumed in that kernel by the daemon the unit starts after the reboot.
  bool await_reboot(const CampaignRun& run, const CampaignStep& step, const fs::path& attempt_dir) {
    set_state(DaemonState::kBooting);
    log_.info(fmt::format("step {}: staged a {} boot into {}; waiting for the machine to go down", step.key,
                          campaign_.boot, step.configuration));
    // The shutdown (systemctl kexec, reboot) stops the daemon within seconds; when it has not come in
    // this long, the step fails instead of waiting for ever.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.reboot_wait_s);
    while (!stopping() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (stopping()) return false;
    fs::remove(attempt_dir / kBootStateFile);
    const std::string unstaged = unstage_boot(campaign_.boot, log_);
    fail_step(run, step.key,
              fmt::format("staged a {} boot into {}, but the machine did not go down within {:g} s; {}",
                          campaign_.boot, step.configuration, options_.reboot_wait_s, unstaged));
    return true;
  }

  // In the kernel the step staged: `schedlab kernel resume` runs the suite if the expected kernel is
  // the one running, or records boot-failed (grub fell back to the default entry, say).
  bool resume_step(const CampaignRun& run, const CampaignStep& step, const StepRecord& record,
                   std::size_t total) {
    const fs::path attempt_dir = record.attempt_dir;
    set_state(DaemonState::kRunning);
    if (exporter_) exporter_->set_current_step(step.key, step.index, static_cast<int>(total));
    log_.info(fmt::format("step {}/{} {} resumes after its reboot (attempt {}, kernel {})", step.index + 1,
                          total, step.key, record.attempts,
                          trim(read_text("/proc/sys/kernel/osrelease").value_or("?"))));
    // Written first: a daemon killed during the resume must not resume it twice (see StagedBoot).
    write_file_atomic(attempt_dir / kResumeMarker, boot_id() + "\n", /*replace=*/true);
    const std::vector<std::string> argv{options_.schedlab_binary.string(), "kernel", "resume", "--state-file",
                                        (attempt_dir / kBootStateFile).string()};
    const auto exit = process_.run(
        argv, attempt_dir / "resume.log", [this] { return stopping(); }, kStopGraceSeconds);
    if (exit.stopped) {
      discard(run, record, "the daemon was stopped during the resumed step");
      return false;
    }
    return record_outcome(run, step, attempt_dir, exit, "resume.log");
  }

  // A step's end, recorded through a database that went away (a PostgreSQL store restarted): the bundle
  // stays on disk and the daemon retries with backoff until the store answers, then indexes it. False when
  // stopped meanwhile: the step stays running in the store, to be discarded and rerun by the next daemon.
  bool end_step_through_outage(const CampaignRun& run, const std::string& key, StepStatus status,
                               const std::optional<fs::path>& bundle_path, const Bundle* bundle,
                               const std::string& reason) {
    const std::string doing =
        "recording step " + key +
        (bundle_path ? " (its bundle waits on disk: " + bundle_path->string() + ")" : "");
    for (;;) {
      try {
        store_->end_step(run.id, key, status, bundle_path, bundle, reason);
        database_.answered(doing);
        return true;
      } catch (const pg::DatabaseUnavailable& e) {
        if (!database_.wait(doing, e)) return false;
      }
    }
  }

  void fail_step(const CampaignRun& run, const std::string& key, const std::string& why) {
    if (!end_step_through_outage(run, key, StepStatus::kFailed, std::nullopt, nullptr, why)) return;
    space_is_back("step " + key + " (failed)");
    if (exporter_) exporter_->count_step_failed();
    log_.error("step " + key + " failed: " + why);
  }

  // Indexes the step's bundle, or records the step failed with the end of its log as the reason.
  bool record_outcome(const CampaignRun& run, const CampaignStep& step, const fs::path& attempt_dir,
                      const StepExit& exit, const std::string& log_name) {
    auto bundle_path = find_bundle(attempt_dir);
    if (!bundle_path) {
      fail_step(run, step.key,
                fmt::format("no bundle (exit {}{}): {}", exit.exit_code,
                            exit.signal ? fmt::format(", signal {}", exit.signal) : "",
                            kernels::last_lines(read_text(attempt_dir / log_name).value_or(""), 3)));
      return true;
    }
    const auto bundle = load_bundle(*bundle_path);
    sync_tree(attempt_dir);  // the bundle's directory entries durable before the store points at them
    int failed = 0, timed_out = 0;
    for (const auto& in : bundle.instances)
      for (const auto& r : in.repetitions) {
        failed += r.status == status::kFailed;
        timed_out += r.status == status::kTimeout;
      }
    if (!end_step_through_outage(
            run, step.key, StepStatus::kFinished, fs::absolute(*bundle_path), &bundle,
            failed + timed_out ? fmt::format("{} failed, {} timed out", failed, timed_out) : ""))
      return false;
    space_is_back("step " + step.key);
    if (exporter_) {
      exporter_->count_step_recorded(bundle);
      // The step is committed: an exporter error costs its series (logged, counted on /metrics), not the
      // daemon.
      try {
        if (options_.pause_at == "publish-error")
          throw Error("exporter: publish fault asked for by SCHEDLAB_DAEMON_PAUSE=publish-error");
        exporter_->publish(bundle, configuration_name(bundle));
      } catch (const std::exception& e) {
        exporter_->count_publish_error();
        log_.error(fmt::format("step {}: recorded, but not published: {}", step.key, e.what()));
      }
      if (!campaign_.exporter.pushgateway.empty())
        if (auto err = exporter_->push(bundle, configuration_name(bundle)); !err.empty())
          log_.warning("push to " + campaign_.exporter.pushgateway + " failed: " + err);
    }
    log_.info(
        fmt::format("step {} done in {:.1f} s: {}{}", step.key, exit.seconds, bundle_path->string(),
                    failed + timed_out ? fmt::format(" ({} failed, {} timed out)", failed, timed_out) : ""));
    return true;
  }

  // After a restart the gauges show the latest results again, not nothing until the next step ends.
  void republish_latest() {
    if (!exporter_) return;
    auto last = store_->last_run(campaign_.name);
    if (!last) return;
    for (const auto& [key, record] : store_->steps(last->id)) {
      if (record.bundle_path.empty()) continue;
      try {
        auto bundle = load_bundle(record.bundle_path);
        exporter_->publish(bundle, configuration_name(bundle));
      } catch (const std::exception& e) {
        log_.warning("cannot republish " + record.bundle_path + ": " + e.what());
      }
    }
  }

  const DaemonOptions& options_;
  Log log_;
  Campaign campaign_;
  CampaignLock lock_;         // before the store and the marker are touched
  InterruptGuard interrupt_;  // SIGTERM/SIGINT: finish or abandon the current step, then stop
  std::unique_ptr<Store> store_;
  StepProcess process_;
  std::unique_ptr<Exporter> exporter_;
  // A run recorded as scheduled in the future (the clock was ahead): its id, and when this daemon
  // first saw it, which stands in for its elapse (see run_scheduled).
  std::optional<std::pair<std::int64_t, TimePoint>> future_run_seen_;
  // Runs this process executed (a run ahead of the clock among them means the clock went back).
  std::set<std::int64_t> runs_here_;
  std::int64_t clock_back_logged_ = 0;
  fs::path store_file_ = store_file(campaign_.store_url);
  DatabaseBackoff database_{log_, [this] { return stopping(); },
                            [this](bool away) {
                              if (exporter_) exporter_->set_store_unavailable(away);
                            }};
  // While the daemon waits for space (on_disk_full = "wait"): where, and since when.
  struct DiskWait {
    fs::path path;  // of the latest refused write
    std::chrono::steady_clock::time_point since;
    std::set<fs::path> logged;  // paths whose refusal the log has told
  };
  std::optional<DiskWait> disk_wait_;
};

}  // namespace

int run_daemon(const DaemonOptions& options) {
  DaemonOptions resolved = options;
  // The binary's own path, not /proc/self/exe: the step's command line in `ps` and the log says what runs.
  std::error_code ec;
  if (auto self = fs::read_symlink(options.schedlab_binary, ec); !ec) resolved.schedlab_binary = self;
  const Campaign campaign = load_campaign(options.config);
  const bool stop_on_full = campaign.on_disk_full == OnDiskFull::kStop;
  try {
    Daemon daemon(resolved, campaign);
    return daemon.run();
  } catch (const StopForFullDisk&) {
    return kExitDiskFull;  // logged where it was found
  } catch (const SystemError& e) {
    // A full disk outside a run's steps (at start-up: the lock's pid file, the store's schema; a run's
    // first row): no step to set aside. "wait" leaves the retry to the unit (exit 75: restarted after
    // RestartSec), "stop" stops.
    if (!is_disk_full(e.code())) throw;
    Log(options.log_level)
        .error(fmt::format("disk full outside a step ({}); on_disk_full = \"{}\": exit {}", e.what(),
                           stop_on_full ? "stop" : "wait",
                           stop_on_full ? fmt::format("{}, not restarted by the unit", kExitDiskFull)
                                        : fmt::format("{}, which the unit restarts on", kExitDaemonFailed)));
    return stop_on_full ? kExitDiskFull : kExitDaemonFailed;
  }
}

}  // namespace schedlab
