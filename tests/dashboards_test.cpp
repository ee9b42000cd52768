// The Grafana dashboards (dashboards/) against what they will be shown from: the daemon, through the
// binary, runs one repetition or two of every workload into a store (a "once" campaign); a second daemon
// on the same store republishes those bundles on a free port; a real Prometheus server scrapes it; then
// dashboards/check/check.mjs validates the dashboards (JSON Schema from @grafana/schema, the datasource
// lint, units) and runs every PromQL expression against that server, which must return data. Doctored
// copies prove the checker catches a bogus metric name, a hard-coded datasource uid, a missing unit, an
// unknown variable, a hardware mark on a metric the exporter does not export, a family missing from
// the exporter's catalogue, and legends that draw a sweep's two instances as one line. yield is a sweep
// (threads = [1, 2]): the check finds each of the bundles' instances as a series of its own and in the
// "instance" variables.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "daemon/exporter/exporter.hpp"
#include "tests/cli_util.hpp"
#include "tests/daemon_process.hpp"
#include "tests/prometheus_server.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::DaemonProcess;

const fs::path kSource = SCHEDLAB_SOURCE_DIR;
const fs::path kCheck = kSource / "dashboards" / "check";
const fs::path kNode = "/usr/bin/node";
const std::vector<std::string> kWorkloads = {"chat",     "fairness", "groups", "kernbench", "micro",
                                             "requests", "sdet",     "tbench", "wakeup",    "yield"};

// Small parameters: the point is one bundle per workload with every series the dashboards read.
constexpr const char* kWorkloadTables = R"(
[[workload]]
name = "yield"
repetitions = 2
params = { yields = 20000, duration_s = 0.1, threads = [1, 2] }
[[workload]]
name = "kernbench"
repetitions = 1
params = { files = 10 }
[[workload]]
name = "wakeup"
repetitions = 2
params = { duration_s = 0.2 }
[[workload]]
name = "tbench"
repetitions = 2
params = { duration_s = 0.3, warmup_s = 0.1 }
[[workload]]
name = "chat"
repetitions = 2
params = { rooms = 2, users = 4, messages = 20 }
[[workload]]
name = "micro"
repetitions = 2
params = { benchmarks = "pipe:same-cpu", iterations = 2000 }
[[workload]]
name = "requests"
repetitions = 2
params = { workers = 2, duration_s = 0.2 }
[[workload]]
name = "fairness"
repetitions = 2
params = { duration_s = 0.2, warmup_s = 0.05 }
[[workload]]
name = "sdet"
repetitions = 2
params = { users = 2, scripts = 2 }
[[workload]]
name = "groups"
repetitions = 2
params = { groups = 2, fds = 4, loops = 20 }
)";

std::string campaign(const fs::path& dir, const std::string& schedule, const std::string& listen) {
  return testing::campaign_header("dashboards", schedule, dir) +
         "settle_timeout_s = 0\ntimeout_s = 60\n[exporter]\nlisten = \"" + listen +
         "\"\nhost = \"ci-host\"\n" + kWorkloadTables;
}

testing::Outcome check(const std::string& args) {
  return testing::sh(kNode.string() + " " + (kCheck / "check.mjs").string() + " " + args);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A copy of dashboards/json/NAME in `dir` with every `from` replaced by `to` (there must be one).
fs::path doctored(const fs::path& dir, const std::string& name, const std::string& from,
                  const std::string& to) {
  static int copies = 0;
  std::string text = read_file(kSource / "dashboards" / "json" / name);
  EXPECT_GT(DaemonProcess::count(text, from), 0) << from << " not in " << name;
  for (auto p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size()))
    text.replace(p, from.size(), to);
  const fs::path out = dir / ("doctored-" + std::to_string(++copies) + "-" + name);
  std::ofstream(out) << text;
  return out;
}

std::string missing_tools() {
  for (const auto& p : {kNode, kCheck / "node_modules"})
    if (!fs::exists(p))
      return "no " + p.string() + " (ci/setup installs nodejs and runs npm ci --prefix dashboards/check)";
  return {};
}

// Without a server: the committed JSON is what generate.mjs writes, validates and passes the lint; doctored
// copies with a hard-coded datasource uid, a missing unit or a wrongly typed schemaVersion fail.
TEST(DashboardsStatic, SchemaLintAndUnitsCatchMistakes) {
  if (auto why = missing_tools(); !why.empty()) GTEST_SKIP() << why;
  const auto ok = check("");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("3 dashboards, "), std::string::npos) << ok.out;
  testing::TempDir dir;
  struct Case {
    std::string from, to, expect;
  };
  const std::vector<Case> cases = {
      {R"("uid": "${datasource}")", R"("uid": "PBFA97CFB590B2093")",
       R"(datasource {"type":"prometheus","uid":"PBFA97CFB590B2093"}, expected)"},
      {R"("unit": "dateTimeFromNow")", R"("unit": "")", "no fieldConfig.defaults.unit"},
      {R"("schemaVersion": 42)", R"("schemaVersion": "42")", "schema: /schemaVersion must be number"},
      {R"("type": "bargauge")", R"("typo": "bargauge")", "must have required property 'type'"},
  };
  for (const auto& c : cases) {
    const auto r = check(doctored(dir.path(), "lab-overview.json", c.from, c.to).string());
    EXPECT_EQ(r.code, 1) << c.to << "\n" << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.to << "\n" << r.out;
  }
  // Queries that forgot the host class would mix a lab's classes; the daemons' counters, which carry no
  // class, select it only through their schedlab_daemon_info join.
  const auto classless =
      check(doctored(dir.path(), "lab-overview.json", R"(class=~\"$class\", )", "").string());
  EXPECT_EQ(classless.code, 1) << classless.out;
  EXPECT_NE(classless.out.find(R"(selector {host=~"$host", configuration=~"$configuration"} does not select )"
                               R"(class=~"$class")"),
            std::string::npos)
      << classless.out;
  const auto unjoined =
      check(doctored(dir.path(), "lab-overview.json",
                     R"( * on (job, instance) group_left () schedlab_daemon_info{class=~\"$class\", )"
                     R"(host=~\"$host\"})",
                     "")
                .string());
  EXPECT_EQ(unjoined.code, 1) << unjoined.out;
  EXPECT_NE(unjoined.out.find(R"("Daemon steps" target A: no label selector)"), std::string::npos)
      << unjoined.out;
  // The change-point annotation with its time in seconds: Grafana would draw every marker in 1970.
  const auto seconds = check(doctored(dir.path(), "workload-detail.json", "} * 1000", "}").string());
  EXPECT_EQ(seconds.code, 1) << seconds.out;
  EXPECT_NE(seconds.out.find("annotation \"Change points\": useValueForTime reads the value as milliseconds"),
            std::string::npos)
      << seconds.out;
}

// The dashboards' table of workloads is the registry's: a workload registered (or a headline metric
// changed) without `schedlab workloads --json > dashboards/workloads.json` and a regeneration fails here,
// naming the command. Every registered workload is in it with at least one headline family.
TEST(DashboardsStatic, WorkloadTableIsTheRegistrys) {
  const auto listed = testing::schedlab("workloads --json 2>/dev/null");
  ASSERT_EQ(listed.code, 0) << listed.out;
  const auto registry = nlohmann::json::parse(listed.out);
  std::ifstream committed_file(kSource / "dashboards" / "workloads.json");
  ASSERT_TRUE(committed_file) << "no dashboards/workloads.json";
  const auto committed = nlohmann::json::parse(committed_file);
  EXPECT_EQ(committed, registry)
      << "dashboards/workloads.json is stale: run `build/schedlab workloads --json > "
         "dashboards/workloads.json && node dashboards/generate.mjs` and commit both";
  std::set<std::string> names;
  for (const auto& w : registry.at("workloads")) {
    names.insert(w.at("name").get<std::string>());
    int headlines = 0;
    for (const auto& m : w.at("metrics")) {
      if (!m.at("headline").get<bool>()) continue;
      ++headlines;
      EXPECT_EQ(
          m.at("family").get<std::string>().rfind("schedlab_" + w.at("name").get<std::string>() + "_", 0), 0u)
          << m.dump();
    }
    EXPECT_GE(headlines, 1) << w.at("name");
  }
  EXPECT_EQ(names, std::set<std::string>(kWorkloads.begin(), kWorkloads.end()));
}

// The daemon serving every workload's series, a real Prometheus scraping it, and every expression of every
// dashboard run against that server; then doctored copies that must fail there.
TEST(DashboardsPrometheus, EveryExpressionReturnsDataAndABogusMetricFails) {
  if (auto why = missing_tools(); !why.empty()) GTEST_SKIP() << why;
  if (!fs::exists(testing::kPrometheusBinary)) GTEST_SKIP() << "no " << testing::kPrometheusBinary;
  testing::TempDir tmp;
  const fs::path dir = tmp.path();
  std::ofstream(dir / "once.toml") << campaign(dir, "once", "");
  const int port = testing::free_port();
  // The change points a daemon exports after a campaign run (Exporter::set_change_points), served by an
  // exporter of their own: the campaign here has one run, which holds no change. Set once the daemon's
  // series say which configuration and instances there are.
  ExporterSettings changes_settings;
  changes_settings.listen = "127.0.0.1:0";
  changes_settings.host = "ci-host";
  Exporter changes(changes_settings);
  // Started first: it gets ready while the campaign runs.
  testing::PrometheusServer prom(
      {"127.0.0.1:" + std::to_string(port), "127.0.0.1:" + std::to_string(changes.port())});
  {
    DaemonProcess once(dir / "once.toml", dir / "once.log");
    ASSERT_EQ(once.wait(), 0) << once.log_text();
  }
  // A schedule whose only elapse is past: the daemon republishes the store's newest run and idles.
  std::ofstream(dir / "serve.toml") << campaign(dir, "2001-01-01 00:00:00",
                                                "127.0.0.1:" + std::to_string(port));
  DaemonProcess serve(dir / "serve.toml", dir / "serve.log");
  ASSERT_TRUE(prom.wait_ready()) << prom.log();
  // Polled, not slept: the first scrape lands seconds after Prometheus is ready.
  std::string last;
  const bool all = testing::wait_until(
      [&] {
        auto r = prom.query("count by (workload) (schedlab_repetitions{host=\"ci-host\"})");
        if (r.status != 200) return false;
        last = r.body;
        return nlohmann::json::parse(r.body)["data"]["result"].size() == kWorkloads.size();
      },
      std::chrono::seconds(30));
  ASSERT_TRUE(all) << "not every workload scraped: " << last << "\n" << serve.log_text() << prom.log();

  // A confirmed regression of the yield sweep's second instance, in the daemon's configuration, and a
  // suspected one of wakeup: the annotation queries of both dashboards must find them.
  const auto yield = prom.query(R"(schedlab_repetitions{host="ci-host", workload="yield", status="ok"})");
  ASSERT_EQ(yield.status, 200) << yield.body;
  const auto yield_series = nlohmann::json::parse(yield.body)["data"]["result"];
  ASSERT_FALSE(yield_series.empty()) << yield.body;
  const auto& labels = yield_series.back()["metric"];
  const std::string configuration = labels.at("configuration");
  changes.set_change_points(
      {{"ci-host", "wakeup", "latency_p99_us", "wakeup", "", configuration, "worse", "suspected",
        "2026-12-05T02:06:03Z", 0.03, -0.01, 0.07},
       {"ci-host", "yield", "ns_per_yield", labels.at("instance_id"), labels.at("params_hash"), configuration,
        "worse", "confirmed", "2026-12-06T02:06:03Z", 0.052, 0.031, 0.07}});
  ASSERT_TRUE(testing::wait_until(
      [&] {
        auto r = prom.query(R"(schedlab_change_point_timestamp_seconds{host="ci-host"})");
        return r.status == 200 && nlohmann::json::parse(r.body)["data"]["result"].size() == 2;
      },
      std::chrono::seconds(15)))
      << prom.query("schedlab_change_point_timestamp_seconds").body;

  const std::string server = "--prometheus http://127.0.0.1:" + std::to_string(prom.port()) + " --bundles " +
                             (dir / "bundles").string();
  const auto r = check(server);
  EXPECT_EQ(r.code, 0) << r.out;
  // "3 dashboards, 100 panels, 13 variables; 155 expressions run against URL: 149 returned data, 6
  // hardware-dependent accepted empty"
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.out, m,
                        std::regex(R"((\d+) dashboards, (\d+) panels, \d+ variables; (\d+) expressions run )"
                                   R"(against \S+: (\d+) returned data, (\d+) hardware-dependent)")))
      << r.out;
  EXPECT_EQ(std::stoi(m[1]), 3);
  EXPECT_GE(std::stoi(m[2]), 60);
  const int expressions = std::stoi(m[3]), with_data = std::stoi(m[4]), hardware = std::stoi(m[5]);
  EXPECT_EQ(with_data + hardware, expressions) << r.out;
  // Only IPC targets may be empty, and only where the bundles say the PMU is missing: at most one per
  // workload on the detail dashboard and two (A and B) on the A/B dashboard.
  EXPECT_LE(hardware, static_cast<int>(kWorkloads.size()) * 3) << r.out;
  // Every instance of the bundles (the yield sweep's two, one per other workload) is a series of its own.
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"((\d+) bundle instances each a series of its own)")))
      << r.out;
  EXPECT_EQ(std::stoi(m[1]), static_cast<int>(kWorkloads.size()) + 1) << r.out;
  std::cout << r.out;
  // Both dashboards' change-point annotations ran and found the changes.
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"((\d+) annotation queries, (\d+) returned data)")))
      << r.out;
  EXPECT_EQ(std::stoi(m[1]), 2) << r.out;
  EXPECT_EQ(std::stoi(m[2]), 2) << r.out;

  // Annotation queries fail like targets: a family one letter off marks nothing, a syntax error is an
  // error, and a label the title shows that the series lack would render empty on every marker.
  const std::string annotation = "schedlab_change_point_timestamp_seconds{";
  auto unmarked = check(
      server + " " +
      doctored(dir, "workload-detail.json", annotation, "schedlab_change_point_timestamp_second{").string());
  EXPECT_EQ(unmarked.code, 1) << unmarked.out;
  EXPECT_NE(unmarked.out.find("annotation \"Change points\": no data"), std::string::npos) << unmarked.out;
  auto invalid = check(server + " " + doctored(dir, "kernel-ab.json", "} * 1000", "} * * 1000").string());
  EXPECT_EQ(invalid.code, 1) << invalid.out;
  EXPECT_NE(invalid.out.find("annotation \"Change points\": /api/v1/query"), std::string::npos)
      << invalid.out;
  auto unlabelled =
      check(server + " " +
            doctored(dir, "workload-detail.json", "{{metric}} {{status}} {{size}}", "{{metric}} {{sizes}}")
                .string());
  EXPECT_EQ(unlabelled.code, 1) << unlabelled.out;
  EXPECT_NE(unlabelled.out.find("lacks the label(s) sizes it shows"), std::string::npos) << unlabelled.out;

  // A legend without the instance: the sweep's two yield instances drawn as one line, which the check
  // refuses.
  auto merged = check(server + " " +
                      doctored(dir, "workload-detail.json", "{{host}} {{configuration}} {{instance_id}}",
                               "{{host}} {{configuration}}")
                          .string());
  EXPECT_EQ(merged.code, 1) << merged.out;
  EXPECT_NE(merged.out.find("2 series share the legend \"ci-host "), std::string::npos) << merged.out;

  // One letter off: the exporter has no such family, Prometheus answers with nothing, the check fails.
  auto bogus = check(server + " " +
                     doctored(dir, "workload-detail.json", "schedlab_cpu_migrations_per_operation",
                              "schedlab_cpu_migrations_per_operaton")
                         .string());
  EXPECT_EQ(bogus.code, 1) << bogus.out;
  EXPECT_NE(bogus.out.find("no data"), std::string::npos) << bogus.out;
  EXPECT_NE(bogus.out.find("schedlab_cpu_migrations_per_operaton"), std::string::npos) << bogus.out;
  // The IPC family renamed to one the exporter's catalogue lacks: its hardware mark excuses nothing.
  auto unlisted = check(server + " " +
                        doctored(dir, "workload-detail.json", "schedlab_instructions_per_cycle",
                                 "schedlab_instructions_per_cycles")
                            .string());
  EXPECT_EQ(unlisted.code, 1) << unlisted.out;
  if (hardware > 0) {  // on a machine with a PMU the renamed family fails as plain "no data"
    EXPECT_NE(unlisted.out.find("not in the exporter catalogue: schedlab_instructions_per_cycles"),
              std::string::npos)
        << unlisted.out;
  }
  // A misspelt variable is not silently left in the query.
  auto typo = check(server + " " +
                    doctored(dir, "lab-overview.json", R"(configuration=~\"$configuration\")",
                             R"(configuration=~\"$configuraton\")")
                        .string());
  EXPECT_EQ(typo.code, 1) << typo.out;
  EXPECT_NE(typo.out.find("unknown template variable $configuraton"), std::string::npos) << typo.out;

  // A family that has data but that the exporter's catalogue does not document fails too.
  std::string catalogue = read_file(kSource / "daemon" / "exporter" / "README.md");
  const std::string row = "| `schedlab_instance_duration_seconds` |";
  ASSERT_NE(catalogue.find(row), std::string::npos);
  catalogue.replace(catalogue.find(row), row.size(), "| `schedlab_instance_duration` |");
  std::ofstream(dir / "catalogue.md") << catalogue;
  auto undocumented = check(server + " --catalogue " + (dir / "catalogue.md").string() + " " +
                            (kSource / "dashboards" / "json" / "lab-overview.json").string());
  EXPECT_EQ(undocumented.code, 1) << undocumented.out;
  EXPECT_NE(undocumented.out.find("schedlab_instance_duration_seconds is not in the exporter's catalogue"),
            std::string::npos)
      << undocumented.out;
  EXPECT_EQ(undocumented.out.find("no data"), std::string::npos) << undocumented.out;

  serve.terminate();
  EXPECT_EQ(serve.wait(), 0) << serve.log_text();
}

}  // namespace
}  // namespace schedlab
