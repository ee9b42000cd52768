// The exporter's host class: the `class` label beside `host` on every headline, instance and change-point
// series (what a lab's dashboards select boxes by), and schedlab_daemon_info{host, class, shape, version}.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "collector/sysinfo/host_class.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "daemon/exporter/exporter.hpp"
#include "exposition.hpp"
#include "prometheus_server.hpp"
#include "schedlab/build_info.hpp"

namespace schedlab {
namespace {

using testing::find_samples;

// Recorded on the development VM (tests/fixtures/exporter/README.md): its host facts are that VM's.
const std::filesystem::path kBundle =
    std::filesystem::path(SCHEDLAB_FIXTURES_DIR) / "exporter" / "yield-wakeup.json";

HostClass fixture_class(const std::string& label) {
  std::ifstream in(kBundle);
  return host_class(nlohmann::json::parse(in).at("host"), label);
}

ExporterSettings settings(const HostClass& c) {
  ExporterSettings s;
  s.listen = "127.0.0.1:0";
  s.host = "box1";
  s.host_class = c;
  return s;
}

ExportedChange confirmed_change() {
  ExportedChange c;
  c.host = "box1";
  c.workload = "yield";
  c.metric = "ns_per_yield";
  c.instance_id = "yield.threads=2";
  c.configuration = "6.12-eevdf";
  c.direction = "worse";
  c.status = "confirmed";
  c.at = "2026-12-06T02:06:03Z";
  return c;
}

std::vector<testing::Sample> scrape(const Exporter& e) {
  auto r = testing::http_get(e.port(), "/metrics");
  EXPECT_EQ(r.status, 200);
  return testing::parse_exposition(r.body);
}

TEST(ExporterClass, EverySeriesWithAHostCarriesTheClass) {
  const auto labelled = fixture_class("lab-a");
  Exporter e(settings(labelled));
  e.publish(load_bundle(kBundle), "6.12-eevdf");
  e.set_change_points({confirmed_change()});
  const auto samples = scrape(e);
  int with_host = 0;
  std::set<std::string> families;
  for (const auto& s : samples) {
    if (!s.labels.count("host")) continue;
    ++with_host;
    families.insert(s.name);
    EXPECT_EQ(s.labels.count("class") ? s.labels.at("class") : "(none)", "lab-a") << s.name;
  }
  // Headlines, histograms, instance series, the publish time and the change points: all of them.
  for (const char* family :
       {"schedlab_yield_yield_duration_seconds", "schedlab_wakeup_latency_seconds_bucket",
        "schedlab_repetitions", "schedlab_instance_duration_seconds",
        "schedlab_headline_published_timestamp_seconds", "schedlab_change_points",
        "schedlab_change_point_timestamp_seconds", "schedlab_daemon_info"})
    EXPECT_TRUE(families.count(family)) << family << " lacks its host and class";
  EXPECT_GT(with_host, 50);

  const auto info = find_samples(samples, "schedlab_daemon_info");
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(info[0].labels, (std::map<std::string, std::string>{{"host", "box1"},
                                                                {"class", "lab-a"},
                                                                {"shape", "1s-2c-nosmt-1n-amd-epyc"},
                                                                {"version", build_info::kVersion}}));
  EXPECT_EQ(info[0].value, 1);
  // The daemon's own health has no host label, and gets no class either: queries join it on instance.
  EXPECT_EQ(find_samples(samples, "schedlab_daemon_state").at(0).labels.count("class"), 0u);
}

// Without a class from the daemon, the exporter takes this machine's, as it takes its hostname.
TEST(ExporterClass, DefaultsToThisMachinesShape) {
  const auto live = this_host_class(HostPaths::live(), "");
  ExporterSettings s = settings({});
  Exporter e(s);
  e.publish(load_bundle(kBundle), "running");
  const auto samples = scrape(e);
  EXPECT_FALSE(find_samples(samples, "schedlab_repetitions", {{"class", live.shape}}).empty());
  EXPECT_EQ(
      find_samples(samples, "schedlab_daemon_info", {{"class", live.shape}, {"shape", live.shape}}).size(),
      1u);
  // A label alone: the label names the class, the shape is still this machine's.
  s.host_class.label = "rack-a";
  Exporter labelled(s);
  EXPECT_EQ(
      find_samples(scrape(labelled), "schedlab_daemon_info", {{"class", "rack-a"}, {"shape", live.shape}})
          .size(),
      1u);
  s.host_class.label = "rack a";
  EXPECT_THROW(Exporter bad(s), InputError);
}

// Two boxes of one class published with the same configuration stay two series (host tells them apart);
// a box of another class is selected away by its class alone.
TEST(ExporterClass, ClassSelectsBoxesHostKeepsThemApart) {
  Exporter a(settings(fixture_class("")));
  ExporterSettings other = settings(fixture_class("big"));
  other.host = "box2";
  Exporter b(other);
  const Bundle bundle = load_bundle(kBundle);
  a.publish(bundle, "running");
  b.publish(bundle, "running");
  auto sa = find_samples(scrape(a), "schedlab_wakeup_latency_p99_seconds");
  auto sb = find_samples(scrape(b), "schedlab_wakeup_latency_p99_seconds");
  ASSERT_EQ(sa.size(), 1u);
  ASSERT_EQ(sb.size(), 1u);
  EXPECT_EQ(sa[0].labels.at("class"), "1s-2c-nosmt-1n-amd-epyc");
  EXPECT_EQ(sb[0].labels.at("class"), "big");
  EXPECT_NE(sa[0].labels, sb[0].labels);
}

}  // namespace
}  // namespace schedlab
