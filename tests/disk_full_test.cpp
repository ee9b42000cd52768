// A full disk under the output directory (RELIABILITY.md, faults): `schedlab run` says so, naming the
// file and ENOSPC, exits 73, leaves no partial bundle under its final name and no temporary, and
// the bundle written before the disk filled is intact. The daemon on a full disk (its output and store
// on the same small tmpfs) waits for space and resumes, or stops, as its campaign's on_disk_full says,
// recording nothing half. The tmpfs is mounted by the test (root only: elsewhere the test says why it
// skips).
#include <sys/mount.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "daemon/store/store.hpp"
#include "daemon_process.hpp"
#include "prometheus_server.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::campaign_header;
using testing::DaemonProcess;
using testing::files_in;
using testing::schedlab;
using testing::slurp;
using testing::TempDir;

// A tmpfs of `bytes` at `dir`, unmounted when the test ends.
class SmallTmpfs {
 public:
  SmallTmpfs(const fs::path& dir, std::size_t bytes) : dir_(dir) {
    fs::create_directories(dir_);
    const std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) err_ = errno;
  }
  ~SmallTmpfs() {
    if (!err_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  int error() const { return err_; }

 private:
  fs::path dir_;
  int err_ = 0;
};

// Writes a file of zeros until the file system is full.
void fill(const fs::path& file) {
  std::ofstream out(file, std::ios::binary);
  const std::string block(4096, '\0');
  while (out.write(block.data(), block.size()) && out.flush()) {
  }
}

TEST(DiskFull, ARunOnAFullDiskSaysSoAndKeepsTheEarlierBundle) {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  SmallTmpfs tmpfs(out, 1 << 20);
  if (tmpfs.error()) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(tmpfs.error());

  const std::string run =
      "run --workload yield --param yield.yields=20000 --repetitions 1 --out " + out.string();
  const auto first = schedlab(run);
  ASSERT_EQ(first.code, 0) << first.out;
  const auto earlier = files_in(out);
  ASSERT_EQ(earlier.size(), 1u);
  const std::string earlier_text = slurp(earlier[0]);

  fill(out / "filler");
  const auto full = schedlab(run);
  EXPECT_EQ(full.code, 73) << "a full disk has its own exit status: " << full.out;
  EXPECT_NE(full.out.find("ENOSPC"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find(out.string()), std::string::npos) << "the message names no file: " << full.out;

  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{earlier[0].filename().string(), "filler"}))
      << "a partial bundle or a temporary was left";
  EXPECT_EQ(slurp(earlier[0]), earlier_text);
}

// The daemon's exit code once it exits within `timeout_s`; -2 when it is still running then.
int exit_within(DaemonProcess& d, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!d.exited()) {
    if (std::chrono::steady_clock::now() > end) return -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return d.wait();
}

// The daemon's campaign on a tmpfs of its own: output and store both under `disk`, 3 steps (trials of one
// yield instance, 2 repetitions each) in a fixed order, /metrics on a free port, retries every second.
class DaemonDiskFull : public ::testing::Test {
 protected:
  static constexpr int kSteps = 3;
  static constexpr int kRepetitions = 2;

  void SetUp() override {
    tmpfs_ = std::make_unique<SmallTmpfs>(disk(), 16 << 20);
    if (tmpfs_->error()) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(tmpfs_->error());
    port_ = testing::free_port();
  }
  void TearDown() override { tmpfs_.reset(); }

  void write_campaign(const std::string& on_disk_full) {
    std::ofstream(config()) << campaign_header("full", "once", disk())
                            << "configurations = [\"running\"]\ntrials = " << kSteps
                            << "\ncounters = false\nsettle_timeout_s = 0\ntimeout_s = 60\non_disk_full = \""
                            << on_disk_full << "\"\n"
                            << (on_disk_full == "wait" ? "disk_full_retry = \"1s\"\n" : "")
                            << "[exporter]\nlisten = \"127.0.0.1:" << port_
                            << "\"\n[changes]\ndetect = false\n"
                            << "[[workload]]\nname = \"yield\"\nrepetitions = " << kRepetitions
                            << "\nparams = { yields = 1000000 }\n";
  }

  fs::path disk() const { return dir_.path() / "disk"; }
  fs::path output() const { return disk() / "bundles"; }
  fs::path config() const { return dir_.path() / "campaign.toml"; }
  fs::path log(int n) const { return dir_.path() / ("daemon" + std::to_string(n) + ".log"); }
  fs::path filler() const { return disk() / "filler"; }

  // Bundles on disk outside discarded attempts, and files left under a temporary's name (".NAME.XXXXXX").
  std::vector<fs::path> bundles_on_disk(std::vector<fs::path>* temporaries = nullptr) const {
    std::vector<fs::path> out;
    for (auto it = fs::recursive_directory_iterator(output()); it != fs::recursive_directory_iterator();
         ++it) {
      if (it->is_directory() &&
          (it->path().extension() == ".discarded" || it->path().filename() == ".daemon")) {
        it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file()) continue;
      if (temporaries && it->path().filename().string().rfind('.', 0) == 0)
        temporaries->push_back(it->path());
      if (it->path().extension() == ".json") out.push_back(it->path());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The value of schedlab_daemon_disk_full per path, from the daemon's /metrics.
  std::map<std::string, double> disk_full_gauges() const {
    std::map<std::string, double> out;
    const auto r = testing::http_get(port_, "/metrics");
    std::istringstream lines(r.body);
    const std::string prefix = "schedlab_daemon_disk_full{path=\"";
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(prefix, 0) != 0) continue;
      const auto end = line.find("\"}", prefix.size());
      if (end == std::string::npos) continue;
      out[line.substr(prefix.size(), end - prefix.size())] = std::stod(line.substr(end + 3));
    }
    return out;
  }

  // The store holds exactly the plan: every step finished once with its own bundle of kRepetitions.
  void expect_exactly_the_plan() const {
    auto store = open_store_to_read("sqlite://" + (disk() / "store.db").string());
    auto run = store->last_run("full");
    ASSERT_TRUE(run);
    EXPECT_EQ(run->status, "finished");
    auto steps = store->steps(run->id);
    ASSERT_EQ(steps.size(), static_cast<std::size_t>(kSteps));
    std::set<std::string> paths;
    for (const auto& [key, step] : steps) {
      EXPECT_EQ(step.status, StepStatus::kFinished) << key << ": " << step.reason;
      EXPECT_TRUE(paths.insert(step.bundle_path).second) << "recorded twice: " << step.bundle_path;
      const auto bundle = load_bundle(step.bundle_path);
      ASSERT_EQ(bundle.instances.size(), 1u);
      EXPECT_EQ(bundle.instances[0].repetitions.size(), static_cast<std::size_t>(kRepetitions)) << key;
    }
    EXPECT_EQ(store->bundle_count(), kSteps);
    EXPECT_EQ(store->repetition_count(), kSteps * kRepetitions);
    std::vector<fs::path> temporaries;
    EXPECT_EQ(bundles_on_disk(&temporaries).size(), static_cast<std::size_t>(kSteps));
    EXPECT_TRUE(temporaries.empty()) << temporaries.front();
  }

  // Starts `d`, lets its first step be recorded, then fills the disk while the second one runs, so that
  // its bundle cannot be written. Returns the first step's bundle and its bytes.
  std::pair<fs::path, std::string> fill_during_the_second_step(DaemonProcess& d) {
    EXPECT_TRUE(d.wait_for_log("step 2/" + std::to_string(kSteps), 1, 60)) << d.log_text();
    fill(filler());
    const auto earlier = bundles_on_disk();
    EXPECT_EQ(earlier.size(), 1u) << d.log_text();
    if (earlier.empty()) return {};
    return {earlier[0], slurp(earlier[0])};
  }

  testing::TempDir dir_;
  std::unique_ptr<SmallTmpfs> tmpfs_;
  int port_ = 0;
};

// on_disk_full = "wait" (the default): the daemon says on /metrics and in its log that the disk is full,
// does not exit, records nothing of the step it could not write; once the filler is deleted it resumes
// and finishes with exactly the planned steps, the earlier bundle untouched. Before, the step was recorded
// failed (exit 1 from `run`), and so was every later one: the run "finished" with nothing measured.
TEST_F(DaemonDiskFull, WaitsForSpaceSaysSoAndResumesWithExactlyThePlan) {
  write_campaign("wait");
  DaemonProcess d(config(), log(1));
  const auto [earlier, earlier_text] = fill_during_the_second_step(d);
  ASSERT_FALSE(earlier.empty());
  ASSERT_TRUE(d.wait_for_log("disk full: ", 1, 60)) << d.log_text();
  const auto log_text = d.log_text();
  EXPECT_NE(log_text.find("disk full: " + output().string() + " has "), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("bytes free"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("on_disk_full = \"wait\""), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("ENOSPC"), std::string::npos) << log_text;

  // /metrics: 1 for the full path (the output directory, or the store's file once its write is refused
  // too: the same tmpfs), 0 for the other.
  std::map<std::string, double> gauges;
  ASSERT_TRUE(testing::wait_until(
      [&] {
        gauges = disk_full_gauges();
        return gauges.size() == 2 && gauges[output().string()] + gauges[(disk() / "store.db").string()] == 1;
      },
      std::chrono::seconds(10)))
      << testing::http_get(port_, "/metrics").body;

  // Several retries later: still waiting, nothing of steps 2 and 3 recorded or left under a bundle's name.
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  ASSERT_FALSE(d.exited()) << d.log_text();
  EXPECT_EQ(testing::DaemonProcess::count(d.log_text(), "disk full: " + output().string()), 1)
      << "logged once: " << d.log_text();
  {
    auto store = open_store_to_read("sqlite://" + (disk() / "store.db").string());
    EXPECT_EQ(store->bundle_count(), 1);
    int finished = 0;
    for (const auto& [key, step] : store->steps(store->last_run("full")->id)) {
      finished += step.status == StepStatus::kFinished;
      EXPECT_NE(step.status, StepStatus::kFailed) << key << ": " << step.reason;
    }
    EXPECT_EQ(finished, 1);
  }
  std::vector<fs::path> temporaries;
  EXPECT_EQ(bundles_on_disk(&temporaries), std::vector<fs::path>{earlier});
  EXPECT_TRUE(temporaries.empty()) << temporaries.front();

  fs::remove(filler());
  EXPECT_TRUE(d.wait_for_log("disk space is back", 1, 60)) << d.log_text();
  EXPECT_EQ(exit_within(d, 60), 0) << d.log_text();
  expect_exactly_the_plan();
  EXPECT_EQ(slurp(earlier), earlier_text);
}

// on_disk_full = "stop": the daemon logs why and exits 73 (not restarted by the unit), the store and the
// earlier bundle intact and nothing of the unwritten step recorded; started again once space is freed,
// it finishes the plan.
TEST_F(DaemonDiskFull, StopsWithItsOwnExitCodeAndARestartFinishesThePlan) {
  write_campaign("stop");
  std::pair<fs::path, std::string> earlier;
  {
    DaemonProcess d(config(), log(1));
    earlier = fill_during_the_second_step(d);
    ASSERT_FALSE(earlier.first.empty());
    ASSERT_TRUE(d.wait_for_log("disk full: ", 1, 60)) << d.log_text();
    EXPECT_EQ(exit_within(d, 10), 73) << d.log_text();
    const auto log_text = d.log_text();
    EXPECT_NE(log_text.find("disk full: " + output().string() + " has "), std::string::npos) << log_text;
    EXPECT_NE(log_text.find("on_disk_full = \"stop\": the daemon stops (exit 73)"), std::string::npos)
        << log_text;
  }
  {
    auto store = open_store_to_read("sqlite://" + (disk() / "store.db").string());
    EXPECT_EQ(store->bundle_count(), 1);
    EXPECT_EQ(store->repetition_count(), kRepetitions);
    auto run = store->last_run("full");
    ASSERT_TRUE(run);
    EXPECT_EQ(run->status, "running");
    int finished = 0;
    for (const auto& [key, step] : store->steps(run->id)) {
      finished += step.status == StepStatus::kFinished;
      EXPECT_NE(step.status, StepStatus::kFailed) << key << ": " << step.reason;
    }
    EXPECT_EQ(finished, 1);
  }
  EXPECT_EQ(bundles_on_disk(), std::vector<fs::path>{earlier.first});
  EXPECT_EQ(slurp(earlier.first), earlier.second);

  fs::remove(filler());
  DaemonProcess again(config(), log(2));
  EXPECT_EQ(exit_within(again, 60), 0) << again.log_text();
  expect_exactly_the_plan();
  EXPECT_EQ(slurp(earlier.first), earlier.second);
}

// The campaign keys: a bad value is exit 2 naming the file, the line and the key.
TEST(DaemonDiskFullCampaign, BadSettingsNameTheFileAndTheKey) {
  TempDir dir;
  const auto check = [&](const std::string& lines) {
    std::ofstream(dir.path() / "c.toml") << campaign_header("c", "once", dir.path()) << lines
                                         << "[exporter]\nlisten = \"\"\n[[workload]]\nname = \"yield\"\n";
    return testing::schedlab("campaign check " + (dir.path() / "c.toml").string());
  };
  const std::string file = (dir.path() / "c.toml").string();
  struct Case {
    std::string lines;
    int code;
    std::string said;
  };
  const std::vector<Case> cases = {
      {"on_disk_full = \"retry\"\n", 2,
       file + ":6: [campaign] on_disk_full: 'retry': expected \"wait\" or \"stop\""},
      {"disk_full_retry = \"soon\"\n", 2, file + ":6: [campaign] disk_full_retry: "},
      {"disk_full_retry = 0\n", 2, "[campaign] disk_full_retry: must be a positive duration"},
      {"on_disk_full = \"stop\"\ndisk_full_retry = \"5m\"\n", 2, file + ":7: [campaign] disk_full_retry: "},
      {"on_disk_full = \"wait\"\ndisk_full_retry = \"2m30s\"\n", 0,
       "on a full disk: wait, looking again every 150 s"},
      {"on_disk_full = \"stop\"\n", 0, "on a full disk: stop (exit 73)"},
  };
  for (const auto& c : cases) {
    const auto o = check(c.lines);
    EXPECT_EQ(o.code, c.code) << c.lines << o.out;
    EXPECT_NE(o.out.find(c.said), std::string::npos) << c.lines << o.out;
  }
}

}  // namespace
}  // namespace schedlab
