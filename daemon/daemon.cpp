#include "daemon/daemon.hpp"

#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "collector/runner/interrupt.hpp"
#include "core/atomic_file.hpp"
#include "core/bundle_io.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "daemon/campaign/campaign.hpp"
#include "daemon/exporter/exporter.hpp"
#include "daemon/lab_boot.hpp"
#include "daemon/schedule.hpp"
#include "daemon/step_argv.hpp"
#include "daemon/step_process.hpp"
#include "daemon/store/store.hpp"
#include "kernels/process.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;

constexpr double kStopGraceSeconds = 3.0;  // SIGTERM to the step, then SIGKILL: within systemd's 5 s
// After a lab step staged its boot, the shutdown (systemctl kexec, reboot) stops the daemon within
// seconds; when it has not come in this long, the step fails instead of waiting for ever.
constexpr double kRebootWaitSeconds = 600;

std::string directory_name(const std::string& key) {
  std::string out;
  for (char c : key)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '=' || c == '-') ? c : '_';
  return out;
}

// The step's bundle: the one file under the attempt directory that loads as a bundle.
std::optional<fs::path> find_bundle(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".json") continue;
    try {
      load_bundle(it->path());
      return it->path();
    } catch (const InputError&) {  // a boot record or console capture, not a bundle
    }
  }
  return std::nullopt;
}

class Daemon {
 public:
  Daemon(const DaemonOptions& options, Campaign campaign)
      : options_(options),
        log_(options.log_level),
        campaign_(std::move(campaign)),
        store_(open_store(campaign_.store_url)),
        process_(campaign_.output / ".daemon" / (directory_name(campaign_.name) + ".step")) {
    // A Pushgateway without a listen address is push-only: the exporter holds the series it pushes.
    if (!campaign_.exporter.listen.empty() || !campaign_.exporter.pushgateway.empty())
      exporter_ = std::make_unique<Exporter>(campaign_.exporter);
    if (options.pause_at == "store-write") store_->set_commit_hook([this] { pause("store-write"); });
  }

  int run() {
    log_.info(fmt::format(
        "campaign '{}' from {}: {} step(s), store {}, steps isolated by {}{}", campaign_.name,
        campaign_.file.string(), expand_plan(campaign_).size(), campaign_.store_url, process_.isolation(),
        exporter_ && !campaign_.exporter.listen.empty()
            ? fmt::format(", metrics on {} (port {})", campaign_.exporter.listen, exporter_->port())
            : ""));
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
      store_->end_run(run->id, "superseded");
      return std::nullopt;
    }
    return run;
  }

  int run_once() {
    auto run = resumable_run();
    if (run)
      log_.info(fmt::format("resuming run {} started {}", run->id, run->started_at));
    else
      run = store_->begin_run(campaign_.name, campaign_.content_hash, "",
                              static_cast<int>(expand_plan(campaign_).size()));
    const bool complete = execute(*run);
    set_state(DaemonState::kStopping);
    if (!complete) {
      log_.info("stopped before the plan's end; the next start resumes it");
      return 0;
    }
    return failed_steps_ > 0 ? 1 : 0;
  }

  int run_scheduled() {
    const auto first_seen = parse_utc_timestamp(store_->first_seen(campaign_.name));
    while (!stopping()) {
      if (auto run = resumable_run()) {
        log_.info(fmt::format("resuming run {} (scheduled for {})", run->id, run->scheduled_for));
        if (!execute(*run)) break;
        continue;
      }
      auto last = store_->last_run(campaign_.name);
      TimePoint since = first_seen;
      if (last && !last->scheduled_for.empty())
        since = std::max(since, parse_utc_timestamp(last->scheduled_for));
      const auto now = std::chrono::system_clock::now();
      if (auto due = latest_missed_elapse(*campaign_.schedule, since, now)) {
        auto run = store_->begin_run(campaign_.name, campaign_.content_hash, format_utc_timestamp(*due),
                                     static_cast<int>(expand_plan(campaign_).size()));
        log_.info(fmt::format("run {} for the elapse at {}", run.id, run.scheduled_for));
        if (!execute(run)) break;
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

  // Runs the plan's unfinished steps. True when the plan is complete (the run is then ended).
  bool execute(const CampaignRun& run) {
    const auto plan = expand_plan(campaign_);
    const fs::path run_dir =
        campaign_.output / directory_name(campaign_.name) / fmt::format("run-{}", run.id);
    auto records = store_->steps(run.id);
    for (const auto& step : plan) {
      auto record = records.find(step.key);
      if (record == records.end() || record->second.status != StepStatus::kRunning) continue;
      if (campaign_.boot == "qemu") {
        discard(run, record->second, "the daemon ended during this step");
        continue;
      }
      const auto staged = staged_boot(record->second.attempt_dir, boot_id());
      if (staged == StagedBoot::kRebooted) {
        if (!resume_step(run, step, record->second, plan.size())) return false;
      } else if (staged == StagedBoot::kWentDown) {
        fail_step(
            run, step.key,
            fmt::format("the machine went down while the suite ran in {} (resumed in boot {}, now boot {})",
                        step.configuration,
                        trim(read_text(fs::path(record->second.attempt_dir) / kResumeMarker).value_or("")),
                        boot_id()));
      } else {
        discard(run, record->second, "the daemon ended during this step: " + to_string(staged));
      }
    }
    records = store_->steps(run.id);
    for (const auto& step : plan) {
      if (stopping()) return false;
      auto record = records.find(step.key);
      const int attempts = record == records.end() ? 0 : record->second.attempts;
      if (record != records.end() &&
          (record->second.status == StepStatus::kFinished || record->second.status == StepStatus::kFailed))
        continue;
      if (!run_step(run, step, run_dir, attempts + 1, plan.size())) return false;
      if (options_.pause_at == "between-steps") pause("between-steps");
    }
    store_->end_run(run.id, "finished");
    log_.info(fmt::format("run {} finished: {} step(s), {} failed", run.id, plan.size(), failed_steps_));
    if (exporter_) exporter_->set_current_step("", 0, static_cast<int>(plan.size()));
    return true;
  }

  void discard(const CampaignRun& run, const StepRecord& record, const std::string& why) {
    std::error_code ec;
    if (!record.attempt_dir.empty() && fs::exists(record.attempt_dir, ec)) {
      fs::path kept = record.attempt_dir + ".discarded";
      fs::rename(record.attempt_dir, kept, ec);
      if (ec) throw Error("cannot set aside " + record.attempt_dir + ": " + ec.message());
    }
    store_->abandon_step(run.id, record.key, why);
    log_.warning(
        fmt::format("step {} attempt {} discarded ({}); it runs again", record.key, record.attempts, why));
  }

  // False when the daemon was asked to stop during the step (the step is then discarded).
  bool run_step(const CampaignRun& run, const CampaignStep& step, const fs::path& run_dir, int attempt,
                std::size_t total) {
    const fs::path attempt_dir = run_dir / fmt::format("{:03}-{}", step.index, directory_name(step.key)) /
                                 fmt::format("attempt-{}", attempt);
    fs::create_directories(attempt_dir);
    store_->begin_step(run.id, step.index, step.key, attempt_dir);
    set_state(step.configuration == "running" ? DaemonState::kRunning : DaemonState::kBooting);
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
      discard(run, {step.key, step.index, StepStatus::kRunning, attempt, attempt_dir.string(), "", ""},
              "the daemon was stopped");
      return false;
    }
    // A staging that failed after writing its state (kexec -l refused the kernel, say): no reboot
    // comes, and nothing may resume it later.
    if (staged) fs::remove(attempt_dir / kBootStateFile);
    return record_outcome(run, step, attempt_dir, exit, "step.log");
  }

  // The step staged a boot into its kernel, and the machine is going down: the step stays running in
  // the store, to be resumed in that kernel by the daemon the unit starts after the reboot.
  bool await_reboot(const CampaignRun& run, const CampaignStep& step, const fs::path& attempt_dir) {
    set_state(DaemonState::kBooting);
    log_.info(fmt::format("step {}: staged a {} boot into {}; waiting for the machine to go down", step.key,
                          campaign_.boot, step.configuration));
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(kRebootWaitSeconds);
    while (!stopping() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (stopping()) return false;
    fs::remove(attempt_dir / kBootStateFile);
    fail_step(run, step.key,
              fmt::format("staged a {} boot into {}, but the machine did not go down within {:g} s",
                          campaign_.boot, step.configuration, kRebootWaitSeconds));
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

  void fail_step(const CampaignRun& run, const std::string& key, const std::string& why) {
    store_->end_step(run.id, key, StepStatus::kFailed, std::nullopt, nullptr, why);
    ++failed_steps_;
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
    int failed = 0, timed_out = 0;
    for (const auto& in : bundle.instances)
      for (const auto& r : in.repetitions) {
        failed += r.status == status::kFailed;
        timed_out += r.status == status::kTimeout;
      }
    store_->end_step(run.id, step.key, StepStatus::kFinished, fs::absolute(*bundle_path), &bundle,
                     failed + timed_out ? fmt::format("{} failed, {} timed out", failed, timed_out) : "");
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
  InterruptGuard interrupt_;  // SIGTERM/SIGINT: finish or abandon the current step, then stop
  std::unique_ptr<Store> store_;
  StepProcess process_;
  std::unique_ptr<Exporter> exporter_;
  int failed_steps_ = 0;
};

}  // namespace

int run_daemon(const DaemonOptions& options) {
  DaemonOptions resolved = options;
  // The binary's own path, not /proc/self/exe: the step's command line in `ps` and the log says what runs.
  std::error_code ec;
  if (auto self = fs::read_symlink(options.schedlab_binary, ec); !ec) resolved.schedlab_binary = self;
  Daemon daemon(resolved, load_campaign(options.config));
  return daemon.run();
}

}  // namespace schedlab
