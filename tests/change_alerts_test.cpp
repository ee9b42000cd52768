// The change-point alert rules (dashboards/alerts/schedlab.rules.yml) against their real consumers:
// promtool's unit tests must fail on a rule that alerts on noise, and Debian's Prometheus, loading the
// rules and scraping exporters fed with set_change_points(), must fire SchedlabConfirmedRegression for a
// confirmed worse change and nothing for suspected ones, and resolve it when the daemon's list drops it.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "daemon/exporter/exporter.hpp"
#include "prometheus_server.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const fs::path kAlerts = fs::path(SCHEDLAB_SOURCE_DIR) / "dashboards" / "alerts";
const fs::path kRules = kAlerts / "schedlab.rules.yml";

#define REQUIRE_BINARY(path) \
  if (!fs::exists(path)) GTEST_SKIP() << path << " is not installed (ci/setup installs it)"

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// promtool test rules on the committed test file against a copy of the rules with `from` replaced by `to`.
testing::Outcome promtool_test_doctored(const fs::path& dir, const std::string& from, const std::string& to) {
  std::string rules = read_file(kRules);
  const auto at = rules.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) rules.replace(at, from.size(), to);
  testing::spit(dir / "schedlab.rules.yml", rules);
  fs::copy_file(kAlerts / "schedlab.rules.test.yml", dir / "schedlab.rules.test.yml",
                fs::copy_options::overwrite_existing);
  return testing::sh(testing::kPromtoolBinary.string() + " test rules " +
                     (dir / "schedlab.rules.test.yml").string());
}

// The committed test file passes (the CTest test promtool_test_rules runs it too) and fails for rules that
// would page for noise or for an improvement: it can fail.
TEST(ChangeAlertsPromtool, UnitTestsCatchARuleThatAlertsOnNoise) {
  REQUIRE_BINARY(testing::kPromtoolBinary);
  const auto ok = testing::sh(testing::kPromtoolBinary.string() + " test rules " +
                              (kAlerts / "schedlab.rules.test.yml").string());
  ASSERT_EQ(ok.code, 0) << ok.out;
  testing::TempDir dir;
  const std::string rule = R"(schedlab_change_points{status="confirmed", direction="worse"})";
  const auto suspected = promtool_test_doctored(
      dir.path(), rule, R"(schedlab_change_points{status=~"confirmed|suspected", direction="worse"})");
  EXPECT_NE(suspected.code, 0) << suspected.out;
  EXPECT_NE(suspected.out.find("status=\"suspected\""), std::string::npos) << suspected.out;
  const auto any_direction =
      promtool_test_doctored(dir.path(), rule, R"(schedlab_change_points{status="confirmed"})");
  EXPECT_NE(any_direction.code, 0) << any_direction.out;
  EXPECT_NE(any_direction.out.find("direction=\"better\""), std::string::npos) << any_direction.out;
}

// promtool's lint of the exposition with change points (names, HELP, TYPE).
TEST(ChangeAlertsPromtool, PromtoolAcceptsTheChangePointExposition) {
  REQUIRE_BINARY(testing::kPromtoolBinary);
  ExporterSettings s;
  s.listen = "127.0.0.1:0";
  s.host = "lab1";
  Exporter e(s);
  ExportedChange c{"lab1",
                   "yield",
                   "ns_per_yield",
                   "yield",
                   "6b4d6f56edcc7899",
                   "6.12-eevdf",
                   "worse",
                   "not reproduced",
                   "2026-12-06T02:06:03Z",
                   0.052,
                   0.031,
                   0.07};
  e.set_change_points({c});
  const auto r = testing::http_get(e.port(), "/metrics");
  ASSERT_EQ(r.status, 200);
  ASSERT_NE(r.body.find("schedlab_change_point_timestamp_seconds{"), std::string::npos) << r.body;
  const auto out = testing::promtool_lint(r.body);
  EXPECT_EQ(out.code, 0) << out.out;
  EXPECT_EQ(out.out, "") << "promtool's lint findings:\n" << out.out;
}

ExportedChange change(const std::string& host, const std::string& status, const std::string& direction) {
  return {host,
          "wakeup",
          "latency_p99_us",
          "wakeup",
          "0a1b2c3d4e5f6071",
          "6.12-eevdf",
          direction,
          status,
          "2026-12-06T02:06:03Z",
          0.12,
          0.05,
          0.19};
}

// The ALERTS series of SchedlabConfirmedRegression by host, as Prometheus reports them now.
std::map<std::string, std::string> regression_alerts(testing::PrometheusServer& prom) {
  std::map<std::string, std::string> out;
  const auto r = prom.query(R"(ALERTS{alertname="SchedlabConfirmedRegression"})");
  if (r.status != 200) return out;
  const auto answer = nlohmann::json::parse(r.body);  // named: a temporary dies before the loop's body
  for (const auto& s : answer["data"]["result"])
    out[s["metric"].value("host", "")] = s["metric"].value("alertstate", "");
  return out;
}

// Two exporters as two daemons: "regressed" holds one confirmed worse change, "aa" only what an A/A series
// produces (suspected, not reproduced, unconfirmable). Prometheus evaluates the shipped rules every second.
TEST(ChangeAlertsPrometheus, ConfirmedRegressionFiresAndNoiseDoesNot) {
  REQUIRE_BINARY(testing::kPrometheusBinary);
  ExporterSettings s;
  s.listen = "127.0.0.1:0";
  s.host = "regressed";
  Exporter regressed(s);
  s.host = "aa";
  Exporter aa(s);
  regressed.set_change_points(
      {change("regressed", "suspected", "worse"), change("regressed", "confirmed", "worse")});
  aa.set_change_points({change("aa", "suspected", "worse"), change("aa", "not reproduced", "worse"),
                        change("aa", "unconfirmable", "worse"), change("aa", "suspected", "better")});
  testing::PrometheusServer prom(
      {"127.0.0.1:" + std::to_string(regressed.port()), "127.0.0.1:" + std::to_string(aa.port())}, false,
      {kRules});
  ASSERT_TRUE(prom.wait_ready()) << prom.log();

  std::map<std::string, std::string> alerts;
  ASSERT_TRUE(testing::wait_until(
      [&] {
        alerts = regression_alerts(prom);
        return alerts["regressed"] == "firing";
      },
      20s))
      << "not firing: " << prom.query(R"(ALERTS)").body << "\n"
      << prom.log();
  // The alert carries what a reader needs to find the change.
  const auto firing =
      nlohmann::json::parse(prom.query(R"(ALERTS{alertname="SchedlabConfirmedRegression"})").body);
  ASSERT_EQ(firing["data"]["result"].size(), 1u) << firing.dump();
  const auto& labels = firing["data"]["result"][0]["metric"];
  EXPECT_EQ(labels.value("workload", ""), "wakeup");
  EXPECT_EQ(labels.value("metric", ""), "latency_p99_us");
  EXPECT_EQ(labels.value("instance_id", ""), "wakeup");
  EXPECT_EQ(labels.value("configuration", ""), "6.12-eevdf");
  EXPECT_EQ(labels.value("severity", ""), "warning");

  // The A/A exporter's series are scraped (so an absent alert is the rule's doing), over several
  // evaluations, and nothing fires for them, not even pending.
  ASSERT_TRUE(testing::wait_until(
      [&] {
        const auto r =
            prom.query(R"(count_over_time(schedlab_change_points{host="aa", status="suspected"}[1m]))");
        if (r.status != 200) return false;
        const auto result = nlohmann::json::parse(r.body)["data"]["result"];
        return result.size() == 2 && std::stoi(result[0]["value"][1].get<std::string>()) >= 4 &&
               std::stoi(result[1]["value"][1].get<std::string>()) >= 4;
      },
      15s))
      << prom.query(R"(schedlab_change_points{host="aa"})").body;
  const auto aa_alerts = prom.query(R"(ALERTS{host="aa"})");
  ASSERT_EQ(aa_alerts.status, 200) << aa_alerts.body;
  EXPECT_TRUE(nlohmann::json::parse(aa_alerts.body)["data"]["result"].empty()) << aa_alerts.body;

  // The rerun did not reproduce it: the daemon's new list no longer holds a confirmed change, the series
  // goes at the next scrape and the alert resolves.
  regressed.set_change_points({change("regressed", "not reproduced", "worse")});
  EXPECT_TRUE(testing::wait_until([&] { return regression_alerts(prom).empty(); }, 15s))
      << prom.query("ALERTS").body;
}

}  // namespace
}  // namespace schedlab
