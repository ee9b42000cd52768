// A lab as dashboards/prometheus/ ships it. promtool accepts prometheus.yml (with its targets file and the
// alert rules it loads) and federate.yml. A real Prometheus running prometheus.yml (its scrape interval cut
// to 1 s, its targets file listing this test's daemons) discovers three real daemons, each with its own
// campaign, host and host label; the dashboards' queries with the class variable set to one class return
// exactly that class's daemon. A second Prometheus running federate.yml answers the same through /federate.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tests/cli_util.hpp"
#include "tests/daemon_process.hpp"
#include "tests/prometheus_server.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using testing::DaemonProcess;
using Clock = std::chrono::steady_clock;

const fs::path kDashboards = fs::path(SCHEDLAB_SOURCE_DIR) / "dashboards";
const fs::path kShipped = kDashboards / "prometheus";

#define REQUIRE_BINARY(path) \
  if (!fs::exists(path)) GTEST_SKIP() << path << " is not installed (ci/setup installs it)"

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// `text` with its one `from` replaced: a shipped file adapted, and the test fails when the edit no longer
// applies rather than running something else.
std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not found";
  if (at == std::string::npos) return text;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << "'" << from << "' more than once";
  return text.replace(at, from.size(), to);
}

// The `data` of a Prometheus HTTP API answer, null when there is none.
json api(int port, const std::string& target) {
  const auto r = testing::http_get(port, target);
  const auto j = json::parse(r.body, nullptr, false);
  return r.status == 200 && j.is_object() && j.contains("data") ? j["data"] : json();
}
json instant(int port, const std::string& promql) {
  const auto data = api(port, "/api/v1/query?query=" + testing::url_encode(promql));
  return data.is_object() ? data["result"] : json::array();
}

// A box of the lab: its daemon, campaign, host and host label.
struct Box {
  std::string host, label;
  fs::path dir;
  int port = 0;
  std::unique_ptr<DaemonProcess> daemon;
  std::string target() const { return "127.0.0.1:" + std::to_string(port); }
  std::string campaign(const std::string& schedule, const std::string& listen) const {
    return testing::campaign_header("lab", schedule, dir) + "host_label = \"" + label +
           "\"\ncounters = false\nsettle_timeout_s = 0\ntimeout_s = 60\n[exporter]\nlisten = \"" + listen +
           "\"\nhost = \"" + host +
           "\"\n[[workload]]\nname = \"yield\"\nrepetitions = 2\nparams = { yields = 20000 }\n";
  }
};

// A dashboard's variables and targets, with variables substituted as Grafana does for Prometheus.
class Dashboard {
 public:
  explicit Dashboard(const std::string& file) {
    std::ifstream in(kDashboards / "json" / file);
    json_ = json::parse(in);
  }
  std::string variable_query(const std::string& name) const {
    for (const auto& v : json_["templating"]["list"])
      if (v["name"] == name) return v["query"];
    ADD_FAILURE() << "no variable " << name;
    return "";
  }
  // The first target expression starting with `prefix`.
  std::string expr(const std::string& prefix) const {
    for (const auto& p : json_["panels"])
      for (const auto& t : p.value("targets", json::array()))
        if (t["expr"].get<std::string>().rfind(prefix, 0) == 0) return t["expr"];
    ADD_FAILURE() << "no target starting with " << prefix;
    return "";
  }
  // label_values(SELECTOR, LABEL) of variable `name`, run against the server, the values set so far
  // substituted: what Grafana lists.
  std::vector<std::string> values(int port, const std::string& name,
                                  const std::map<std::string, std::string>& set) const {
    std::smatch m;
    const std::string q = substitute(variable_query(name), set);
    if (!std::regex_match(q, m, std::regex(R"(label_values\((?:(.*),\s*)?(\w+)\))"))) {
      ADD_FAILURE() << "variable " << name << ": " << q;
      return {};
    }
    std::string target = "/api/v1/label/" + m[2].str() + "/values";
    if (m[1].matched) target += "?match[]=" + testing::url_encode(m[1].str());
    std::vector<std::string> out;
    for (const auto& v : api(port, target)) out.push_back(v.get<std::string>());
    return out;
  }
  static std::string substitute(const std::string& text, const std::map<std::string, std::string>& set) {
    std::string out;
    std::smatch m;
    auto from = text.cbegin();
    static const std::regex kVariable(R"(\$(\w+))");
    while (std::regex_search(from, text.cend(), m, kVariable)) {
      out.append(from, m[0].first);
      const auto it = set.find(m[1]);
      EXPECT_NE(it, set.end()) << "variable $" << m[1] << " not set, in " << text;
      out += it == set.end() ? m[0].str() : it->second;
      from = m[0].second;
    }
    return out.append(from, text.cend());
  }

 private:
  json json_;
};

// A multi-value variable's "All" as Grafana writes it into PromQL: (a|b|c), each regex metacharacter
// escaped by a backslash, itself escaped inside the query's double quotes (6\\.18 for 6.18).
std::string all_of(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) {
    out += out.empty() ? "(" : "|";
    for (char c : v) {
      if (std::string_view("\\^$*+?.()|[]{}").find(c) != std::string_view::npos) out += "\\\\";
      out += c;
    }
  }
  return out + ")";
}

std::set<std::string> label_of(const json& series, const std::string& label) {
  std::set<std::string> out;
  for (const auto& s : series) out.insert(s["metric"].value(label, "(none)"));
  return out;
}

TEST(PrometheusLab, PromtoolChecksTheShippedConfigs) {
  REQUIRE_BINARY(testing::kPromtoolBinary);
  const auto lab = testing::sh(testing::kPromtoolBinary.string() + " check config " +
                               (kShipped / "prometheus.yml").string());
  EXPECT_EQ(lab.code, 0) << lab.out;
  // It read the targets file (a missing one is only a warning) and loaded the alert rules.
  EXPECT_EQ(lab.out.find("WARNING"), std::string::npos) << lab.out;
  EXPECT_NE(lab.out.find("SUCCESS: 2 rules found"), std::string::npos) << lab.out;
  const auto federate = testing::sh(testing::kPromtoolBinary.string() + " check config " +
                                    (kShipped / "federate.yml").string());
  EXPECT_EQ(federate.code, 0) << federate.out;
  // The check can fail: a targets file whose targets are a string, not a list.
  testing::TempDir tmp;
  fs::create_directories(tmp.path() / "prometheus");
  fs::copy(kShipped / "prometheus.yml", tmp.path() / "prometheus");
  fs::copy(kDashboards / "alerts", tmp.path() / "alerts");
  testing::spit(tmp.path() / "prometheus" / "schedlab-targets.json", R"([{"targets": "box1:9464"}])");
  const auto bad = testing::sh(testing::kPromtoolBinary.string() + " check config " +
                               (tmp.path() / "prometheus" / "prometheus.yml").string());
  EXPECT_NE(bad.code, 0) << bad.out;
  EXPECT_NE(bad.out.find("schedlab-targets.json"), std::string::npos) << bad.out;
}

TEST(PrometheusLab, ThreeDaemonsFoundByFileDiscoveryAndSelectedByClass) {
  REQUIRE_BINARY(testing::kPrometheusBinary);
  testing::TempDir tmp;
  const auto t0 = Clock::now();
  {
    std::vector<Box> boxes(3);
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      boxes[i].host = "box" + std::to_string(i + 1);
      boxes[i].label = std::string("rack-") + static_cast<char>('a' + i);
      boxes[i].dir = tmp.path() / boxes[i].host;
      fs::create_directories(boxes[i].dir);
    }
    // Each box's campaign runs once (the three at a time), then a daemon on the same store republishes
    // the run and idles, serving /metrics on a port of its own choosing: kept up to be scraped.
    for (auto& b : boxes) {
      testing::spit(b.dir / "once.toml", b.campaign("once", ""));
      b.daemon = std::make_unique<DaemonProcess>(b.dir / "once.toml", b.dir / "once.log");
    }
    for (auto& b : boxes) ASSERT_EQ(b.daemon->wait(), 0) << b.daemon->log_text();
    // Each step's bundle carries its box's label, which a store's --host selects the class by.
    for (const auto& b : boxes) {
      int labelled = 0;
      for (const auto& e : fs::recursive_directory_iterator(b.dir / "bundles"))
        if (e.path().extension() == ".json") {
          std::ifstream in(e.path());
          const auto bundle = json::parse(in);
          EXPECT_EQ(bundle["host"].value("label", ""), b.label) << e.path();
          ++labelled;
        }
      EXPECT_GT(labelled, 0) << "no bundle under " << b.dir / "bundles";
    }
    for (auto& b : boxes) {
      testing::spit(b.dir / "serve.toml", b.campaign("2001-01-01 00:00:00", "127.0.0.1:0"));
      b.daemon = std::make_unique<DaemonProcess>(b.dir / "serve.toml", b.dir / "serve.log");
    }
    for (auto& b : boxes) {
      ASSERT_TRUE(b.daemon->wait_for_log("the schedule has no further elapse", 1, 60))
          << b.daemon->log_text();
      std::smatch m;
      const std::string log = b.daemon->log_text();
      ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(metrics on 127\.0\.0\.1:0 \(port (\d+)\))")))
          << log;
      b.port = std::stoi(m[1]);
      EXPECT_NE(log.find("host class " + b.label + " (shape "), std::string::npos) << log;
    }
    const double daemons_s = seconds_since(t0);

    // The shipped layout: prometheus.yml beside its targets file, the alert rules in ../alerts. The
    // targets file is the shipped one with each group's targets replaced by a daemon's address.
    const fs::path conf = tmp.path() / "dashboards" / "prometheus";
    fs::create_directories(conf);
    fs::copy(kDashboards / "alerts", tmp.path() / "dashboards" / "alerts");
    testing::spit(conf / "prometheus.yml", replace_once(testing::slurp(kShipped / "prometheus.yml"),
                                                        "scrape_interval: 15s", "scrape_interval: 1s"));
    auto targets = json::parse(testing::slurp(kShipped / "schedlab-targets.json"));
    ASSERT_EQ(targets.size(), boxes.size()) << targets.dump();
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      ASSERT_EQ(targets[i]["labels"].value("lab", ""), "lab1") << targets.dump();
      targets[i]["targets"] = json::array({boxes[i].target()});
    }
    testing::spit(conf / "schedlab-targets.json", targets.dump(2));

    const auto prom_start = Clock::now();
    testing::PrometheusServer prom(testing::WithConfigFile{}, conf / "prometheus.yml");
    ASSERT_TRUE(prom.wait_ready()) << prom.log();
    const double ready_s = seconds_since(prom_start);
    json active;
    const bool up = testing::wait_until(
        [&] {
          active = api(prom.port(), "/api/v1/targets?state=active")["activeTargets"];
          int n = 0;
          for (const auto& t : active) n += t["health"] == "up";
          return n == 3;
        },
        30s);
    ASSERT_TRUE(up) << active.dump(1) << prom.log();
    const double up_s = seconds_since(prom_start);
    std::set<std::string> instances;
    for (const auto& t : active) {
      instances.insert(t["labels"]["instance"]);
      EXPECT_EQ(t["labels"]["job"], "schedlab") << t.dump();
      EXPECT_EQ(t["labels"].value("lab", ""), "lab1") << t.dump();
    }
    EXPECT_EQ(instances, (std::set<std::string>{boxes[0].target(), boxes[1].target(), boxes[2].target()}));

    // Every box's series are in once its target is up (the daemon republished before idling), and the
    // class variable lists the three labels.
    const Dashboard overview("lab-overview.json");
    ASSERT_TRUE(testing::wait_until(
        [&] { return instant(prom.port(), "schedlab_yield_yield_duration_seconds").size() == 3; }, 10s))
        << instant(prom.port(), "schedlab_yield_yield_duration_seconds").dump();
    const auto classes = overview.values(prom.port(), "class", {});
    EXPECT_EQ(std::set<std::string>(classes.begin(), classes.end()),
              (std::set<std::string>{"rack-a", "rack-b", "rack-c"}));

    // The dashboard's chain for one class: its hosts, their configurations, then the panels' queries.
    const std::string headline = overview.expr("schedlab_yield_yield_duration_seconds{");
    const std::string steps = overview.expr("sum by (instance) (schedlab_steps_started_total");
    auto choose = [&](int port, const std::string& cls) {
      std::map<std::string, std::string> set{{"class", cls}};
      set["host"] = all_of(overview.values(port, "host", set));
      set["configuration"] = all_of(overview.values(port, "configuration", set));
      return set;
    };
    auto check_classes = [&](int port, const std::string& server) {
      const auto all = choose(port, all_of(classes));
      for (const auto& b : boxes) {
        const auto chained = choose(port, b.label);
        EXPECT_EQ(chained.at("host"), "(" + b.host + ")") << server << ": hosts of class " << b.label;
        // As Grafana chains the variables (the class's hosts only), and with every host of the lab
        // selected: the panels' own class matcher must keep the other classes' boxes out.
        auto every_host = all;
        every_host["class"] = b.label;
        for (const auto& set : {chained, every_host}) {
          const auto series = instant(port, Dashboard::substitute(headline, set));
          ASSERT_EQ(series.size(), 1u)
              << server << " " << b.label << ", hosts " << set.at("host") << ": " << series.dump();
          const auto& labels = series[0]["metric"];
          EXPECT_EQ(labels.value("host", ""), b.host) << server << " " << labels.dump();
          EXPECT_EQ(labels.value("class", ""), b.label) << server << " " << labels.dump();
          EXPECT_EQ(labels.value("instance", ""), b.target()) << server << " " << labels.dump();
          EXPECT_EQ(labels.value("lab", ""), "lab1") << server << " " << labels.dump();
          // The daemons' own counters carry no class: the join on schedlab_daemon_info selects them.
          const auto counted = instant(port, Dashboard::substitute(steps, set));
          EXPECT_EQ(label_of(counted, "instance"), std::set<std::string>{b.target()})
              << server << " " << b.label << ", hosts " << set.at("host") << ": " << counted.dump();
        }
      }
      // All three classes: the three boxes.
      EXPECT_EQ(label_of(instant(port, Dashboard::substitute(headline, all)), "host"),
                (std::set<std::string>{"box1", "box2", "box3"}))
          << server;
    };
    check_classes(prom.port(), "lab");

    // A second lab's Prometheus federating this one, as federate.yml ships (interval cut to 1 s).
    const fs::path federation = tmp.path() / "federate";
    std::string federate = replace_once(testing::slurp(kShipped / "federate.yml"), "scrape_interval: 15s",
                                        "scrape_interval: 1s");
    federate =
        replace_once(federate, "prometheus.lab1.example:9090", "127.0.0.1:" + std::to_string(prom.port()));
    testing::spit(federation / "federate.yml", federate);
    const auto federate_start = Clock::now();
    testing::PrometheusServer second(testing::WithConfigFile{}, federation / "federate.yml");
    ASSERT_TRUE(second.wait_ready()) << second.log();
    ASSERT_TRUE(testing::wait_until(
        [&] {
          return instant(second.port(), R"(schedlab_daemon_info{job="schedlab", lab="lab1"})").size() == 3;
        },
        30s))
        << instant(second.port(), "schedlab_daemon_info").dump() << second.log();
    const double federated_s = seconds_since(federate_start);
    check_classes(second.port(), "federated");

    std::cout << "lab: 3 daemons ran and serve in " << daemons_s << " s; Prometheus ready " << ready_s
              << " s after its start, 3 targets up at " << up_s << " s; federated series at " << federated_s
              << " s after the second Prometheus started\n";
    for (auto& b : boxes) {
      b.daemon->terminate();
      EXPECT_EQ(b.daemon->wait(), 0) << b.daemon->log_text();
    }
  }
  // Daemons, their steps and both Prometheus servers: all reaped (this test's descendants only).
  EXPECT_TRUE(testing::descendant_pids().empty());
}

}  // namespace
}  // namespace schedlab
