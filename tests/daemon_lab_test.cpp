// Lab boots through the daemon (`boot = "kexec"`): a step stages its boot, the machine goes down, and
// the daemon the unit starts in the new kernel resumes the step there. This machine cannot be
// rebooted by a test, so the daemon is killed where the reboot would take it (its step begun, the
// boot staged in an earlier boot: another boot id), and started again. What it then does is real:
// `schedlab kernel resume` runs the suite in the running kernel or records boot-failed. A PATH
// interlock makes any attempt to reboot this machine fail loudly instead.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "collector/runner/memory_limit.hpp"
#include "core/atomic_file.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "daemon/campaign/campaign.hpp"
#include "daemon/lab_boot.hpp"
#include "daemon/step_argv.hpp"
#include "daemon/store/sqlite.hpp"
#include "daemon/store/store.hpp"
#include "tests/boot_state.hpp"
#include "tests/cli_util.hpp"
#include "tests/daemon_process.hpp"
#include "tests/test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::campaign_header;
using testing::DaemonProcess;
using testing::short_yield_campaign;
using testing::TempDir;

using testing::kOtherBoot;

void write(const fs::path& p, const std::string& text) {
  write_file_atomic(p, text, /*replace=*/true);
}

TEST(StagedBoot, TellsARebootFromAStagingInThisBootAndACutResume) {
  TempDir dir;
  const std::string now = "11111111-2222-4333-8444-555555555555";
  EXPECT_EQ(staged_boot(dir.path(), now), StagedBoot::kNone);
  write(dir.path() / kBootStateFile, nlohmann::json{{"boot_id_before", now}}.dump());
  EXPECT_EQ(staged_boot(dir.path(), now), StagedBoot::kNotRebooted);
  EXPECT_EQ(staged_boot(dir.path(), kOtherBoot), StagedBoot::kRebooted);
  write(dir.path() / kResumeMarker, std::string(kOtherBoot) + "\n");
  EXPECT_EQ(staged_boot(dir.path(), kOtherBoot), StagedBoot::kResumeCut);
  EXPECT_EQ(staged_boot(dir.path(), now), StagedBoot::kWentDown);
  fs::remove(dir.path() / kResumeMarker);
  write(dir.path() / kBootStateFile, "{\"boot_id_before\": 3}");
  try {
    staged_boot(dir.path(), now);
    ADD_FAILURE() << "a state file without a boot id string was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(kBootStateFile), std::string::npos) << e.what();
  }
}

// The staging half, as far as it runs without rebooting: the daemon's own command line for a lab step,
// with --dry-run added, is one `schedlab kernel boot` takes, and it stages into the attempt directory
// with the commands that boot the box (install when /boot lacks the kernel, kexec -l, then the jump).
TEST(DaemonLabSteps, TheStagingCommandIsOneTheKernelCliTakes) {
  TempDir dir;
  for (const char* backend : {"kexec", "grub"}) {
    SCOPED_TRACE(backend);
    std::ofstream(dir.path() / "c.toml")
        << campaign_header("lab", "once", dir.path()) << "boot = \"" << backend << R"("
configurations = ["debian-6.12"]
[[workload]]
name = "yield"
repetitions = 2
)";
    const auto campaign = load_campaign(dir.path() / "c.toml");
    const auto plan = expand_plan(campaign);
    ASSERT_EQ(plan.size(), 1u);
    const auto attempt = dir.path() / "attempt-1";
    auto argv = step_argv(campaign, plan[0], SCHEDLAB_BINARY, attempt);
    const auto state_at = std::find(argv.begin(), argv.end(), "--state-file");
    ASSERT_NE(state_at, argv.end());
    EXPECT_EQ(*(state_at + 1), (attempt / kBootStateFile).string());
    argv.insert(std::find(argv.begin(), argv.end(), "--"), "--dry-run");
    std::string line;
    for (auto it = argv.begin() + 1; it != argv.end(); ++it) line += " '" + *it + "'";
    const auto o = testing::schedlab(line);
    if (std::string(backend) == "grub" && o.code != 0) {
      // Only where /boot already holds the kernel but grub.cfg has no entry for it: that is the error.
      EXPECT_NE(o.out.find("grub/grub.cfg: "), std::string::npos) << o.out;
      continue;
    }
    ASSERT_EQ(o.code, 0) << line << "\n" << o.out;
    EXPECT_NE(o.out.find("# write " + (attempt / kBootStateFile).string()), std::string::npos) << o.out;
    if (std::string(backend) == "kexec") {
      EXPECT_NE(o.out.find("kexec -l /boot/vmlinuz-"), std::string::npos) << o.out;
      EXPECT_NE(o.out.find("schedlab.recipe=debian-6.12"), std::string::npos) << o.out;
    } else {
      EXPECT_NE(o.out.find("grub-reboot "), std::string::npos) << o.out;
    }
    EXPECT_FALSE(fs::exists(attempt / kBootStateFile)) << "a dry run writes nothing";
  }
}

// Issue 31 item 16 (a): a qemu step's boot gets the campaign's budget for the step (9 repetitions and
// a warm-up of up to 200 s each, the settle wait, the guest's boot), not `kernel boot`'s 900 s default,
// which would kill a step the campaign allows to run for half an hour.
TEST(DaemonLabSteps, AQemuStepsBootTimeoutIsTheCampaignsBudgetForTheStep) {
  TempDir dir;
  std::ofstream(dir.path() / "c.toml") << campaign_header("qemu", "once", dir.path()) << R"(boot = "qemu"
configurations = ["debian-6.12"]
timeout_s = 200
settle_timeout_s = 15
[[workload]]
name = "yield"
repetitions = 9
)";
  const auto campaign = load_campaign(dir.path() / "c.toml");
  const auto plan = expand_plan(campaign);
  ASSERT_EQ(plan.size(), 1u);
  const auto argv = step_argv(campaign, plan[0], SCHEDLAB_BINARY, dir.path() / "attempt-1");
  const auto run_at = std::find(argv.begin(), argv.end(), "--");
  const auto timeout_at = std::find(argv.begin(), run_at, "--timeout");
  ASSERT_NE(timeout_at, run_at) << "no --timeout for the boot";
  EXPECT_EQ(*(timeout_at + 1), std::to_string(10 * 200 + 15 + static_cast<int>(kQemuBootAllowanceS)));
  // And `kernel boot` takes it.
  std::vector<std::string> dry(argv.begin() + 1, argv.end());
  dry.insert(dry.begin() + (run_at - argv.begin()) - 1, "--dry-run");
  std::string line;
  for (const auto& a : dry) line += " '" + a + "'";
  const auto o = testing::schedlab(line);
  EXPECT_EQ(o.code, 0) << line << "\n" << o.out;
}

// Issue 27: a campaign over the developer's own recipes (written by `kernel build --git` outside the
// suite's tree) finds them in its `recipes` directory and hands that directory to each step's boot.
TEST(DaemonLabSteps, ACampaignsOwnRecipesDirectoryReachesEveryBoot) {
  TempDir dir;
  const fs::path mine = dir.path() / "my-recipes";
  fs::create_directories(mine);
  std::ofstream(mine / "farm-image.toml") << "[source]\ntype = \"image\"\nkernel = \"/bin/true\"\nconfig = "
                                             "\"/bin/true\"\n";
  std::ofstream(dir.path() / "c.toml")
      << campaign_header("mine", "once", dir.path()) << "boot = \"qemu\"\n"
      << "recipes = \"" << mine.string() << "\"\n"
      << "configurations = [\"farm-image\"]\n[[workload]]\nname = \"yield\"\n";
  const auto campaign = load_campaign(dir.path() / "c.toml");
  const auto plan = expand_plan(campaign);
  ASSERT_EQ(plan.size(), 1u);
  const auto argv = step_argv(campaign, plan[0], SCHEDLAB_BINARY, dir.path() / "attempt-1");
  const auto at = std::find(argv.begin(), argv.end(), "--recipes");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(*(at + 1), mine.string());
  EXPECT_LT(at, std::find(argv.begin(), argv.end(), "boot")) << "a `kernel` option, before the subcommand";

  // Without the directory the name is unknown; on a lab box an image is refused like a source build.
  std::ofstream(dir.path() / "d.toml")
      << campaign_header("mine", "once", dir.path())
      << "configurations = [\"farm-image\"]\n[[workload]]\nname = \"yield\"\n";
  EXPECT_THROW(load_campaign(dir.path() / "d.toml"), InputError);
  std::ofstream(dir.path() / "e.toml")
      << campaign_header("mine", "once", dir.path()) << "boot = \"kexec\"\n"
      << "recipes = \"" << mine.string() << "\"\n"
      << "configurations = [\"farm-image\"]\n[[workload]]\nname = \"yield\"\n";
  try {
    load_campaign(dir.path() / "e.toml");
    ADD_FAILURE() << "an image recipe accepted for kexec";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'farm-image' is an image recipe"), std::string::npos) << e.what();
  }
}

class DaemonLabBoot : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every command the lab backends reboot or install with fails here, naming itself.
    fs::create_directories(dir_.path() / "interlock");
    for (const char* tool : {"kexec", "systemctl", "reboot", "grub-reboot", "apt-get"}) {
      const auto p = dir_.path() / "interlock" / tool;
      std::ofstream(p) << "#!/bin/sh\necho \"test interlock: refusing to run " << tool
                       << " $* on the test machine\" >&2\nexit 97\n";
      fs::permissions(p, fs::perms::owner_all);
    }
    path_ = (dir_.path() / "interlock").string() + ":" +
            std::string(std::getenv("PATH") ? std::getenv("PATH") : "");
    std::ofstream(config()) << campaign_header("lab", "once", dir_.path()) << "boot = \"kexec\"\n"
                            << short_yield_campaign(R"(["debian-6.12"])", 2);
  }
  fs::path config() const { return dir_.path() / "campaign.toml"; }

  // Starts the campaign and kills the daemon where the machine would go down: its only step begun
  // in the store. Returns that step's attempt directory.
  fs::path begin_step_and_go_down() {
    DaemonProcess d(config(), dir_.path() / "daemon1.log", "step-start", path_);
    EXPECT_TRUE(d.wait_for_log("paused at step-start", 1, 60)) << d.log_text();
    d.kill_hard();
    auto store = open_store("sqlite://" + (dir_.path() / "store.db").string());
    auto run = store->unfinished_run("lab");
    EXPECT_TRUE(run);
    if (!run) return {};
    auto steps = store->steps(run->id);
    EXPECT_EQ(steps.size(), 1u);
    if (steps.size() != 1) return {};
    EXPECT_EQ(steps.begin()->second.status, StepStatus::kRunning);
    return steps.begin()->second.attempt_dir;
  }

  // The state `schedlab kernel boot debian-6.12 --backend kexec` writes, staged in another boot.
  void stage(const fs::path& attempt_dir, const std::string& expected_release) {
    write(attempt_dir / kBootStateFile, testing::staged_boot_state(attempt_dir, expected_release).dump(2));
  }

  // The only running step of the unfinished run (after a daemon was killed in it).
  fs::path running_attempt() {
    auto store = open_store("sqlite://" + (dir_.path() / "store.db").string());
    auto run = store->unfinished_run("lab");
    if (!run) return {};
    for (const auto& [key, step] : store->steps(run->id))
      if (step.status == StepStatus::kRunning) return step.attempt_dir;
    return {};
  }

  int run_count() {
    sql::Database db(dir_.path() / "store.db");
    sql::Statement q(db, "SELECT count(*) FROM campaign_runs");
    q.step();
    return static_cast<int>(q.integer(0));
  }

  std::map<std::string, StepRecord> steps_of_last_run(std::string& status) {
    auto store = open_store("sqlite://" + (dir_.path() / "store.db").string());
    auto run = store->last_run("lab");
    if (!run) return {};
    status = run->status;
    return store->steps(run->id);
  }

  TempDir dir_;
  std::string path_;
};

TEST_F(DaemonLabBoot, AStepStagedBeforeTheRebootResumesInTheNewKernelOnce) {
  const auto attempt = begin_step_and_go_down();
  ASSERT_FALSE(attempt.empty());
  const std::string release = trim(read_text("/proc/sys/kernel/osrelease").value_or(""));
  stage(attempt, release);

  DaemonProcess d(config(), dir_.path() / "daemon2.log", "", path_);
  ASSERT_EQ(d.wait(), 0) << d.log_text();
  const auto log = d.log_text();
  EXPECT_NE(log.find("resumes after its reboot (attempt 1, kernel " + release + ")"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("discarded"), std::string::npos) << "resumed, not rerun: " << log;
  EXPECT_EQ(log.find("interlock"), std::string::npos) << log;

  std::string run_status;
  const auto steps = steps_of_last_run(run_status);
  EXPECT_EQ(run_status, "finished");
  ASSERT_EQ(steps.size(), 1u);
  const auto& step = steps.begin()->second;
  ASSERT_EQ(step.status, StepStatus::kFinished) << step.reason;
  EXPECT_EQ(step.attempts, 1);
  EXPECT_EQ(fs::path(step.attempt_dir), attempt);
  const auto bundle = load_bundle(step.bundle_path);
  EXPECT_EQ(bundle.label, "debian-6.12");
  EXPECT_EQ(bundle.kernel["release"], release);
  ASSERT_EQ(bundle.instances.size(), 1u);
  EXPECT_EQ(bundle.instances[0].repetitions.size(), 2u);
  EXPECT_FALSE(fs::exists(attempt / kBootStateFile)) << "a staged boot is resumed once";
  EXPECT_EQ(trim(read_text(attempt / kResumeMarker).value_or("")), boot_id());
}

TEST_F(DaemonLabBoot, AKernelThatDidNotComeUpFailsItsStepWithTheReason) {
  const auto attempt = begin_step_and_go_down();
  ASSERT_FALSE(attempt.empty());
  stage(attempt, "6.12.100+deb12-amd64-not-this-one");

  DaemonProcess d(config(), dir_.path() / "daemon2.log", "", path_);
  EXPECT_EQ(d.wait(), 1) << "a once campaign with a failed step: " << d.log_text();
  std::string run_status;
  const auto steps = steps_of_last_run(run_status);
  EXPECT_EQ(run_status, "finished");
  ASSERT_EQ(steps.size(), 1u);
  const auto& step = steps.begin()->second;
  EXPECT_EQ(step.status, StepStatus::kFailed);
  EXPECT_NE(step.reason.find("boot-failed"), std::string::npos) << step.reason;
  EXPECT_NE(step.reason.find("expected 6.12.100+deb12-amd64-not-this-one"), std::string::npos) << step.reason;
  EXPECT_TRUE(step.bundle_path.empty());
}

TEST_F(DaemonLabBoot, AMachineThatWentDownDuringTheResumedSuiteFailsTheStep) {
  const auto attempt = begin_step_and_go_down();
  ASSERT_FALSE(attempt.empty());
  stage(attempt, trim(read_text("/proc/sys/kernel/osrelease").value_or("")));
  write(attempt / kResumeMarker, std::string(kOtherBoot) + "\n");  // resumed in a boot that ended

  DaemonProcess d(config(), dir_.path() / "daemon2.log", "", path_);
  EXPECT_EQ(d.wait(), 1) << d.log_text();
  std::string run_status;
  const auto steps = steps_of_last_run(run_status);
  ASSERT_EQ(steps.size(), 1u);
  const auto& step = steps.begin()->second;
  EXPECT_EQ(step.status, StepStatus::kFailed);
  EXPECT_NE(step.reason.find("the machine went down while the suite ran in debian-6.12 (resumed in boot " +
                             std::string(kOtherBoot)),
            std::string::npos)
      << step.reason;
}

// #30.8: an attempt directory of an earlier store's run (run ids restart at 1 when the store is
// recreated) is never taken for this run's: here the step stages nothing (the interlock refuses) and
// writes no bundle, and the earlier store's bundle must not be recorded as its result.
TEST_F(DaemonLabBoot, AnEarlierStoresBundleIsNeverRecordedForThisRun) {
  const auto attempt = begin_step_and_go_down();
  ASSERT_FALSE(attempt.empty());
  stage(attempt, trim(read_text("/proc/sys/kernel/osrelease").value_or("")));
  {
    DaemonProcess d(config(), dir_.path() / "daemon2.log", "", path_);
    ASSERT_EQ(d.wait(), 0) << d.log_text();
  }
  std::string run_status;
  const auto earlier = steps_of_last_run(run_status).begin()->second.bundle_path;
  ASSERT_FALSE(earlier.empty());
  for (const char* f : {"store.db", "store.db-wal", "store.db-shm"}) fs::remove(dir_.path() / f);
  DaemonProcess d(config(), dir_.path() / "daemon3.log", "", path_);
  EXPECT_EQ(d.wait(), 1) << "the step stages nothing and fails: " << d.log_text();
  const auto steps = steps_of_last_run(run_status);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps.begin()->second.status, StepStatus::kFailed) << steps.begin()->second.bundle_path;
  EXPECT_EQ(steps.begin()->second.bundle_path, "");
  EXPECT_TRUE(fs::exists(earlier)) << "the earlier store's result is kept";
}

// #30.9: a step failed because the machine went down during its suite had written a bundle: it is set
// aside with the failure, so that a store rebuilt from disk does not count a result the daemon failed.
TEST_F(DaemonLabBoot, AWentDownStepsBundleIsSetAsideWithItsFailure) {
  const auto attempt = begin_step_and_go_down();
  ASSERT_FALSE(attempt.empty());
  stage(attempt, trim(read_text("/proc/sys/kernel/osrelease").value_or("")));
  write(attempt / kResumeMarker, std::string(kOtherBoot) + "\n");
  // A real bundle (a yield run on this kind of machine) where the cut suite would have written one.
  const fs::path fixtures = fs::path(SCHEDLAB_FIXTURES_DIR) / "profile" / "counters-per-task";
  fs::path bundle;
  for (const auto& e : fs::directory_iterator(fixtures))
    if (e.path().extension() == ".json") bundle = e.path();
  ASSERT_FALSE(bundle.empty());
  fs::copy_file(bundle, attempt / bundle.filename());

  DaemonProcess d(config(), dir_.path() / "daemon2.log", "", path_);
  EXPECT_EQ(d.wait(), 1) << d.log_text();
  std::string run_status;
  const auto steps = steps_of_last_run(run_status);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps.begin()->second.status, StepStatus::kFailed);
  const auto o = testing::schedlab("store rebuild " + (dir_.path() / "bundles").string() +
                                   " --store sqlite://" + (dir_.path() / "rebuilt.db").string());
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("indexed 0 bundle(s)"), std::string::npos) << o.out;
}

// #30.12: a boot state file that is not JSON fails its step (naming the file), instead of failing
// every restart of the daemon.
TEST_F(DaemonLabBoot, AMalformedBootStateFailsItsStepNotTheDaemon) {
  const auto attempt = begin_step_and_go_down();
  ASSERT_FALSE(attempt.empty());
  write(attempt / kBootStateFile, "{\"boot_id_before\": ");
  DaemonProcess d(config(), dir_.path() / "daemon2.log", "", path_);
  EXPECT_EQ(d.wait(), 1) << d.log_text();
  std::string run_status;
  const auto steps = steps_of_last_run(run_status);
  EXPECT_EQ(run_status, "finished");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps.begin()->second.status, StepStatus::kFailed);
  EXPECT_NE(steps.begin()->second.reason.find(kBootStateFile), std::string::npos)
      << steps.begin()->second.reason;
}

// #30.2: the exit status is the run's, whichever process ran its failed step: t1 fails in the first
// daemon, t2 is resumed after its reboot by a third; and a restart after the run finished starts no run.
TEST_F(DaemonLabBoot, TheExitStatusDescribesTheRunAndAFinishedRunIsFinal) {
  std::ofstream(config()) << campaign_header("lab", "once", dir_.path()) << "boot = \"kexec\"\ntrials = 2\n"
                          << short_yield_campaign(R"(["debian-6.12"])", 2);
  {  // t1: staging refused by the interlock, the step fails; killed before t2.
    DaemonProcess d(config(), dir_.path() / "daemon1.log", "between-steps", path_);
    ASSERT_TRUE(d.wait_for_log("paused at between-steps", 1, 60)) << d.log_text();
    d.kill_hard();
  }
  {  // t2 begun, and the machine goes down
    DaemonProcess d(config(), dir_.path() / "daemon2.log", "step-start", path_);
    ASSERT_TRUE(d.wait_for_log("paused at step-start", 1, 60)) << d.log_text();
    d.kill_hard();
  }
  const auto attempt = running_attempt();
  ASSERT_FALSE(attempt.empty());
  stage(attempt, trim(read_text("/proc/sys/kernel/osrelease").value_or("")));
  {
    DaemonProcess d(config(), dir_.path() / "daemon3.log", "", path_);
    EXPECT_EQ(d.wait(), 1) << "t1 failed in another process: " << d.log_text();
    EXPECT_NE(d.log_text().find("finished: 2 step(s), 1 failed"), std::string::npos) << d.log_text();
  }
  DaemonProcess d(config(), dir_.path() / "daemon4.log", "", path_);
  EXPECT_EQ(d.wait(), 1) << d.log_text();
  EXPECT_NE(d.log_text().find("a once campaign runs once"), std::string::npos) << d.log_text();
  EXPECT_EQ(run_count(), 1);
}

// #30.12: in a scheduled campaign each run's log counts its own failed steps, not the process's.
TEST_F(DaemonLabBoot, EachRunsLogCountsItsOwnFailedSteps) {
  std::ofstream(config()) << campaign_header("lab", "*:*:0/2", dir_.path()) << "boot = \"kexec\"\n"
                          << short_yield_campaign(R"(["debian-6.12"])", 2);
  DaemonProcess d(config(), dir_.path() / "daemon.log", "", path_);
  ASSERT_TRUE(d.wait_for_log("run 2 finished:", 1, 30)) << d.log_text();
  d.terminate();
  EXPECT_EQ(d.wait(), 0) << d.log_text();
  EXPECT_NE(d.log_text().find("run 1 finished: 1 step(s), 1 failed"), std::string::npos) << d.log_text();
  EXPECT_NE(d.log_text().find("run 2 finished: 1 step(s), 1 failed"), std::string::npos) << d.log_text();
}

// #30.12: a staged boot whose reboot never came is unstaged when the step fails (`kexec -u`), so that
// a later reboot for any other reason does not boot the kernel under test. Stand-ins for the lab
// tools record what they were asked and succeed (the jump "happens" and nothing goes down).
TEST_F(DaemonLabBoot, AStagedBootThatNeverCameIsUnstaged) {
  const auto stubs = dir_.path() / "stubs";
  const auto calls = dir_.path() / "calls.log";
  fs::create_directories(stubs);
  for (const char* tool : {"kexec", "systemctl", "reboot", "grub-reboot", "grub-editenv", "apt-get"}) {
    const auto p = stubs / tool;
    std::ofstream(p) << "#!/bin/sh\necho \"" << tool << " $*\" >> " << calls.string() << "\nexit 0\n";
    fs::permissions(p, fs::perms::owner_all);
  }
  const std::string path = stubs.string() + ":" + path_;
  ::setenv("SCHEDLAB_DAEMON_REBOOT_WAIT_S", "1", 1);
  DaemonProcess d(config(), dir_.path() / "daemon.log", "", path);
  ::unsetenv("SCHEDLAB_DAEMON_REBOOT_WAIT_S");
  ASSERT_TRUE(d.wait_for_log("failed:", 1, 30)) << d.log_text();
  EXPECT_EQ(d.wait(), 1) << d.log_text();
  const auto recorded = read_text(calls).value_or("");
  ASSERT_NE(recorded.find("kexec -l"), std::string::npos) << "not staged: " << recorded << d.log_text();
  EXPECT_NE(recorded.find("kexec -u"), std::string::npos) << recorded;
  EXPECT_GT(recorded.find("kexec -u"), recorded.find("kexec -l")) << recorded;
  std::string run_status;
  const auto steps = steps_of_last_run(run_status);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_NE(steps.begin()->second.reason.find("unstaged with `kexec -u`"), std::string::npos)
      << steps.begin()->second.reason;
}

// RELIABILITY.md, faults: a campaign's memory_limit reaches every repetition of every step as its
// memory cgroup's limit (the runner's own test shows a workload past it dies at it, with its children).
TEST(DaemonMemoryLimit, ACampaignsMemoryLimitIsEveryRepetitionsCgroupLimit) {
  std::string why;
  if (!find_memory_controller(HostPaths::live(), why)) GTEST_SKIP() << why;
  TempDir dir;
  std::ofstream(dir.path() / "c.toml")
      << campaign_header("memory", "once", dir.path()) << "memory_limit = \"256M\"\n"
      << short_yield_campaign("[\"running\"]", 2);
  const auto campaign = load_campaign(dir.path() / "c.toml");
  ASSERT_EQ(campaign.memory_limit_bytes, std::uint64_t{256} << 20);
  DaemonProcess d(dir.path() / "c.toml", dir.path() / "daemon.log");
  ASSERT_EQ(d.wait(), 0) << d.log_text();
  auto store = open_store("sqlite://" + (dir.path() / "store.db").string());
  const auto run = store->last_run("memory");
  ASSERT_TRUE(run);
  const auto steps = store->steps(run->id);
  ASSERT_EQ(steps.size(), 1u);
  const auto bundle = load_bundle(steps.begin()->second.bundle_path);
  ASSERT_EQ(bundle.instances.at(0).repetitions.size(), 2u);
  for (const auto& rep : bundle.instances.at(0).repetitions) {
    EXPECT_TRUE(rep.ok()) << rep.reason;
    ASSERT_TRUE(rep.isolation.contains("memory_limit")) << rep.isolation.dump();
    EXPECT_EQ(rep.isolation.at("memory_limit").at("bytes"), std::uint64_t{256} << 20);
    EXPECT_EQ(rep.isolation.at("memory_limit").value("oom_kills", -1), 0) << rep.isolation.dump();
    // The daemon's default workload user: yield needs no privilege.
    if (::geteuid() == 0) {
      EXPECT_EQ(rep.isolation.value("user", ""), "nobody") << rep.isolation.dump();
    }
  }
}

TEST(DaemonMemoryLimit, ABadMemoryLimitNamesTheFileLineAndKey) {
  TempDir dir;
  std::ofstream(dir.path() / "c.toml")
      << campaign_header("memory", "once", dir.path()) << "memory_limit = \"lots\"\n"
      << short_yield_campaign("[\"running\"]", 2);
  try {
    load_campaign(dir.path() / "c.toml");
    ADD_FAILURE() << "memory_limit = \"lots\" accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir.path() / "c.toml").string() +
                                         ":6: [campaign] memory_limit: 'lots' is not a size (a size such as "
                                         "512M, 2G or a number of bytes)");
  }
}

// The daemon's steps run workloads as nobody unless the campaign says workload_user = "root" (RELIABILITY.md,
// security); a user the machine does not have is refused with the file, line and key.
TEST(DaemonWorkloadUser, StepsRunAsNobodyUnlessTheCampaignSaysRoot) {
  TempDir dir;
  const auto argv_of = [&](const std::string& line) {
    std::ofstream(dir.path() / "c.toml")
        << campaign_header("user", "once", dir.path()) << line << short_yield_campaign("[\"running\"]", 2);
    const auto campaign = load_campaign(dir.path() / "c.toml");
    return step_argv(campaign, expand_plan(campaign).at(0), SCHEDLAB_BINARY, dir.path() / "attempt-1");
  };
  const auto by_default = argv_of("");
  const auto user_at = std::find(by_default.begin(), by_default.end(), "--workload-user");
  ASSERT_NE(user_at, by_default.end());
  EXPECT_EQ(*(user_at + 1), "nobody");
  const auto as_root = argv_of("workload_user = \"root\"\n");
  EXPECT_EQ(std::find(as_root.begin(), as_root.end(), "--workload-user"), as_root.end());
  try {
    argv_of("workload_user = \"no-such-user-schedlab\"\n");
    ADD_FAILURE() << "an unknown workload user was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir.path() / "c.toml").string() +
                  ":6: [campaign] workload_user: no user 'no-such-user-schedlab' on this machine");
  }
}

}  // namespace
}  // namespace schedlab
