// The daemon's change points (#24) end to end: a campaign scheduled every 2 s on the running kernel, its
// runtime configuration switched partway (the file its steps read is rewritten, as a person would), the
// daemon finds the step, confirms it by a paired rerun, and a real Prometheus scraping the daemon with
// the shipped rules fires SchedlabConfirmedRegression. The A/A half: runs before the switch give no
// confirmed change.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_util.hpp"
#include "daemon_process.hpp"
#include "prometheus_server.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::campaign_header;
using testing::DaemonProcess;

constexpr int kBefore = 8;  // runs before the switch

TEST(DaemonChanges, ASwitchedConfigurationIsFoundConfirmedAndAlertedInPrometheus) {
  if (!fs::exists(testing::kPrometheusBinary)) GTEST_SKIP() << "no " << testing::kPrometheusBinary;
  testing::TempDir dir;
  const int port = testing::free_port();
  const fs::path knobs = dir.path() / "knobs.toml";
  std::ofstream(knobs) << "[configuration.knob]\n";  // the machine as found
  // Injected work (5 us of arithmetic per yield) makes the loop CPU-bound and quiet (~1% run to run
  // here); the bandwidth limit after the switch then costs it half its CPU time.
  std::ofstream(dir.path() / "campaign.toml")
      << campaign_header("nightly", "*:*:0/2", dir.path()) << "configurations = [\"running:knob\"]\n"
      << "runtime_configurations = \"" << knobs.string() << "\"\n"
      << "counters = false\nsettle_timeout_s = 0\ntimeout_s = 60\n[changes]\nbudget = \"90s\"\n"
      << "[exporter]\nlisten = \"127.0.0.1:" << port << "\"\nhost = \"ci-host\"\n"
      << "[[workload]]\nname = \"yield\"\nrepetitions = 3\nparams = { yields = 20000, spin_ns = 5000 }\n";
  const fs::path rules = fs::path(SCHEDLAB_SOURCE_DIR) / "dashboards" / "alerts" / "schedlab.rules.yml";
  testing::PrometheusServer prom({"127.0.0.1:" + std::to_string(port)}, false, {rules});
  ASSERT_TRUE(prom.wait_ready()) << prom.log();
  DaemonProcess d(dir.path() / "campaign.toml", dir.path() / "daemon.log");
  ASSERT_TRUE(d.wait_for_log("finished: 1 step(s), 0 failed", kBefore, 180)) << d.log_text();
  // No confirmed change in the runs of one configuration (what level shifts they show are unconfirmable).
  EXPECT_EQ(DaemonProcess::count(d.log_text(), "confirmed change:"), 0) << d.log_text();
  std::ofstream(knobs) << "[configuration.knob]\ncpu_max = \"5000 10000\"\n";
  ASSERT_TRUE(d.wait_for_log("confirmed change:", 1, 240)) << d.log_text();

  std::string firing;
  EXPECT_TRUE(testing::wait_until(
      [&] {
        const auto r = prom.query(R"(ALERTS{alertname="SchedlabConfirmedRegression", alertstate="firing"})");
        if (r.status != 200) return false;
        const auto result = nlohmann::json::parse(r.body)["data"]["result"];
        if (result.empty()) return false;
        firing = result[0]["metric"].dump();
        return true;
      },
      30s))
      << prom.query("ALERTS").body << prom.query("schedlab_change_points").body;
  const auto labels = nlohmann::json::parse(firing.empty() ? "{}" : firing);
  EXPECT_EQ(labels.value("host", ""), "ci-host") << firing;
  EXPECT_EQ(labels.value("workload", ""), "yield") << firing;
  EXPECT_EQ(labels.value("metric", ""), "ns_per_yield") << firing;
  d.terminate();
  EXPECT_EQ(d.wait(), 0) << d.log_text();

  // The store holds the change at the switch, confirmed, its rerun's record beside the runs.
  const auto o = testing::schedlab("changes --store " + (dir.path() / "store.db").string() + " --json");
  ASSERT_EQ(o.code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out.substr(o.out.find('{')));
  int confirmed = 0;
  for (const auto& c : j.at("changes")) {
    if (c.at("status") != "confirmed") continue;
    ++confirmed;
    // At the switch, or a run beside it: a run next to the switch that is slow or fast by chance ranks
    // with the other side (the rerun compares the runs 3 either side, so it still finds the switch).
    EXPECT_LE(std::abs(c.at("index").get<int>() - kBefore), 2) << c.dump(1);
    // Worse, and by its own interval: the whole interval of the shift lies above zero. Its size is the
    // host's: half a CPU of bandwidth doubles the loop's time on a CPU of its own, and costs it less
    // where a neighbour already takes part of that CPU (+19% once beside a CPU hog and another test).
    EXPECT_EQ(c.at("direction"), "worse") << c.dump(1);
    EXPECT_GT(c.at("shift_lower_pct").get<double>(), 0) << c.dump(1);
    ASSERT_TRUE(c.at("rerun").is_string()) << c.dump(1);
    EXPECT_TRUE(fs::exists(c.at("rerun").get<std::string>())) << c.dump(1);
  }
  EXPECT_EQ(confirmed, 1) << j.dump(1);
}

}  // namespace
}  // namespace schedlab
