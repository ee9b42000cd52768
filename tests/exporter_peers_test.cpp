// The exporter against its real consumers: promtool's lint of the exposition, a Prometheus server
// scraping it, and a Pushgateway receiving its push. Each peer runs on a free 127.0.0.1 port with its
// data in a temp dir and is killed when its test ends (tests/prometheus_server.hpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "daemon/exporter/exporter.hpp"
#include "exposition.hpp"
#include "prometheus_server.hpp"

namespace schedlab {
namespace {

using namespace std::chrono_literals;
using testing::find_samples;
using testing::http_get;
using testing::parse_exposition;

const std::filesystem::path kBundle =
    std::filesystem::path(SCHEDLAB_FIXTURES_DIR) / "exporter" / "yield-wakeup.json";

ExporterSettings local_settings() {
  ExporterSettings s;
  s.listen = "127.0.0.1:0";
  s.host = "testhost";
  s.host_class.label = "testclass";
  return s;
}

// An exporter that only pushes, to `gateway`.
ExporterSettings push_only_settings(const testing::Pushgateway& gateway) {
  ExporterSettings s = local_settings();
  s.listen = "";
  s.pushgateway = gateway.url();
  return s;
}

#define REQUIRE_BINARY(path) \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not installed (ci/setup installs it)"

// A realistic series set: the daemon's health, and the fixture bundle under three configurations.
TEST(ExporterPeers, PromtoolAcceptsTheExposition) {
  REQUIRE_BINARY(testing::kPromtoolBinary);
  Exporter e(local_settings());
  e.set_state(DaemonState::kRunning);
  e.set_current_step("t1/6.12-eevdf/wakeup", 3, 9);
  e.set_next_run(std::chrono::system_clock::now() + 24h);
  e.count_started();
  for (const char* c : {"6.1-cfs", "6.12-eevdf", "running:6.18.44"}) e.publish(load_bundle(kBundle), c);
  const auto r = http_get(e.port(), "/metrics");
  ASSERT_EQ(r.status, 200);
  const auto out = testing::promtool_lint(r.body);
  EXPECT_EQ(out.code, 0) << out.out;
  EXPECT_EQ(out.out, "") << "promtool's lint findings:\n" << out.out;
  std::cout << "exposition: " << r.body.size() << " bytes, " << std::count(r.body.begin(), r.body.end(), '\n')
            << " lines\n";
}

TEST(ExporterPeers, PrometheusScrapesTheHeadlineSeries) {
  REQUIRE_BINARY(testing::kPrometheusBinary);
  Exporter e(local_settings());
  pid_t pid = 0;
  {
    testing::PrometheusServer prom({"127.0.0.1:" + std::to_string(e.port())});
    pid = prom.pid();
    ASSERT_TRUE(prom.wait_ready()) << prom.log();
    e.publish(load_bundle(kBundle), "6.12-eevdf");

    nlohmann::json result;
    const bool arrived = testing::wait_until(
        [&] {
          auto r = prom.query("schedlab_wakeup_latency_p99_seconds");
          if (r.status != 200) return false;
          result = nlohmann::json::parse(r.body)["data"]["result"];
          return !result.empty();
        },
        30s);
    ASSERT_TRUE(arrived) << prom.log();
    ASSERT_EQ(result.size(), 1u) << result.dump();
    const auto& metric = result[0]["metric"];
    EXPECT_EQ(metric["host"], "testhost");
    EXPECT_EQ(metric["class"], "testclass");
    EXPECT_EQ(metric["configuration"], "6.12-eevdf");
    EXPECT_EQ(metric["workload"], "wakeup");
    EXPECT_EQ(metric["instance_id"], "wakeup");
    EXPECT_EQ(metric["job"], "schedlab");
    EXPECT_EQ(metric["instance"], "127.0.0.1:" + std::to_string(e.port()));  // Prometheus's, not renamed ours
    // The bundle's latency_p99_us: 13700, 19600, 11700 -> median 13700 us.
    EXPECT_DOUBLE_EQ(std::stod(result[0]["value"][1].get<std::string>()), 0.0137);

    // The fleet-style question the histogram exists for: p99 over every instance and host's buckets.
    auto r = prom.query("histogram_quantile(0.99, sum by (le) (schedlab_wakeup_latency_seconds_bucket))");
    ASSERT_EQ(r.status, 200) << r.body;
    auto q = nlohmann::json::parse(r.body)["data"]["result"];
    ASSERT_EQ(q.size(), 1u) << r.body;
    const double p99 = std::stod(q[0]["value"][1].get<std::string>());
    // The repetitions' own p99s were 11.7 to 19.6 ms, so the pooled p99 lies in the (10 ms, 20 ms] bucket,
    // inside which histogram_quantile() interpolates.
    EXPECT_GT(p99, 0.01) << r.body;
    EXPECT_LE(p99, 0.02) << r.body;
  }
  // The server is gone with its object (stopped and reaped by ~PrometheusServer, as after a failed ASSERT).
  EXPECT_FALSE(testing::process_alive(pid)) << "prometheus " << pid << " outlived its test";
}

TEST(ExporterPeers, PushgatewayReceivesThePush) {
  REQUIRE_BINARY(testing::kPushgatewayBinary);
  testing::Pushgateway gateway;
  ASSERT_TRUE(gateway.wait_ready()) << gateway.log();
  Exporter e(push_only_settings(gateway));
  const Bundle b = load_bundle(kBundle);
  // A '/' in the configuration needs the Pushgateway's base64 spelling of the grouping key.
  for (const char* c : {"6.12-eevdf", "t1/running"}) {
    e.publish(b, c);
    ASSERT_EQ(e.push(b, c), "") << gateway.log();
  }
  const auto r = http_get(gateway.port(), "/metrics");
  ASSERT_EQ(r.status, 200);
  const auto samples = parse_exposition(r.body);
  for (const char* c : {"6.12-eevdf", "t1/running"}) {
    auto p99 = find_samples(samples, "schedlab_wakeup_latency_p99_seconds",
                            {{"job", "schedlab"},
                             {"host", "testhost"},
                             {"class", "testclass"},
                             {"configuration", c},
                             {"instance_id", "wakeup"}});
    ASSERT_EQ(p99.size(), 1u) << c << "\n" << r.body.substr(0, 4000);
    EXPECT_DOUBLE_EQ(p99[0].value, 0.0137);
    EXPECT_EQ(find_samples(samples, "schedlab_yield_yield_duration_seconds", {{"configuration", c}}).size(),
              2u);
    EXPECT_EQ(
        find_samples(samples, "schedlab_wakeup_latency_seconds_count", {{"configuration", c}}).at(0).value,
        560);
  }
}

// #30 item 6: the push PUTs the configuration's whole group, so what /metrics no longer has (an
// instance whose repetitions now all fail: its buckets and median) leaves the Pushgateway too, where a
// POST kept every family it did not resend; and a configuration evicted from the newest N is deleted
// there, where it used to stay for ever.
TEST(ExporterPeers, PushReplacesTheGroupAndDeletesEvictedConfigurations) {
  REQUIRE_BINARY(testing::kPushgatewayBinary);
  testing::Pushgateway gateway;
  ASSERT_TRUE(gateway.wait_ready()) << gateway.log();
  ExporterSettings s = push_only_settings(gateway);
  s.configurations_per_host = 1;
  Exporter e(s);
  auto on_gateway = [&](const std::string& family, const std::map<std::string, std::string>& match) {
    const auto r = http_get(gateway.port(), "/metrics");
    EXPECT_EQ(r.status, 200);
    return find_samples(parse_exposition(r.body), family, match);
  };
  const Bundle good = load_bundle(kBundle);
  e.publish(good, "c1");
  ASSERT_EQ(e.push(good, "c1"), "") << gateway.log();
  ASSERT_EQ(on_gateway("schedlab_wakeup_latency_seconds_count", {{"configuration", "c1"}}).size(), 1u);

  Bundle failing = good;
  for (auto& inst : failing.instances)
    if (inst.id == "wakeup")
      for (auto& r : inst.repetitions) r.status = status::kFailed;
  e.publish(failing, "c1");
  ASSERT_EQ(e.push(failing, "c1"), "") << gateway.log();
  EXPECT_TRUE(on_gateway("schedlab_wakeup_latency_seconds_count", {{"configuration", "c1"}}).empty());
  EXPECT_TRUE(on_gateway("schedlab_wakeup_latency_p99_seconds", {{"configuration", "c1"}}).empty());
  const auto failed = on_gateway("schedlab_repetitions",
                                 {{"configuration", "c1"}, {"instance_id", "wakeup"}, {"status", "failed"}});
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].value, 3);
  EXPECT_EQ(on_gateway("schedlab_yield_yield_duration_seconds", {{"configuration", "c1"}}).size(), 2u);

  // c2 pushes c1 out of the newest one: its group goes from the Pushgateway with the next push.
  e.publish(good, "c2");
  ASSERT_EQ(e.push(good, "c2"), "") << gateway.log();
  EXPECT_TRUE(on_gateway("push_time_seconds", {{"configuration", "c1"}}).empty());
  EXPECT_TRUE(on_gateway("schedlab_repetitions", {{"configuration", "c1"}}).empty());
  EXPECT_EQ(on_gateway("schedlab_wakeup_latency_seconds_count", {{"configuration", "c2"}}).size(), 1u);
}

}  // namespace
}  // namespace schedlab
