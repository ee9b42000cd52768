// The lab's work queue against a real PostgreSQL server (started by the test on a temp dir) and real
// `schedlab daemon --queue` processes with different host names and classes: four boxes drain one queue
// while one is SIGKILLed mid-step, every step done once and every bundle indexed once; a step for a class
// no daemon has stays queued and `schedlab queue` says so; the database restarted mid-campaign loses and
// duplicates nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "boot_state.hpp"
#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "core/host_paths.hpp"
#include "daemon/lab_boot.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/store.hpp"
#include "daemon_process.hpp"
#include "postgres_server.hpp"
#include "prometheus_server.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::DaemonProcess;
using testing::PostgresServer;
using testing::TempDir;

class QueueTest : public ::testing::Test {
 protected:
  // A campaign of `trials` steps on the running kernel: one yield instance of `yields` yields, 1 repetition.
  fs::path campaign(const std::string& name, int trials, int yields) {
    const fs::path file = dir_.path() / (name + ".toml");
    testing::spit(
        file, "[campaign]\nname = \"" + name + "\"\nschedule = \"once\"\nstore = \"" + server_.url() +
                  "\"\noutput = \"" + (dir_.path() / "bundles").string() +
                  "\"\nconfigurations = [\"running\"]\ntrials = " + std::to_string(trials) +
                  "\ncounters = false\nsettle_timeout_s = 0\n[exporter]\nlisten = \"\"\n[[workload]]\nname = "
                  "\"yield\"\nrepetitions = 1\nparams = { yields = " +
                  std::to_string(yields) + " }\n");
    return file;
  }

  testing::Outcome schedlab(const std::string& args) {
    return testing::sh(std::string(SCHEDLAB_BINARY) + " " + args);
  }

  std::unique_ptr<DaemonProcess> box(const std::string& host, const std::string& label, double lease_s = 3,
                                     const std::string& listen = "") {
    return std::make_unique<DaemonProcess>(
        std::vector<std::string>{"--queue", server_.url(), "--host", host, "--host-label", label, "--output",
                                 (dir_.path() / "bundles").string(), "--lease", std::to_string(lease_s),
                                 "--poll", "0.2", "--drain", "--listen", listen},
        dir_.path() / (host + ".log"));
  }

  // The port a daemon started with --listen 127.0.0.1:0 serves /metrics on, from its log; 0 until logged.
  static int metrics_port(DaemonProcess& daemon) {
    const std::string text = daemon.log_text();
    const auto at = text.find("(port ");
    return at == std::string::npos ? 0 : std::stoi(text.substr(at + 6));
  }

  // SUBMISSION:STEP_KEY -> the column's value, of every queued step.
  std::map<std::string, std::string> step_rows(const std::string& column) {
    pg::Connection db(server_.url());
    auto r = db.query("SELECT submission_id || ':' || step_key, " + column +
                      "::text FROM queue_steps ORDER BY submission_id, step_index");
    std::map<std::string, std::string> out;
    for (int i = 0; i < r.rows(); ++i) out[r.text(i, 0)] = r.text(i, 1);
    return out;
  }

  TempDir dir_;
  PostgresServer server_;
};

TEST_F(QueueTest, FourBoxesDrainOneQueueWhileOneIsKilledMidStepEveryStepOnce) {
  constexpr int kSteps = 16;
  const auto submitted = schedlab("submit " + campaign("nightly", kSteps, 300000).string() + " --queue '" +
                                  server_.url() + "' --hosts 'lab-*'");
  ASSERT_EQ(submitted.code, 0) << submitted.out;
  EXPECT_NE(submitted.out.find("16 step(s) of campaign 'nightly' queued for hosts 'lab-*'"),
            std::string::npos)
      << submitted.out;
  const auto orphan = schedlab("submit " + campaign("big-numa", 1, 20000).string() + " --queue '" +
                               server_.url() + "' --hosts 'numa-*'");
  ASSERT_EQ(orphan.code, 0) << orphan.out;

  auto victim = box("box-1", "lab-a");
  ASSERT_TRUE(victim->wait_for_log("step t1/running/yield", 1, 60) || victim->wait_for_log("step t", 1, 1))
      << victim->log_text();
  victim->kill_hard();  // mid-step: its step is claimed, its lease will run out
  std::vector<std::unique_ptr<DaemonProcess>> boxes;
  boxes.push_back(box("box-2", "lab-a"));
  boxes.push_back(box("box-3", "lab-b"));
  boxes.push_back(box("box-4", "lab-b"));
  for (auto& b : boxes) {
    EXPECT_EQ(b->wait(), 0) << b->log_text();
    EXPECT_NE(b->log_text().find("drained"), std::string::npos) << b->log_text();
  }
  // The killed box comes back: it kills what its step left running and finds nothing of its own to resume.
  auto back = box("box-1", "lab-a");
  EXPECT_EQ(back->wait(), 0) << back->log_text();

  const auto status = step_rows("status");
  const auto reclaimed = step_rows("reclaimed_from");
  int finished = 0, taken_over = 0;
  for (const auto& [key, s] : status) {
    if (key == "2:t1/running/yield") continue;  // the numa submission's step, never claimed
    finished += s == "finished";
    taken_over += reclaimed.at(key) == "box-1";
  }
  EXPECT_EQ(finished, kSteps);
  EXPECT_EQ(taken_over, 1) << "box-1's step was taken over once its lease ran out";
  pg::Connection db(server_.url());
  EXPECT_EQ(db.query("SELECT count(*) FROM queue_steps WHERE status = 'queued'").integer(0, 0), 1);
  // Every bundle indexed once: one per finished step, each repetition once, bundle paths the steps name.
  auto store = open_store_to_read(server_.url());
  EXPECT_EQ(store->bundle_count(), kSteps);
  EXPECT_EQ(store->repetition_count(), kSteps);
  EXPECT_EQ(
      db.query("SELECT count(DISTINCT bundle_path) FROM queue_steps WHERE status = 'finished'").integer(0, 0),
      kSteps);
  EXPECT_EQ(
      db.query("SELECT count(*) FROM queue_steps q JOIN bundles b ON b.path = q.bundle_path").integer(0, 0),
      kSteps);
  EXPECT_EQ(
      db.query("SELECT count(DISTINCT claimed_by) FROM queue_steps WHERE status = 'finished'").integer(0, 0),
      3)
      << "the three live boxes each ran some";
  // Each bundle carries the label of the box that ran it (host.label), which the store's --host selects.
  EXPECT_EQ(db.query("SELECT count(*) FROM queue_steps q JOIN bundles b ON b.path = q.bundle_path "
                     "WHERE b.host_label = CASE WHEN q.claimed_by IN ('box-1', 'box-2') THEN 'lab-a' "
                     "ELSE 'lab-b' END")
                .integer(0, 0),
            kSteps);
  const auto on_lab_b =
      db.query(
            "SELECT count(*) FROM queue_steps WHERE status = 'finished' AND claimed_by IN ('box-3', 'box-4')")
          .integer(0, 0);
  const auto history = schedlab("history --store '" + server_.url() +
                                "' --workload yield --metric ns_per_yield --host 'lab-?b'");
  EXPECT_EQ(history.code, 1) << "'lab-?b' matches no label: " << history.out;
  const auto lab_b = schedlab("history --store '" + server_.url() +
                              "' --workload yield --metric ns_per_yield --host 'lab-b'");
  ASSERT_EQ(lab_b.code, 0) << lab_b.out;
  EXPECT_EQ(std::count(lab_b.out.begin(), lab_b.out.end(), '\n'), on_lab_b + 1) << lab_b.out;  // + header
  const auto either = schedlab("history --store '" + server_.url() +
                               "' --workload yield --metric ns_per_yield --host 'lab-?'");
  EXPECT_EQ(std::count(either.out.begin(), either.out.end(), '\n'), kSteps + 1) << either.out;

  const auto shown = schedlab("queue --queue '" + server_.url() + "'");
  ASSERT_EQ(shown.code, 0) << shown.out;
  EXPECT_NE(shown.out.find("1 step(s) wait for hosts 'numa-*': no daemon of that class or name"),
            std::string::npos)
      << shown.out;
}

// A box that stops answering without dying (SIGSTOP: a hung box, a partition longer than its lease): its
// step is taken over once the lease runs out, and when it comes back its late end is refused and its
// attempt set aside, so the step is recorded once, by the box that now holds it.
TEST_F(QueueTest, ABoxStoppedPastItsLeaseFindsItsStepTakenOverAndSetsItsAttemptAside) {
  ASSERT_EQ(
      schedlab("submit " + campaign("nightly", 1, 3000000).string() + " --queue '" + server_.url() + "'")
          .code,
      0);
  auto stalled = box("box-a", "lab-a", 3);
  ASSERT_TRUE(stalled->wait_for_log("step t1/running/yield", 1, 60)) << stalled->log_text();
  ASSERT_EQ(::kill(stalled->pid(), SIGSTOP), 0);
  // The step's own process goes on and ends while its daemon is stopped: only the daemon's end is late.
  auto other = box("box-b", "lab-a", 3);
  EXPECT_EQ(other->wait(), 0) << other->log_text();
  EXPECT_NE(other->log_text().find("taken over from box-a whose lease ran out"), std::string::npos)
      << other->log_text();
  ASSERT_EQ(::kill(stalled->pid(), SIGCONT), 0);
  EXPECT_EQ(stalled->wait(), 0) << stalled->log_text();
  EXPECT_NE(stalled->log_text().find("this attempt is set aside as"), std::string::npos)
      << stalled->log_text();

  EXPECT_EQ(step_rows("status").at("1:t1/running/yield"), "finished");
  EXPECT_EQ(step_rows("claimed_by").at("1:t1/running/yield"), "box-b");
  auto store = open_store_to_read(server_.url());
  EXPECT_EQ(store->bundle_count(), 1);
  EXPECT_EQ(store->repetition_count(), 1);
  const auto indexed = pg::Connection(server_.url()).query("SELECT path FROM bundles").text(0, 0);
  EXPECT_NE(indexed.find("-box-b/"), std::string::npos) << indexed;
  int discarded = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path() / "bundles"))
    if (e.is_directory() && e.path().extension() == ".discarded") {
      ++discarded;
      EXPECT_NE(e.path().filename().string().find("-box-a"), std::string::npos) << e.path();
    }
  EXPECT_EQ(discarded, 1);
}

TEST_F(QueueTest, TheDatabaseRestartedMidCampaignLosesAndDuplicatesNothing) {
  constexpr int kSteps = 12;
  ASSERT_EQ(
      schedlab("submit " + campaign("nightly", kSteps, 300000).string() + " --queue '" + server_.url() + "'")
          .code,
      0);
  auto a = box("box-a", "lab-a", 30, "127.0.0.1:0");
  auto b = box("box-b", "lab-b", 30);
  // After a few steps are recorded, the server goes down for a few seconds while steps run; box-a says so
  // on /metrics meanwhile.
  ASSERT_TRUE(a->wait_for_log(" done in ", 2, 60)) << a->log_text();
  const int port = metrics_port(*a);
  ASSERT_GT(port, 0) << a->log_text();
  EXPECT_NE(testing::http_get(port, "/metrics").body.find("schedlab_daemon_store_unavailable 0"),
            std::string::npos);
  server_.stop();
  EXPECT_TRUE(testing::wait_until(
      [&] {
        return testing::http_get(port, "/metrics").body.find("schedlab_daemon_store_unavailable 1") !=
               std::string::npos;
      },
      std::chrono::seconds(10)))
      << a->log_text();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  server_.start();
  EXPECT_EQ(a->wait(), 0) << a->log_text();
  EXPECT_EQ(b->wait(), 0) << b->log_text();
  const std::string logs = a->log_text() + b->log_text();
  EXPECT_NE(logs.find("database unavailable while"), std::string::npos) << logs;
  EXPECT_NE(logs.find("database is back after"), std::string::npos) << logs;

  const auto status = step_rows("status");
  int finished = 0;
  for (const auto& [key, s] : status) finished += s == "finished";
  EXPECT_EQ(finished, kSteps);
  auto store = open_store_to_read(server_.url());
  EXPECT_EQ(store->bundle_count(), kSteps);
  EXPECT_EQ(store->repetition_count(), kSteps);
  // Nothing measured was lost: every bundle on disk that a step finished with is the one indexed.
  std::set<std::string> on_disk;
  for (const auto& f : bundle_files(dir_.path() / "bundles"))
    on_disk.insert(fs::weakly_canonical(f).string());
  for (const auto& p : store->history("yield", "ns_per_yield", "", "", ""))
    EXPECT_TRUE(on_disk.count(p.bundle_path)) << p.bundle_path;
}

// The campaign daemon (--config) on a PostgreSQL store: its plan recorded once, through a restart of the
// database in the middle of it.
TEST_F(QueueTest, ACampaignDaemonOnAPostgresStoreRecordsItsPlanOnceThroughADatabaseRestart) {
  constexpr int kSteps = 10;
  DaemonProcess daemon(campaign("nightly", kSteps, 300000), dir_.path() / "campaign.log");
  ASSERT_TRUE(daemon.wait_for_log(" done in ", 2, 60)) << daemon.log_text();
  server_.stop();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  server_.start();
  EXPECT_EQ(daemon.wait(), 0) << daemon.log_text();
  EXPECT_NE(daemon.log_text().find("database unavailable while"), std::string::npos) << daemon.log_text();
  EXPECT_NE(daemon.log_text().find("database is back after"), std::string::npos) << daemon.log_text();
  auto store = open_store_to_read(server_.url());
  EXPECT_EQ(store->bundle_count(), kSteps);
  EXPECT_EQ(store->repetition_count(), kSteps);
  const auto run = store->last_run("nightly");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, "finished");
  int finished = 0;
  for (const auto& [key, step] : store->steps(run->id)) finished += step.status == StepStatus::kFinished;
  EXPECT_EQ(finished, kSteps);
}

// A lab box's step that boots the box itself (boot = "kexec"): the box holds its claim across the reboot and
// its daemon, started again in the new kernel, resumes the step there; another box waiting meanwhile never
// takes it. This machine cannot be rebooted by a test: as in daemon_lab_test, the daemon is killed where
// the reboot would take it (its step claimed, the boot staged in another boot id) and started again, and a
// PATH interlock makes any attempt to reboot fail loudly.
TEST_F(QueueTest, ALabBoxHoldsItsClaimAcrossTheRebootItsStepStagedAndResumesIt) {
  fs::create_directories(dir_.path() / "interlock");
  for (const char* tool : {"kexec", "systemctl", "reboot", "grub-reboot", "apt-get"}) {
    const auto p = dir_.path() / "interlock" / tool;
    testing::spit(p, std::string("#!/bin/sh\necho \"test interlock: refusing to run ") + tool +
                         " $* on the test machine\" >&2\nexit 97\n");
    fs::permissions(p, fs::perms::owner_all);
  }
  const std::string path = (dir_.path() / "interlock").string() + ":" + std::getenv("PATH");
  const fs::path file = dir_.path() / "lab.toml";
  testing::spit(file, "[campaign]\nname = \"lab\"\nschedule = \"once\"\nstore = \"" + server_.url() +
                          "\"\noutput = \"" + (dir_.path() / "bundles").string() +
                          "\"\nboot = \"kexec\"\nconfigurations = [\"debian-6.12\"]\ncounters = false\n"
                          "settle_timeout_s = 0\n[exporter]\nlisten = \"\"\n[[workload]]\nname = \"yield\"\n"
                          "repetitions = 2\nparams = { yields = 20000 }\n");
  const auto submitted = schedlab("submit " + file.string() + " --queue '" + server_.url() + "'");
  ASSERT_EQ(submitted.code, 0) << submitted.out;
  const auto args = [&](const std::string& host) {
    return std::vector<std::string>{
        "--queue", server_.url(), "--host", host,  "--output", (dir_.path() / "bundles").string(),
        "--lease", "30",          "--poll", "0.2", "--drain",  "--listen",
        ""};
  };
  {
    DaemonProcess going_down(args("lab-box"), dir_.path() / "lab-box-1.log", "step-start", path);
    ASSERT_TRUE(going_down.wait_for_log("paused at step-start", 1, 60)) << going_down.log_text();
    going_down.kill_hard();
  }
  const fs::path attempt = step_rows("attempt_dir").at("1:t1/debian-6.12/yield");
  ASSERT_FALSE(attempt.empty());
  const std::string release = trim(read_text("/proc/sys/kernel/osrelease").value_or(""));
  testing::spit(attempt / kBootStateFile, testing::staged_boot_state(attempt, release).dump(2));

  DaemonProcess waiting(args("other-box"), dir_.path() / "other-box.log", "", path);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // it asks for work while lab-box is "rebooting"
  DaemonProcess back(args("lab-box"), dir_.path() / "lab-box-2.log", "", path);
  ASSERT_EQ(back.wait(), 0) << back.log_text();
  ASSERT_EQ(waiting.wait(), 0) << waiting.log_text();
  EXPECT_NE(back.log_text().find("resumes after its reboot (attempt 1, kernel " + release + ")"),
            std::string::npos)
      << back.log_text();
  EXPECT_EQ(waiting.log_text().find("step t1"), std::string::npos)
      << "the step is lab-box's: " << waiting.log_text();
  EXPECT_EQ((back.log_text() + waiting.log_text()).find("interlock"), std::string::npos);

  EXPECT_EQ(step_rows("status").at("1:t1/debian-6.12/yield"), "finished")
      << step_rows("reason").at("1:t1/debian-6.12/yield");
  EXPECT_EQ(step_rows("attempts").at("1:t1/debian-6.12/yield"), "1");
  EXPECT_EQ(step_rows("claimed_by").at("1:t1/debian-6.12/yield"), "lab-box");
  auto store = open_store_to_read(server_.url());
  EXPECT_EQ(store->bundle_count(), 1);
  const auto bundle = load_bundle(step_rows("bundle_path").at("1:t1/debian-6.12/yield"));
  EXPECT_EQ(bundle.label, "debian-6.12");
  EXPECT_EQ(bundle.kernel["release"], release);
  EXPECT_FALSE(fs::exists(attempt / kBootStateFile)) << "a staged boot is resumed once";
}

TEST_F(QueueTest, SubmitRefusesWhatAQueueCannotRunAndBadPatterns) {
  const auto file = campaign("nightly", 2, 20000);
  auto bad = schedlab("submit " + file.string() + " --queue '" + server_.url() + "' --hosts 'lab-[ab]'");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("[ ] classes are not supported"), std::string::npos) << bad.out;
  bad = schedlab("submit " + file.string() + " --queue sqlite:///tmp/x.db");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("expected a PostgreSQL URL"), std::string::npos) << bad.out;
  const auto shown = schedlab("queue --queue '" + server_.url() + "'");
  EXPECT_EQ(shown.code, 0) << shown.out;
  EXPECT_NE(shown.out.find("is empty"), std::string::npos) << shown.out;
}

}  // namespace
}  // namespace schedlab
