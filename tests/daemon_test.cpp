// The daemon through the binary, on the running kernel: a "once" campaign killed with SIGKILL at
// several points (between steps, during a repetition, inside a step's store transaction) and stopped
// with SIGTERM, then restarted until it finishes: exactly the planned steps and repetitions, none
// twice, every bundle loading, and nothing a killed daemon left running still alive at the rerun.
#include <gtest/gtest.h>
#include <signal.h>

#include <array>
#include <chrono>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "collector/runner/isolation.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "core/sanitizers.hpp"
#include "daemon/campaign/calendar.hpp"
#include "daemon/schedule.hpp"
#include "daemon/store/sqlite.hpp"
#include "daemon/store/store.hpp"
#include "tests/cli_util.hpp"
#include "tests/daemon_process.hpp"
#include "tests/prometheus_server.hpp"
#include "tests/test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::campaign_header;
using testing::DaemonProcess;
using testing::short_yield_campaign;

constexpr int kSteps = 6;  // 2 trials x (yield-a + yield-b's two sweep values)
constexpr int kRepetitions = 3;

// The processes of the running step the marker names, once it has two or more (the runner and its
// workload): those in its cgroup and the cgroups below, or in its session (the step's process and its
// descendants, a repetition's workload in a process group of its own). Empty on timeout.
std::vector<pid_t> step_processes(const fs::path& marker, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    auto words = split_ws(read_text(marker).value_or(""));
    std::vector<pid_t> pids;
    if (words.size() == 2 && words[0] == "cgroup") {
      std::error_code ec;
      for (auto it = fs::recursive_directory_iterator(words[1], ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->path().filename() == "cgroup.procs")
          for (const auto& p : split_ws(read_text(it->path()).value_or(""))) pids.push_back(std::stoi(p));
      for (const auto& p : split_ws(read_text(fs::path(words[1]) / "cgroup.procs").value_or("")))
        pids.push_back(std::stoi(p));
    } else if (words.size() == 4 && words[0] == "session") {
      const auto leader = static_cast<pid_t>(std::stoi(words[1]));
      pids = descendants_of(leader);
      pids.push_back(leader);
    }
    if (pids.size() >= 2) return pids;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {};
}

class DaemonFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("schedlab-daemon-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "campaign.toml")
        << campaign_header("fault", "once", dir_) << R"(configurations = ["running"]
trials = 2
order = "interleaved"
seed = 7
counters = false
timeout_s = 60
settle_timeout_s = 0

[exporter]
listen = ""

[[workload]]
name = "yield"
id = "yield-a"
repetitions = 3
params = { yields = 600000 }

[[workload]]
name = "yield"
id = "yield-b"
repetitions = 3
params = { yields = [20000, 40000] }
)";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  fs::path marker() const { return dir_ / "bundles" / ".daemon" / "fault.step"; }
  std::vector<pid_t> step_processes(double timeout_s) const {
    return schedlab::step_processes(marker(), timeout_s);
  }

  static bool alive(pid_t pid) {
    auto stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return false;
    auto close = stat->rfind(')');
    return close != std::string::npos && stat->substr(close + 2, 1) != "Z";
  }

  // The store and the bundle directory hold exactly the planned repetitions, each once; `reruns`
  // steps at least needed a second attempt, whose discarded attempts are kept; a rebuild agrees.
  void expect_exactly_the_plan(int reruns) const {
    auto store = open_store("sqlite://" + (dir_ / "store.db").string());
    auto run = store->last_run("fault");
    ASSERT_TRUE(run);
    EXPECT_EQ(run->status, "finished");
    EXPECT_EQ(run->steps_total, kSteps);
    auto steps = store->steps(run->id);
    ASSERT_EQ(steps.size(), static_cast<std::size_t>(kSteps));
    std::set<std::string> bundles;
    int rerun = 0;
    for (const auto& [key, s] : steps) {
      EXPECT_EQ(s.status, StepStatus::kFinished) << key << ": " << s.reason;
      rerun += s.attempts - 1;
      EXPECT_TRUE(bundles.insert(s.bundle_path).second) << "bundle recorded twice: " << s.bundle_path;
      auto b = load_bundle(s.bundle_path);
      ASSERT_EQ(b.instances.size(), 1u);
      EXPECT_EQ(b.instances[0].repetitions.size(), static_cast<std::size_t>(kRepetitions)) << key;
    }
    EXPECT_GE(rerun, reruns) << "attempts beyond the first";
    EXPECT_EQ(store->bundle_count(), kSteps);
    EXPECT_EQ(store->repetition_count(), kSteps * kRepetitions);

    // The discarded attempts are kept (nothing lost) and the index rebuilt from disk agrees.
    int discarded = 0;
    for (auto& e : fs::recursive_directory_iterator(dir_ / "bundles"))
      discarded += e.is_directory() && e.path().extension() == ".discarded";
    EXPECT_GE(discarded, reruns);
    std::vector<std::string> skipped;
    EXPECT_EQ(store->rebuild(dir_ / "bundles", skipped), kSteps);
    EXPECT_TRUE(skipped.empty());
    EXPECT_EQ(store->repetition_count(), kSteps * kRepetitions);
  }

  fs::path dir_;
};

TEST_F(DaemonFaultTest, KilledAtEveryPointFinishesWithExactlyThePlannedRepetitions) {
  const auto config = dir_ / "campaign.toml";
  {  // 1. SIGKILL between steps: the first step is committed, nothing else started.
    DaemonProcess d(config, dir_ / "daemon1.log", "between-steps");
    ASSERT_TRUE(d.wait_for_log("paused at between-steps", 1, 120)) << d.log_text();
    d.kill_hard();
  }
  std::vector<pid_t> left;
  {  // 2. SIGKILL during a repetition: its runner and workload are left running.
    DaemonProcess d(config, dir_ / "daemon2.log");
    ASSERT_TRUE(d.wait_for_log("(attempt 1)", 1, 60)) << d.log_text();
    left = step_processes(30);
    ASSERT_FALSE(left.empty()) << d.log_text();
    d.kill_hard();
    for (pid_t pid : left)
      EXPECT_TRUE(alive(pid)) << pid << " ended with the daemon: the test proves nothing";
  }
  {  // 3. SIGKILL inside the next step's store transaction, after the leftovers were killed.
    DaemonProcess d(config, dir_ / "daemon3.log", "store-write");
    ASSERT_TRUE(d.wait_for_log("paused at store-write", 1, 120)) << d.log_text();
    const auto log = d.log_text();
    EXPECT_NE(log.find("a previous daemon's step left running"), std::string::npos) << log;
    EXPECT_NE(log.find("discarded"), std::string::npos) << log;
    for (pid_t pid : left) EXPECT_FALSE(alive(pid)) << pid << " of the killed daemon's step still runs";
    d.kill_hard();
  }
  {  // 4. SIGTERM during a step: the daemon abandons it and exits 0 within 5 s.
    DaemonProcess d(config, dir_ / "daemon4.log");
    ASSERT_TRUE(d.wait_for_log("(attempt", 1, 60)) << d.log_text();
    ASSERT_FALSE(step_processes(30).empty()) << d.log_text();
    const auto start = std::chrono::steady_clock::now();
    d.terminate();
    EXPECT_EQ(d.wait(), 0) << d.log_text();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  }
  {  // 5. Undisturbed to the end.
    DaemonProcess d(config, dir_ / "daemon5.log");
    ASSERT_TRUE(d.wait_for_log("finished:", 1, 300)) << d.log_text();
    EXPECT_EQ(d.wait(), 0) << d.log_text();
  }

  // The killed repetition, the killed store write and the SIGTERM each rerun a step.
  expect_exactly_the_plan(3);
}

// RELIABILITY.md, faults: the daemon SIGKILLed at 20 random moments of the campaign (seeded: a failure
// names its seed and kill times), each time started again, then left to finish: the store and the bundle
// directory hold exactly the planned repetitions, each once, whatever the kills cut.
TEST_F(DaemonFaultTest, KilledAtTwentyRandomMomentsFinishesWithExactlyThePlannedRepetitions) {
  const auto config = dir_ / "campaign.toml";
  const unsigned seed = 23;
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> after_ms(0, 1500);
  std::string kills;
  for (int i = 0; i < 20; ++i) {
    DaemonProcess d(config, dir_ / ("daemon-kill" + std::to_string(i) + ".log"));
    const int ms = after_ms(random);
    kills += std::to_string(ms) + " ";
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    if (d.exited()) break;  // the campaign finished before the kill
    d.kill_hard();
  }
  SCOPED_TRACE("seed " + std::to_string(seed) + ", kills after (ms): " + kills);
  DaemonProcess last(config, dir_ / "daemon-last.log");
  ASSERT_TRUE(last.wait_for_log("finished:", 1, 300) || last.exited()) << last.log_text();
  EXPECT_EQ(last.wait(), 0) << last.log_text();
  expect_exactly_the_plan(1);  // at least one kill cut a step (else the test proved little)
}

// RELIABILITY.md, faults: the store deleted under a running daemon. SQLite would go on writing to the
// unlinked file and every later step would be lost from any index; the daemon stops at its next write
// with the reason (exit 2: the unit does not restart it), and the bundles measured so far, the running
// step's included, are on disk for `store rebuild`.
TEST_F(DaemonFaultTest, AStoreDeletedUnderTheDaemonStopsItAndTheBundlesAreRebuilt) {
  DaemonProcess d(dir_ / "campaign.toml", dir_ / "daemon.log");
  ASSERT_TRUE(d.wait_for_log("(attempt 1)", 2, 120)) << d.log_text();  // the first step is committed
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(dir_ / ("store.db" + std::string(suffix)));
  EXPECT_EQ(d.wait(), 2) << d.log_text();
  const auto log = d.log_text();
  EXPECT_NE(log.find("the store was deleted while in use"), std::string::npos) << log;

  int bundles = 0;
  for (auto& e : fs::recursive_directory_iterator(dir_ / "bundles")) {
    if (!e.is_regular_file() || e.path().extension() != ".json") continue;
    try {
      load_bundle(e.path());
      ++bundles;
    } catch (const InputError&) {  // an experiment record, not a bundle
    }
  }
  EXPECT_GE(bundles, 2) << "the committed step's bundle and the running step's";
  const auto rebuilt = testing::schedlab("store rebuild " + (dir_ / "bundles").string() +
                                         " --store sqlite://" + (dir_ / "rebuilt.db").string());
  EXPECT_EQ(rebuilt.code, 0) << rebuilt.out;
  EXPECT_NE(rebuilt.out.find("indexed " + std::to_string(bundles) + " bundle(s)"), std::string::npos)
      << rebuilt.out;
}

// A store file that is not a database (a disk fault, a file copied over it): the daemon refuses to start
// naming the file and what to do, exit 2 (no restart loop under the unit), and writes nothing over it.
TEST_F(DaemonFaultTest, ACorruptedStoreIsRefusedNamingTheFileAndTheWayOut) {
  const std::string garbage(8192, 'x');
  testing::spit(dir_ / "store.db", garbage);
  DaemonProcess d(dir_ / "campaign.toml", dir_ / "daemon.log");
  EXPECT_EQ(d.wait(), 2) << d.log_text();
  const auto log = d.log_text();
  EXPECT_NE(log.find((dir_ / "store.db").string()), std::string::npos) << log;
  EXPECT_NE(log.find("file is not a database"), std::string::npos) << log;
  EXPECT_NE(log.find("store rebuild"), std::string::npos) << log;
  EXPECT_EQ(testing::slurp(dir_ / "store.db"), garbage);
}

// A scheduled campaign (an elapse every 5 s): the first run waits for its elapse; a daemon killed while
// idle and started again after missing at least two elapses makes them up with one run at once (systemd's
// Persistent=true), for the latest missed elapse, and then waits for the next one.
TEST(DaemonSchedule, RunsAtItsElapseAndMakesUpMissedElapsesOnceAfterAKill) {
#if defined(SCHEDLAB_ASAN)
  // 17 s of waiting for elapses; the schedule's arithmetic runs under ASan in calendar_test, and the
  // daemon's step path in DaemonFaultTest.
  GTEST_SKIP() << "the Release build runs it";
#endif
  const fs::path dir = fs::temp_directory_path() / ("schedlab-schedule-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto config = dir / "campaign.toml";
  std::ofstream(config) << campaign_header("every5s", "*:*:0/5", dir)
                        << short_yield_campaign(R"(["running"])", 1);
  using Clock = std::chrono::system_clock;
  const auto seconds_since = [](const std::string& stamp, Clock::time_point t) {
    return std::chrono::duration<double>(parse_utc_timestamp(stamp) - t).count();
  };
  const auto first_start = Clock::now();
  {
    DaemonProcess d(config, dir / "daemon1.log");
    ASSERT_TRUE(d.wait_for_log("next run at", 2, 30)) << d.log_text();  // before run 1, and after it
    d.kill_hard();
  }
  const auto killed_at = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(11));  // two elapses or more go by
  const auto restarted_at = Clock::now();
  {
    DaemonProcess d(config, dir / "daemon2.log");
    ASSERT_TRUE(d.wait_for_log("next run at", 1, 30)) << d.log_text();
    d.terminate();
    EXPECT_EQ(d.wait(), 0) << d.log_text();
  }

  sql::Database db(dir / "store.db");
  sql::Statement runs(db, "SELECT id, scheduled_for, started_at, status FROM campaign_runs ORDER BY id");
  std::vector<std::array<std::string, 3>> rows;
  while (runs.step()) rows.push_back({runs.text(1), runs.text(2), runs.text(3)});
  ASSERT_EQ(rows.size(), 2u) << "one run at the first elapse, one for the missed ones";
  for (const auto& [scheduled, started, status] : rows) EXPECT_EQ(status, "finished") << scheduled;
  // Run 1 served the first elapse after the daemon first saw the campaign, and did not start early.
  EXPECT_GT(seconds_since(rows[0][0], first_start), 0.0);
  EXPECT_LE(seconds_since(rows[0][0], first_start), 5.0);
  EXPECT_GE(seconds_since(rows[0][1], Clock::time_point{}), seconds_since(rows[0][0], Clock::time_point{}));
  // Run 2 served the latest missed elapse (not the first one missed), and started at once.
  EXPECT_GT(seconds_since(rows[1][0], killed_at), 5.0) << rows[1][0];
  EXPECT_LE(seconds_since(rows[1][0], restarted_at), 0.0) << rows[1][0];
  EXPECT_LT(seconds_since(rows[1][1], restarted_at), 3.0) << rows[1][1];
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A real Prometheus server scrapes the daemon every second during a short campaign; the workload's
// series arrive through its HTTP API with the campaign's labels.
TEST(DaemonPrometheus, ARealServerScrapesTheWorkloadSeriesDuringACampaign) {
  if (!fs::exists(testing::kPrometheusBinary)) GTEST_SKIP() << "no " << testing::kPrometheusBinary;
  const fs::path dir = fs::temp_directory_path() / ("schedlab-daemon-prom-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int port = testing::free_port();
  std::ofstream(dir / "campaign.toml")
      << campaign_header("scraped", "once", dir)
      << "counters = false\nsettle_timeout_s = 0\n[exporter]\nlisten = \"127.0.0.1:" << port
      << "\"\nhost = \"ci-host\"\n[[workload]]\nname = \"yield\"\nrepetitions = "
         "3\nparams = { yields = [20000, 40000] }\n";
  testing::PrometheusServer prom({"127.0.0.1:" + std::to_string(port)});
  ASSERT_TRUE(prom.wait_ready()) << prom.log();
  // Paused after its first step, the daemon keeps serving: Prometheus gets to scrape the result.
  DaemonProcess d(dir / "campaign.toml", dir / "daemon.log", "between-steps");
  ASSERT_TRUE(d.wait_for_log("paused at between-steps", 1, 120)) << d.log_text();
  const std::string release = trim(read_text("/proc/sys/kernel/osrelease").value_or(""));
  nlohmann::json result;
  const bool arrived = testing::wait_until(
      [&] {
        auto r = prom.query("{workload=\"yield\", host=\"ci-host\"}");
        if (r.status != 200) return false;
        result = nlohmann::json::parse(r.body)["data"]["result"];
        return !result.empty();
      },
      std::chrono::seconds(30));
  ASSERT_TRUE(arrived) << prom.log() << d.log_text();
  for (const auto& series : result) {
    const auto& m = series["metric"];
    EXPECT_EQ(m["configuration"], release) << series.dump();  // "running": the kernel release
    EXPECT_EQ(m["job"], "schedlab") << series.dump();
    EXPECT_TRUE(m["instance_id"].get<std::string>().rfind("yield", 0) == 0) << series.dump();
    // Failed and timed-out repetitions are exported as a count, 0 here; every other value is positive.
    if (m.contains("status") && m["status"] != "ok")
      EXPECT_EQ(series["value"][1], "0") << series.dump();
    else
      EXPECT_GT(std::stod(series["value"][1].get<std::string>()), 0) << series.dump();
  }
  auto health = prom.query("schedlab_steps_finished_total");
  ASSERT_EQ(health.status, 200);
  auto h = nlohmann::json::parse(health.body)["data"]["result"];
  ASSERT_EQ(h.size(), 1u) << health.body;
  EXPECT_EQ(h[0]["value"][1], "1");
  d.terminate();
  EXPECT_EQ(d.wait(), 0) << d.log_text();
  fs::remove_all(dir);
}

// A short once campaign in a fresh directory: `name`, one "running" step (or as many as
// `configurations` gives) of 20,000 yields.
class DaemonOnce : public ::testing::Test {
 protected:
  void write_campaign(const std::string& name, int repetitions = 1, const std::string& extra = "") {
    name_ = name;
    std::ofstream(config()) << campaign_header(name, "once", dir_.path())
                            << short_yield_campaign(R"(["running"])", repetitions) << extra;
  }
  fs::path config() const { return dir_.path() / "campaign.toml"; }
  fs::path log(int n) const { return dir_.path() / ("daemon" + std::to_string(n) + ".log"); }
  fs::path marker() const { return dir_.path() / "bundles" / ".daemon" / (name_ + ".step"); }
  std::unique_ptr<Store> store() const {
    return open_store("sqlite://" + (dir_.path() / "store.db").string());
  }
  int run_count() const {
    sql::Database db(dir_.path() / "store.db");
    sql::Statement q(db, "SELECT count(*) FROM campaign_runs");
    q.step();
    return static_cast<int>(q.integer(0));
  }
  // The only step of the last run.
  StepRecord only_step() const {
    auto s = store();
    auto run = s->last_run(name_);
    if (!run) return {};
    auto steps = s->steps(run->id);
    return steps.size() == 1 ? steps.begin()->second : StepRecord{};
  }
  // What `schedlab store rebuild` indexes from the bundle directory, into a store of its own.
  int rebuilt_count() const {
    const auto o = testing::schedlab("store rebuild " + (dir_.path() / "bundles").string() +
                                     " --store sqlite://" + (dir_.path() / "rebuilt.db").string());
    EXPECT_EQ(o.code, 0) << o.out;
    return open_store("sqlite://" + (dir_.path() / "rebuilt.db").string())->bundle_count();
  }

  testing::TempDir dir_;
  std::string name_;
};

// #30.1: a second daemon on the same campaign refuses at once (exit 2), naming the first one's pid,
// and leaves the first one's step alone.
TEST_F(DaemonOnce, ASecondDaemonOnTheSameCampaignRefusesNamingTheHolder) {
  write_campaign("locked");
  DaemonProcess first(config(), log(1), "step-start");
  ASSERT_TRUE(first.wait_for_log("paused at step-start", 1, 60)) << first.log_text();
  DaemonProcess second(config(), log(2));
  EXPECT_EQ(second.wait(), 2) << second.log_text();
  EXPECT_NE(
      second.log_text().find("already run by another schedlab daemon (pid " + std::to_string(first.pid())),
      std::string::npos)
      << second.log_text();
  EXPECT_FALSE(first.exited());
  first.terminate();
  EXPECT_EQ(first.wait(), 0) << first.log_text();
  EXPECT_EQ(run_count(), 1);
  EXPECT_EQ(first.log_text().find("left running"), std::string::npos) << first.log_text();
}

// #30.2: a restart after a once run finished begins no new run; its exit status is the run's.
TEST_F(DaemonOnce, AFinishedOnceRunIsFinalAcrossRestarts) {
  write_campaign("final");
  {
    DaemonProcess d(config(), log(1));
    EXPECT_EQ(d.wait(), 0) << d.log_text();
  }
  DaemonProcess again(config(), log(2));
  EXPECT_EQ(again.wait(), 0) << again.log_text();
  EXPECT_NE(again.log_text().find("a once campaign runs once"), std::string::npos) << again.log_text();
  EXPECT_EQ(again.log_text().find("(attempt"), std::string::npos) << "a step ran again: " << again.log_text();
  EXPECT_EQ(run_count(), 1);
  // A changed campaign file is a new plan: that one runs.
  std::ofstream(config(), std::ios::app) << "# changed\n";
  DaemonProcess changed(config(), log(3));
  EXPECT_EQ(changed.wait(), 0) << changed.log_text();
  EXPECT_EQ(run_count(), 2);
}

// #30.7: the marker's session is killed (all of it, and waited for) only in the boot that wrote it;
// a marker of another boot, or one naming a bare process group, kills nothing.
TEST_F(DaemonOnce, KillsTheLeftoverSessionOfThisBootOnly) {
  write_campaign("leftover");
  // A step left running: a session leader, and a "workload" in a process group of its own.
  const pid_t leader = ::fork();
  if (leader == 0) {
    ::setsid();
    if (::fork() == 0) {
      ::setpgid(0, 0);
      ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::vector<pid_t> step;
  ASSERT_TRUE(testing::wait_until(
      [&] {
        step = descendants_of(leader);
        return step.size() == 1;
      },
      std::chrono::seconds(5)));
  step.push_back(leader);
  // Unrelated processes that a stale marker would name: one in a session, one a process group.
  const auto unrelated = [](bool session) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      session ? (void)::setsid() : (void)::setpgid(0, 0);
      ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  };
  const pid_t other_boot = unrelated(true);
  const pid_t bare_group = unrelated(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // their setsid/setpgid done
  auto start_with_marker = [&](const std::string& text, int n) {
    fs::create_directories(marker().parent_path());
    std::ofstream(marker()) << text;
    DaemonProcess d(config(), log(n));
    EXPECT_EQ(d.wait(), 0) << d.log_text();
    return d.log_text();
  };
  auto log1 = start_with_marker(
      "session " + std::to_string(other_boot) + " boot 00000000-0000-4000-8000-000000000001\n", 1);
  EXPECT_TRUE(testing::process_alive(other_boot)) << "a session of another boot was killed: " << log1;
  std::ofstream(config(), std::ios::app) << "# run again\n";
  auto log2 = start_with_marker("pgid " + std::to_string(bare_group) + "\n", 2);
  EXPECT_TRUE(testing::process_alive(bare_group)) << "a bare process group was killed: " << log2;
  std::ofstream(config(), std::ios::app) << "# and again\n";
  auto log3 = start_with_marker("session " + std::to_string(leader) + " boot " + boot_id() + "\n", 3);
  EXPECT_NE(log3.find("killed 2 process(es) a previous daemon's step left running"), std::string::npos)
      << log3;
  for (pid_t p : step) EXPECT_FALSE(testing::process_alive(p)) << p << " of the leftover step survived";
  for (pid_t p : {leader, other_boot, bare_group}) {
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  for (pid_t p : step) ::kill(p, SIGKILL);
}

// Sets an environment variable for the daemons a test starts, and unsets it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// #30.7, the fallback without a writable cgroup: a daemon killed during a repetition leaves the runner
// and its workload (in a process group of its own) running; the next daemon kills the whole step, and
// waits for it, before anything reruns.
TEST_F(DaemonOnce, InASessionTheKilledDaemonsWholeStepIsGoneBeforeTheRerun) {
  ScopedEnv session("SCHEDLAB_DAEMON_ISOLATION", "session");
  name_ = "session";
  std::ofstream(config()) << campaign_header(name_, "once", dir_.path())
                          << "configurations = [\"running\"]\ncounters = false\nsettle_timeout_s = 0\n"
                             "[exporter]\nlisten = \"\"\n[[workload]]\nname = \"yield\"\nrepetitions = 3\n"
                             "params = { yields = 600000 }\n";
  std::vector<pid_t> left;
  {
    DaemonProcess d(config(), log(1));
    left = step_processes(marker(), 30);
    ASSERT_GE(left.size(), 2u) << d.log_text();
    std::set<pid_t> groups;
    for (pid_t p : left) groups.insert(::getpgid(p));
    EXPECT_GE(groups.size(), 2u) << "the workload runs in a process group of its own";
    d.kill_hard();
  }
  for (pid_t p : left)
    EXPECT_TRUE(testing::process_alive(p)) << p << " ended with the daemon: proves nothing";
  DaemonProcess d(config(), log(2), "step-start");
  ASSERT_TRUE(d.wait_for_log("paused at step-start", 1, 30)) << d.log_text();
  for (pid_t p : left)
    EXPECT_FALSE(testing::process_alive(p)) << p << " of the killed daemon's step still runs";
  EXPECT_NE(d.log_text().find("killed " + std::to_string(left.size()) + " process(es)"), std::string::npos)
      << d.log_text();
  d.terminate();
  EXPECT_EQ(d.wait(), 0) << d.log_text();
}

// #30.8: a step discarded where an earlier attempt of that name was discarded before (a recreated
// store) is set aside under a new name, instead of failing the daemon on every restart.
TEST_F(DaemonOnce, ADiscardOntoAnExistingDiscardedAttemptKeepsBoth) {
  write_campaign("twice-discarded");
  {
    DaemonProcess d(config(), log(1), "step-start");
    ASSERT_TRUE(d.wait_for_log("paused at step-start", 1, 60)) << d.log_text();
    d.kill_hard();
  }
  const fs::path attempt = only_step().attempt_dir;
  ASSERT_FALSE(attempt.empty());
  const fs::path earlier = attempt.string() + ".discarded";
  fs::create_directories(earlier);
  std::ofstream(earlier / "step.log") << "an earlier store's discarded attempt\n";
  DaemonProcess d(config(), log(2));
  EXPECT_EQ(d.wait(), 0) << d.log_text();
  EXPECT_EQ(only_step().status, StepStatus::kFinished) << only_step().reason;
  EXPECT_TRUE(fs::exists(earlier / "step.log"));
  EXPECT_TRUE(fs::is_directory(attempt.string() + "-2.discarded")) << d.log_text();
}

// #30.9: a run superseded by a changed campaign file had a step whose bundle was written but not
// committed: it is set aside, so that the store rebuilt from disk counts what the daemon counted.
TEST_F(DaemonOnce, ASupersededRunsHalfDoneStepIsSetAside) {
  write_campaign("superseded");
  {
    DaemonProcess d(config(), log(1), "store-write");
    ASSERT_TRUE(d.wait_for_log("paused at store-write", 1, 60)) << d.log_text();
    d.kill_hard();
  }
  std::ofstream(config(), std::ios::app) << "# changed\n";
  DaemonProcess d(config(), log(2));
  ASSERT_EQ(d.wait(), 0) << d.log_text();
  EXPECT_NE(d.log_text().find("superseded"), std::string::npos) << d.log_text();
  EXPECT_EQ(store()->bundle_count(), 1);
  EXPECT_EQ(rebuilt_count(), 1) << "a bundle on disk the daemon never recorded";
}

// #30.10: the step runs with the signal dispositions a shell gives it, not the daemon's: the
// exporter's civetweb ignores SIGPIPE in the daemon.
TEST_F(DaemonOnce, TheStepDoesNotInheritTheDaemonsIgnoredSigpipe) {
  name_ = "signals";
  std::ofstream(config())
      << campaign_header(name_, "once", dir_.path())
      << "configurations = [\"running\"]\ncounters = false\nsettle_timeout_s = 0\n"
         "[exporter]\nlisten = \"127.0.0.1:"
      << testing::free_port()
      << "\"\n[[workload]]\nname = \"yield\"\nrepetitions = 3\nparams = { yields = 600000 }\n";
  DaemonProcess d(config(), log(1));
  const auto step = step_processes(marker(), 30);
  ASSERT_FALSE(step.empty()) << d.log_text();
  const auto ignored = [](pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("SigIgn:", 0) == 0) return std::stoull(trim(line.substr(7)), nullptr, 16);
    return 0ull;
  };
  const auto daemon_ignores = ignored(d.pid());
  EXPECT_NE(daemon_ignores & (1ull << (SIGPIPE - 1)), 0u)
      << "the daemon does not ignore SIGPIPE: proves nothing";
  for (pid_t p : step)
    EXPECT_EQ(ignored(p) & (1ull << (SIGPIPE - 1)), 0u) << p << " of the step ignores SIGPIPE";
  d.terminate();
  EXPECT_EQ(d.wait(), 0) << d.log_text();
}

// #30.11: a store another process holds locked for longer than SQLite's busy timeout (10 s; a
// rebuild, say) makes the daemon wait, not fail.
TEST_F(DaemonOnce, WaitsForAStoreLockedLongerThanTheBusyTimeout) {
  write_campaign("busy");
  { open_store("sqlite://" + (dir_.path() / "store.db").string()); }  // the schema, as the daemon makes it
  sql::Database holder(dir_.path() / "store.db");
  auto tx = std::make_unique<sql::Transaction>(holder);  // BEGIN IMMEDIATE: the write lock
  DaemonProcess d(config(), log(1));
  std::this_thread::sleep_for(std::chrono::seconds(11));
  EXPECT_FALSE(d.exited()) << d.log_text();
  tx->commit();
  EXPECT_EQ(d.wait(), 0) << d.log_text();
  EXPECT_EQ(only_step().status, StepStatus::kFinished);
}

// RELIABILITY.md, faults: the wall clock set back an hour (`date`, NTP stepping back) during a
// scheduled run, then forward again. The daemon (its clock moved by libfaketime, its monotonic clock
// left alone) ran that elapse itself, so no elapse up to it runs again while the clock is behind (the
// nightly run is not repeated), and once the clock passes it again the next elapse runs once (none is
// skipped). Before, a run ahead of the clock counted as seen "now" and the next elapse ran again.
TEST(DaemonSchedule, TheClockSetBackAnHourRunsNoElapseTwiceAndSkipsNone) {
#if defined(SCHEDLAB_ASAN)
  GTEST_SKIP() << "the Release build runs it (ASan refuses a preloaded library before its runtime)";
#endif
  const fs::path faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
  if (!fs::exists(faketime)) GTEST_SKIP() << faketime << " is not installed (Debian package libfaketime)";
  testing::TempDir dir;
  const auto config = dir.path() / "campaign.toml";
  // A run of a second or two, so that the clock goes back while it runs.
  std::ofstream(config)
      << campaign_header("clock", "*:*:0/5", dir.path())
      << "configurations = [\"running\"]\ncounters = false\nsettle_timeout_s = 0\n[exporter]\n"
         "listen = \"\"\n[[workload]]\nname = \"yield\"\nrepetitions = 3\n"
         "params = { yields = 1000000 }\n";
  const auto offset = dir.path() / "clock-offset";
  testing::spit(offset, "+0\n");
  ::setenv("LD_PRELOAD", faketime.c_str(), 1);
  ::setenv("FAKETIME_TIMESTAMP_FILE", offset.c_str(), 1);
  ::setenv("FAKETIME_NO_CACHE", "1", 1);
  ::setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
  DaemonProcess d(config, dir.path() / "daemon.log");
  for (const char* name :
       {"LD_PRELOAD", "FAKETIME_TIMESTAMP_FILE", "FAKETIME_NO_CACHE", "FAKETIME_DONT_FAKE_MONOTONIC"})
    ::unsetenv(name);

  ASSERT_TRUE(d.wait_for_log("run 1 for the elapse at", 1, 30)) << d.log_text();
  testing::spit(offset, "-3600\n");
  ASSERT_TRUE(d.wait_for_log("run 1 finished:", 1, 60)) << d.log_text();
  ASSERT_TRUE(d.wait_for_log("the clock went back", 1, 15)) << d.log_text();
  std::this_thread::sleep_for(std::chrono::seconds(12));  // two elapses or more of the set-back clock
  EXPECT_EQ(DaemonProcess::count(d.log_text(), "for the elapse at"), 1) << d.log_text();
  testing::spit(offset, "+0\n");
  EXPECT_TRUE(d.wait_for_log("run 2 finished:", 1, 30)) << d.log_text();
  d.terminate();
  EXPECT_EQ(d.wait(), 0) << d.log_text();

  sql::Database db(dir.path() / "store.db");
  sql::Statement runs(db, "SELECT scheduled_for FROM campaign_runs ORDER BY id");
  std::vector<std::string> elapses;
  while (runs.step()) elapses.push_back(runs.text(0));
  ASSERT_GE(elapses.size(), 2u) << d.log_text();
  for (std::size_t i = 1; i < elapses.size(); ++i)
    EXPECT_GT(parse_utc_timestamp(elapses[i]), parse_utc_timestamp(elapses[i - 1]))
        << "an elapse ran twice or out of order: " << elapses[i - 1] << ", " << elapses[i];
  const double apart =
      std::chrono::duration<double>(parse_utc_timestamp(elapses[1]) - parse_utc_timestamp(elapses[0]))
          .count();
  EXPECT_LE(apart, 60.0) << "run 2 is for the first elapse after the clock came back: " << elapses[0] << ", "
                         << elapses[1];
}

// #30.3: a run recorded as scheduled ahead of the clock (the clock was wrong when it ran) does not
// hold the schedule back until the clock reaches it.
TEST(DaemonSchedule, ARunRecordedAheadOfTheClockDoesNotBlockTheSchedule) {
  testing::TempDir dir;
  const auto config = dir.path() / "campaign.toml";
  std::ofstream(config) << campaign_header("ahead", "*:*:0/2", dir.path())
                        << short_yield_campaign(R"(["running"])", 1);
  {
    auto store = open_store("sqlite://" + (dir.path() / "store.db").string());
    store->first_seen("ahead");
    const auto tomorrow = std::chrono::system_clock::now() + std::chrono::hours(24);
    auto run = store->begin_run("ahead", "an-earlier-file", format_utc_timestamp(tomorrow), 1);
    store->end_run(run.id, "finished");
  }
  DaemonProcess d(config, dir.path() / "daemon.log");
  EXPECT_TRUE(d.wait_for_log("run 2 for the elapse at", 1, 15)) << d.log_text();
  d.terminate();
  EXPECT_EQ(d.wait(), 0) << d.log_text();

  // The same for a campaign first seen ahead of the clock, with no run yet.
  std::ofstream(config) << campaign_header("seen-ahead", "*:*:0/2", dir.path())
                        << short_yield_campaign(R"(["running"])", 1);
  {
    sql::Database db(dir.path() / "store.db");
    sql::Statement(db, "INSERT INTO campaigns (name, first_seen) VALUES ('seen-ahead', ?1)")
        .bind_all(format_utc_timestamp(std::chrono::system_clock::now() + std::chrono::hours(24)))
        .run();
  }
  DaemonProcess seen(config, dir.path() / "daemon2.log");
  EXPECT_TRUE(seen.wait_for_log("for the elapse at", 1, 15)) << seen.log_text();
  seen.terminate();
  EXPECT_EQ(seen.wait(), 0) << seen.log_text();
}

// #30.12: the latest missed elapse of a secondly schedule missed for 30 days (2.6 million elapses) is
// the last second, not the millionth elapse after `since`.
TEST(DaemonSchedule, TheLatestMissedElapseOfALongOutageIsTheLatest) {
  using namespace std::chrono;
  const auto every_second = parse_calendar("*:*:*");
  const auto now = floor<seconds>(system_clock::now()) + milliseconds(300);
  const auto latest = latest_missed_elapse(every_second, now - hours(24 * 30), now);
  ASSERT_TRUE(latest);
  EXPECT_EQ(*latest, floor<seconds>(now));
  const auto daily = parse_calendar("*-*-* 02:00:00");
  const auto day = latest_missed_elapse(daily, now - hours(24 * 400), now);
  ASSERT_TRUE(day);
  EXPECT_LE(*day, now);
  EXPECT_GT(*day, now - hours(24));
  EXPECT_GT(next_elapse(daily, *day).value(), now);
  EXPECT_FALSE(latest_missed_elapse(daily, *day, now)) << "nothing after the latest";
}

}  // namespace
}  // namespace schedlab
