// The exporter and `schedlab history` downstream of the daemon, each through the binary: a campaign with a
// sweep keeps its instances apart in the store, on /metrics (scraped by a real Prometheus) and in
// history; the plan's size is exported from start-up; a push-only daemon pushes to a real Pushgateway;
// an exporter error after a committed step is logged and counted, and the daemon carries on; an instance
// removed from the campaign leaves /metrics; history reads without creating anything.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/bundle_io.hpp"
#include "daemon/store/store.hpp"
#include "tests/cli_util.hpp"
#include "tests/daemon_process.hpp"
#include "tests/exposition.hpp"
#include "tests/prometheus_server.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::DaemonProcess;
using testing::find_samples;
using testing::http_get;
using testing::parse_exposition;

#define REQUIRE_BINARY(path) \
  if (!fs::exists(path)) GTEST_SKIP() << path << " is not installed (ci/setup installs it)"

// A quiet yield sweep (threads = [1, 2], short yields): two steps, one per instance.
std::string sweep_campaign(const fs::path& dir, const std::string& schedule, const std::string& exporter,
                           const std::string& threads = "[1, 2]") {
  return testing::campaign_header("sweep", schedule, dir) +
         "counters = false\nsettle_timeout_s = 0\ntimeout_s = 60\n[exporter]\n" + exporter +
         "\nhost = \"ci-host\"\n[[workload]]\nname = \"yield\"\nrepetitions = 2\nparams = { yields = 20000, "
         "threads = " +
         threads + " }\n";
}

std::string listen_on(int port) {
  return "listen = \"127.0.0.1:" + std::to_string(port) + "\"";
}

std::string store_url(const fs::path& dir) {
  return "sqlite://" + (dir / "store.db").string();
}

// The recorded steps' bundles of a run (0: the store's last), by instance id.
std::map<std::string, Bundle> recorded_bundles(const fs::path& dir, std::int64_t run_id = 0) {
  auto store = open_store(store_url(dir));
  std::map<std::string, Bundle> out;
  if (run_id == 0) {
    auto run = store->last_run("sweep");
    if (!run) return out;
    run_id = run->id;
  }
  for (const auto& [key, step] : store->steps(run_id)) {
    if (step.bundle_path.empty()) continue;
    auto b = load_bundle(step.bundle_path);
    for (const auto& in : b.instances) out.emplace(in.id, b);
  }
  return out;
}

double median_ns_per_yield(const Instance& in) {
  std::vector<double> v;
  for (const auto& r : in.repetitions)
    if (r.ok()) v.push_back(r.metrics.at("ns_per_yield").value);
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// As history prints a median ("{:>14.6g}").
std::string fmt_median(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

// /metrics of a daemon, once it answers.
std::vector<testing::Sample> scrape_when_up(int port, DaemonProcess& d) {
  std::vector<testing::Sample> out;
  testing::wait_until(
      [&] {
        if (d.exited()) return true;
        auto r = http_get(port, "/metrics");
        if (r.status != 200) return false;
        out = parse_exposition(r.body);
        return true;
      },
      20s);
  return out;
}

// #28 item 1: the sweep's two steps record two instances (yield.threads=1 and =2, with their parameters'
// hashes) in the store, two series on /metrics as Prometheus scrapes them, and two histories. They were
// one: every step ran `run --workload yield`, recorded as instance "yield", and the exporter and history
// keyed on that id alone.
TEST(ExporterDaemon, SweepInstancesStayApartInStoreMetricsAndHistory) {
  REQUIRE_BINARY(testing::kPrometheusBinary);
  testing::TempDir tmp;
  const fs::path dir = tmp.path();
  const int port = testing::free_port();
  testing::PrometheusServer prom({"127.0.0.1:" + std::to_string(port)});
  std::ofstream(dir / "once.toml") << sweep_campaign(dir, "once", "listen = \"\"");
  {
    DaemonProcess once(dir / "once.toml", dir / "once.log");
    ASSERT_EQ(once.wait(), 0) << once.log_text();
  }
  // The store: one instance per step, each with its own id and parameters' hash.
  const auto bundles = recorded_bundles(dir);
  ASSERT_EQ(bundles.size(), 2u);
  ASSERT_TRUE(bundles.count("yield.threads=1") && bundles.count("yield.threads=2"));
  std::map<std::string, const Instance*> instances;
  for (const auto& [id, b] : bundles) instances[id] = &b.instances.at(0);
  EXPECT_EQ(instances["yield.threads=1"]->params.at("threads"), 1);
  EXPECT_EQ(instances["yield.threads=2"]->params.at("threads"), 2);
  EXPECT_NE(instances["yield.threads=1"]->params_hash, instances["yield.threads=2"]->params_hash);

  // A daemon on the same store republishes the run (a schedule whose only elapse is past), scraped.
  std::ofstream(dir / "serve.toml") << sweep_campaign(dir, "2001-01-01 00:00:00", listen_on(port));
  DaemonProcess serve(dir / "serve.toml", dir / "serve.log");
  ASSERT_TRUE(prom.wait_ready()) << prom.log();
  nlohmann::json result;
  const bool scraped = testing::wait_until(
      [&] {
        auto r = prom.query("schedlab_yield_yield_duration_seconds{host=\"ci-host\"}");
        if (r.status != 200) return false;
        result = nlohmann::json::parse(r.body)["data"]["result"];
        return result.size() >= 2;
      },
      30s);
  ASSERT_TRUE(scraped) << result.dump() << "\n" << serve.log_text() << prom.log();
  ASSERT_EQ(result.size(), 2u) << result.dump();
  for (const auto& series : result) {
    const auto id = series["metric"]["instance_id"].get<std::string>();
    ASSERT_TRUE(instances.count(id)) << series.dump();
    EXPECT_EQ(series["metric"]["params_hash"], instances[id]->params_hash) << series.dump();
    EXPECT_DOUBLE_EQ(std::stod(series["value"][1].get<std::string>()),
                     median_ns_per_yield(*instances[id]) * 1e-9)
        << id;
  }
  serve.terminate();
  EXPECT_EQ(serve.wait(), 0) << serve.log_text();

  // history: one line per instance, with its parameters' hash; --instance picks one, by id or hash.
  const std::string history =
      "history --workload yield --metric ns_per_yield --store " + store_url(dir) + " --instance ";
  auto all = testing::schedlab("history --workload yield --metric ns_per_yield --store " + store_url(dir));
  ASSERT_EQ(all.code, 0) << all.out;
  for (const auto& [id, in] : instances) {
    EXPECT_EQ(DaemonProcess::count(all.out, "  " + id + " "), 1) << all.out;  // its instance column
    EXPECT_EQ(DaemonProcess::count(all.out, in->params_hash), 1) << all.out;
    for (const auto& key : {id, in->params_hash, in->params_hash.substr(0, 6)}) {
      auto one = testing::schedlab(history + "'" + key + "'");
      ASSERT_EQ(one.code, 0) << key << "\n" << one.out;
      EXPECT_EQ(DaemonProcess::count(one.out, "  yield.threads="), 1) << key << "\n" << one.out;
      EXPECT_NE(one.out.find(id), std::string::npos) << key << "\n" << one.out;
      EXPECT_NE(one.out.find(fmt_median(median_ns_per_yield(*in))), std::string::npos) << one.out;
    }
  }
  auto unknown = testing::schedlab(history + "yield.threads=3");
  EXPECT_EQ(unknown.code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("known: yield.threads=1 (params " + instances["yield.threads=1"]->params_hash),
            std::string::npos)
      << unknown.out;
}

// #30 item 6: an instance removed from the campaign (threads = [1] now) leaves /metrics when the daemon
// starts, though the store's last run, which the daemon republishes, still holds it.
TEST(ExporterDaemon, AnInstanceRemovedFromTheCampaignLeavesMetrics) {
  testing::TempDir tmp;
  const fs::path dir = tmp.path();
  std::ofstream(dir / "once.toml") << sweep_campaign(dir, "once", "listen = \"\"");
  {
    DaemonProcess once(dir / "once.toml", dir / "once.log");
    ASSERT_EQ(once.wait(), 0) << once.log_text();
  }
  for (const auto& [threads, expected] : std::vector<std::pair<std::string, std::set<std::string>>>{
           {"[1, 2]", {"yield.threads=1", "yield.threads=2"}}, {"[1]", {"yield.threads=1"}}}) {
    const int port = testing::free_port();
    std::ofstream(dir / "serve.toml") << sweep_campaign(dir, "2001-01-01 00:00:00", listen_on(port), threads);
    // A log of its own: the line waited for must be this daemon's.
    DaemonProcess serve(dir / "serve.toml", dir / ("serve-" + std::to_string(port) + ".log"));
    ASSERT_TRUE(serve.wait_for_log("the schedule has no further elapse", 1, 60)) << serve.log_text();
    std::set<std::string> ids;
    for (const auto& s :
         find_samples(scrape_when_up(port, serve), "schedlab_repetitions", {{"status", "ok"}}))
      ids.insert(s.labels.at("instance_id"));
    EXPECT_EQ(ids, expected) << threads;
    serve.terminate();
    EXPECT_EQ(serve.wait(), 0) << serve.log_text();
  }
}

// #28 item 10: the plan's size is on /metrics from start-up, not 0 until the first step (campaign
// check says 2 steps for this plan).
TEST(ExporterDaemon, PlanStepsFromStartUp) {
  testing::TempDir tmp;
  const fs::path dir = tmp.path();
  const int port = testing::free_port();
  std::ofstream(dir / "idle.toml") << sweep_campaign(dir, "2001-01-01 00:00:00", listen_on(port));
  auto check = testing::schedlab("campaign check " + (dir / "idle.toml").string());
  ASSERT_EQ(check.code, 0) << check.out;
  DaemonProcess d(dir / "idle.toml", dir / "idle.log");
  ASSERT_TRUE(d.wait_for_log("the schedule has no further elapse", 1, 60)) << d.log_text();
  const auto samples = scrape_when_up(port, d);
  ASSERT_EQ(find_samples(samples, "schedlab_daemon_plan_steps").size(), 1u) << d.log_text();
  EXPECT_EQ(find_samples(samples, "schedlab_daemon_plan_steps")[0].value, 2);
  EXPECT_EQ(find_samples(samples, "schedlab_steps_started_total").at(0).value, 0);
  EXPECT_EQ(find_samples(samples, "schedlab_daemon_state", {{"state", "idle"}}).at(0).value, 1);
  d.terminate();
  EXPECT_EQ(d.wait(), 0) << d.log_text();
}

// #30 item 4: `listen = ""` with a Pushgateway is push-only, as documented: the daemon pushes each
// step's series (it created no exporter at all, so it pushed nothing).
TEST(ExporterDaemon, PushOnlyDaemonPushes) {
  REQUIRE_BINARY(testing::kPushgatewayBinary);
  testing::Pushgateway gateway;
  ASSERT_TRUE(gateway.wait_ready()) << gateway.log();
  testing::TempDir tmp;
  const fs::path dir = tmp.path();
  std::ofstream(dir / "push.toml") << sweep_campaign(
      dir, "once", "listen = \"\"\npushgateway = \"" + gateway.url() + "\"");
  DaemonProcess d(dir / "push.toml", dir / "push.log");
  ASSERT_EQ(d.wait(), 0) << d.log_text();
  EXPECT_EQ(DaemonProcess::count(d.log_text(), "push to"), 0) << d.log_text();
  const auto r = http_get(gateway.port(), "/metrics");
  ASSERT_EQ(r.status, 200);
  const auto pushed = find_samples(parse_exposition(r.body), "schedlab_yield_yield_duration_seconds",
                                   {{"job", "schedlab"}, {"host", "ci-host"}});
  std::set<std::string> ids;
  for (const auto& s : pushed) ids.insert(s.labels.at("instance_id"));
  EXPECT_EQ(ids, (std::set<std::string>{"yield.threads=1", "yield.threads=2"})) << r.body.substr(0, 3000);
}

// #30 item 5: an exporter error after a step is committed is logged and counted on /metrics, and the
// daemon carries on (it threw out of the daemon, which then exited after every step). The error is the
// fault seam's (SCHEDLAB_DAEMON_PAUSE=publish-error), thrown where publish's own errors come out.
TEST(ExporterDaemon, PublishErrorIsLoggedCountedAndSurvived) {
  testing::TempDir tmp;
  const fs::path dir = tmp.path();
  const int port = testing::free_port();
  std::ofstream(dir / "every5s.toml") << sweep_campaign(dir, "*:*:0/5", listen_on(port));
  DaemonProcess d(dir / "every5s.toml", dir / "d.log", "publish-error");
  ASSERT_TRUE(d.wait_for_log("recorded, but not published", 2, 90)) << d.log_text();
  ASSERT_TRUE(d.wait_for_log("run 1 finished", 1, 60)) << d.log_text();
  ASSERT_FALSE(d.exited()) << d.log_text();
  const auto samples = scrape_when_up(port, d);
  EXPECT_GE(find_samples(samples, "schedlab_exporter_errors_total", {{"operation", "publish"}}).at(0).value,
            2);
  EXPECT_GE(find_samples(samples, "schedlab_steps_finished_total").at(0).value, 2);
  EXPECT_EQ(find_samples(samples, "schedlab_steps_failed_total").at(0).value, 0);
  // Both steps recorded in the store: nothing lost but their series.
  EXPECT_EQ(recorded_bundles(dir, 1).size(), 2u);
  d.terminate();
  EXPECT_EQ(d.wait(), 0) << d.log_text();
}

// The option the daemon names its steps' instances with: one --workload, a sweep appending its values.
TEST(RunInstanceId, NamesTheOneInstanceAndASweepAppendsItsValues) {
  testing::TempDir tmp;
  for (const char* bad : {"--instance-id x", "--workload yield,wakeup --instance-id x"}) {
    auto o = testing::schedlab(std::string("run ") + bad + " --out " + tmp.path().string());
    EXPECT_EQ(o.code, 2) << bad << "\n" << o.out;
    EXPECT_NE(o.out.find("--instance-id x: names one instance"), std::string::npos) << o.out;
  }
  EXPECT_TRUE(testing::files_in(tmp.path()).empty());
  auto o = testing::schedlab(
      "run --workload yield --instance-id mine --param yield.yields=20000 --param "
      "'yield.threads=[1,2]' --repetitions 1 --no-counters --settle-timeout 0 --out " +
      tmp.path().string());
  ASSERT_EQ(o.code, 0) << o.out;
  const auto files = testing::files_in(tmp.path());
  ASSERT_EQ(files.size(), 1u) << o.out;
  std::set<std::string> ids;
  for (const auto& in : load_bundle(files[0]).instances) ids.insert(in.id);
  EXPECT_EQ(ids, (std::set<std::string>{"mine.threads=1", "mine.threads=2"}));
}

// #28 item 7: history is a reader. A missing store is "no store at PATH" (exit 2) and nothing is
// created, neither the file nor its directory, with --store or the default (~/.local/share/schedlab);
// unknown names are exit 2 with the known ones listed. The store: `store rebuild` of a real fixture.
TEST(History, ReadsOnlyAndRefusesUnknownNames) {
  testing::TempDir tmp;
  const fs::path dir = tmp.path();
  const std::string query = "history --workload yield --metric ns_per_yield";
  auto missing = testing::schedlab(query + " --store sqlite://" + (dir / "sub" / "store.db").string());
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find("no store at " + (dir / "sub" / "store.db").string()), std::string::npos)
      << missing.out;
  EXPECT_FALSE(fs::exists(dir / "sub"));
  if (::geteuid() == 0 && !fs::exists("/var/lib/schedlab")) {  // root's default: looked at, never made
    auto by_default = testing::schedlab(query);
    EXPECT_EQ(by_default.code, 2) << by_default.out;
    EXPECT_NE(by_default.out.find("no store at /var/lib/schedlab/store.db"), std::string::npos)
        << by_default.out;
    EXPECT_FALSE(fs::exists("/var/lib/schedlab")) << "history created /var/lib/schedlab";
  }
  if (::geteuid() != 0) {
    auto by_default = testing::sh("HOME=" + dir.string() + " " + SCHEDLAB_BINARY + " " + query);
    EXPECT_EQ(by_default.code, 2) << by_default.out;
    EXPECT_NE(by_default.out.find("no store at " + (dir / ".local/share/schedlab/store.db").string()),
              std::string::npos)
        << by_default.out;
    EXPECT_FALSE(fs::exists(dir / ".local")) << "history created a directory";
  }

  const std::string store = "sqlite://" + (dir / "s.db").string();
  auto rebuilt =
      testing::schedlab("store rebuild " + std::string(SCHEDLAB_FIXTURES_DIR) + "/exporter --store " + store);
  ASSERT_EQ(rebuilt.code, 0) << rebuilt.out;
  auto ok = testing::schedlab(query + " --store " + store);
  EXPECT_EQ(ok.code, 0) << ok.out;
  auto workload = testing::schedlab("history --workload yeild --metric ns_per_yield --store " + store);
  EXPECT_EQ(workload.code, 2) << workload.out;
  EXPECT_NE(workload.out.find("unknown workload 'yeild' (known: "), std::string::npos) << workload.out;
  EXPECT_NE(workload.out.find("yield"), std::string::npos) << workload.out;
  auto metric = testing::schedlab("history --workload yield --metric ns_per_yeild --store " + store);
  EXPECT_EQ(metric.code, 2) << metric.out;
  EXPECT_NE(metric.out.find("--metric ns_per_yeild: not a metric of yield (known: "), std::string::npos)
      << metric.out;
  EXPECT_NE(metric.out.find("ns_per_yield"), std::string::npos) << metric.out;
  // A known name with nothing in the store is not bad input: the work ran, and found nothing.
  auto none = testing::schedlab("history --workload kernbench --metric elapsed_s --store " + store);
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_NE(none.out.find("no ok repetition of kernbench.elapsed_s"), std::string::npos) << none.out;
  // A file that is not a store is bad input too, and stays as it was.
  std::ofstream(dir / "notes.db") << "not sqlite\n";
  auto garbage = testing::schedlab(query + " --store sqlite://" + (dir / "notes.db").string());
  EXPECT_EQ(garbage.code, 2) << garbage.out;
  EXPECT_NE(garbage.out.find("not a schedlab store"), std::string::npos) << garbage.out;
  EXPECT_EQ(fs::file_size(dir / "notes.db"), 11u);
}

}  // namespace
}  // namespace schedlab
