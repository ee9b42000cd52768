// A campaign whose configurations are runtime configurations of the booted kernel ("running:NAME"):
// the daemon runs them step by step with no reboot, each step under its configuration, restored after.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/cli_util.hpp"
#include "tests/daemon_process.hpp"
#include "tests/test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::DaemonProcess;
using testing::TempDir;

TEST(DaemonRuntime, RunningConfigurationsAlternateInsideOneBootEachUnderItsSettings) {
  TempDir dir;
  std::ofstream(dir.path() / "runtime.toml") << "[configuration.full]\n"
                                                "[configuration.half]\ncpu_max = \"50000 100000\"\n";
  std::ofstream(dir.path() / "campaign.toml")
      << testing::campaign_header("runtime", "once", dir.path())
      << "runtime_configurations = \"runtime.toml\"\ntrials = 2\nseed = 3\n"
      << testing::short_yield_campaign("[\"running:full\", \"running:half\"]", 2);
  auto check = testing::schedlab("campaign check " + (dir.path() / "campaign.toml").string());
  EXPECT_EQ(check.code, 0) << check.out;
  DaemonProcess daemon(dir.path() / "campaign.toml", dir.path() / "daemon.log");
  EXPECT_EQ(daemon.wait(), 0) << daemon.log_text();
  int full = 0, half = 0;
  for (auto it = fs::recursive_directory_iterator(dir.path() / "bundles");
       it != fs::recursive_directory_iterator(); ++it) {
    if (it->path().extension() != ".json" ||
        it->path().filename().string().find("trial") == std::string::npos)
      continue;
    auto b = nlohmann::json::parse(testing::slurp(it->path()));
    if (!b.contains("configuration") || !b["configuration"].contains("runtime")) continue;
    const std::string name = b["configuration"]["runtime"]["name"];
    if (name == "full") ++full;
    if (name == "half") {
      ++half;
      // 20,000 yields (~15 ms) stay inside one 50 ms quota: the group and its quota are what show.
      const auto& back = b["configuration"]["runtime"]["read_back"];
      EXPECT_TRUE(back.value("cpu.cfs_quota_us", "") == "50000" ||
                  back.value("cpu.max", "") == "50000 100000")
          << back.dump();
      EXPECT_TRUE(b["environment"]["runtime_switch"].contains("cgroup")) << it->path();
    }
  }
  EXPECT_EQ(full, 2);
  EXPECT_EQ(half, 2);
  // A name the file does not define is the campaign file's error, before anything runs.
  std::ofstream(dir.path() / "bad.toml")
      << testing::campaign_header("bad", "once", dir.path()) << "runtime_configurations = \"runtime.toml\"\n"
      << testing::short_yield_campaign("[\"running:quarter\"]", 1);
  auto bad = testing::schedlab("campaign check " + (dir.path() / "bad.toml").string());
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("configurations: --configuration quarter: not a configuration"), std::string::npos)
      << bad.out;
}

}  // namespace
}  // namespace schedlab
