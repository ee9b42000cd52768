// Lab boots through the daemon (`boot = "kexec"`): a step stages its boot, the machine goes down, and
// the daemon the unit starts in the new kernel resumes the step there. This machine cannot be
// rebooted by a test, so the daemon is killed where the reboot would take it (its step begun, the
// boot staged in an earlier boot: another boot id), and started again. What it then does is real:
// `schedlab kernel resume` runs the suite in the running kernel or records boot-failed. A PATH
// interlock makes any attempt to reboot this machine fail loudly instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/bundle_io.hpp"
#include "core/host_paths.hpp"
#include "daemon/campaign/campaign.hpp"
#include "daemon/lab_boot.hpp"
#include "daemon/step_argv.hpp"
#include "daemon/store/store.hpp"
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

constexpr const char* kOtherBoot = "00000000-0000-4000-8000-000000000001";  // not this boot's id

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
    const nlohmann::json state = {
        {"schema", "schedlab.boot-state/1"},
        {"backend", "kexec"},
        {"recipe", {{"name", "debian-6.12"}, {"label", "6.12-eevdf"}}},
        {"kernel", {{"release", expected_release}}},
        {"run_args",
         {"run", "--workload", "yield", "--param", "yield.yields=20000", "--repetitions", "2",
          "--settle-timeout", "0", "--no-counters", "--label", "debian-6.12"}},
        {"out_dir", attempt_dir.string()},
        {"schedlab", SCHEDLAB_BINARY},
        {"staged_at", "2026-12-01T02:00:00Z"},
        {"boot_id_before", kOtherBoot}};
    write(attempt_dir / kBootStateFile, state.dump(2));
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
  EXPECT_NE(step.reason.find("the machine went down while the suite ran in debian-6.12"), std::string::npos)
      << step.reason;
}

}  // namespace
}  // namespace schedlab
