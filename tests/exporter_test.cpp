// The exporter against its own HTTP exposer and a real bundle from this machine: names, labels and
// base-unit values, the bound on configurations, the histogram re-bucketing, the listen address rules,
// and the process metrics through the /proc seam. The real Prometheus peers are in exporter_peers_test.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "core/histogram.hpp"
#include "daemon/exporter/exporter.hpp"
#include "daemon/exporter/headline.hpp"
#include "daemon/exporter/listen.hpp"
#include "daemon/exporter/process_metrics.hpp"
#include "exposition.hpp"
#include "prometheus_server.hpp"
#include "workloads/registry.hpp"

namespace schedlab {
namespace {

using testing::find_samples;
using testing::http_get;
using testing::parse_exposition;

const std::filesystem::path kFixtures = SCHEDLAB_FIXTURES_DIR;
// yield (threads=1 and threads=2, a sweep: two instances of one workload) and wakeup, 3 repetitions
// each; captured on this machine (tests/fixtures/exporter/README.md).
const std::filesystem::path kBundle = kFixtures / "exporter" / "yield-wakeup.json";

ExporterSettings local_settings() {
  ExporterSettings s;
  s.listen = "127.0.0.1:0";
  s.host = "testhost";
  s.host_class.label = "testclass";  // no shape: the exporter reads this machine's (exporter_class_test)
  return s;
}

std::vector<testing::Sample> scrape(const Exporter& e) {
  auto r = http_get(e.port(), "/metrics");
  EXPECT_EQ(r.status, 200);
  return parse_exposition(r.body);
}

double median_of(const Instance& inst, const std::string& metric) {
  std::vector<double> v;
  for (const auto& r : inst.repetitions)
    if (r.ok()) v.push_back(r.metrics.at(metric).value);
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

const Instance& instance(const Bundle& b, const std::string& id) {
  for (const auto& i : b.instances)
    if (i.id == id) return i;
  throw std::runtime_error("no instance " + id);
}
Instance& instance(Bundle& b, const std::string& id) {
  return const_cast<Instance&>(instance(static_cast<const Bundle&>(b), id));
}

TEST(ExporterNames, BaseUnitsAndSuffixes) {
  EXPECT_EQ(prometheus_name("yield", "ns_per_yield", "ns"), "schedlab_yield_yield_duration_seconds");
  EXPECT_EQ(prometheus_name("wakeup", "latency_p99_us", "us"), "schedlab_wakeup_latency_p99_seconds");
  EXPECT_EQ(prometheus_name("tbench", "throughput_mb_s", "MB/s"),
            "schedlab_tbench_throughput_bytes_per_second");
  EXPECT_EQ(prometheus_name("chat", "messages_s", "msg/s"), "schedlab_chat_messages_per_second");
  EXPECT_EQ(prometheus_name("kernbench", "elapsed_s", "s"), "schedlab_kernbench_elapsed_seconds");
  EXPECT_EQ(prometheus_name("kernbench", "cpu_pct", "pct"), "schedlab_kernbench_cpu_ratio");
  EXPECT_EQ(prometheus_name("micro", "ns_per_op", "ns"), "schedlab_micro_op_duration_seconds");
  EXPECT_EQ(base_unit("us")->scale, 1e-6);
  EXPECT_EQ(base_unit("MB/s")->scale, 1e6);  // tbench: "10^6 bytes"
  EXPECT_FALSE(base_unit("furlongs"));
}

// Every headline metric a built-in workload declares has a unit in the table and a distinct name.
TEST(ExporterNames, EveryDeclaredHeadlineHasABaseUnit) {
  std::set<std::string> names;
  int headlines = 0;
  for (const auto& entry : builtin_workloads()) {
    for (const auto& m : entry.make()->metrics()) {
      if (!m.headline) continue;
      ++headlines;
      EXPECT_TRUE(base_unit(m.unit)) << entry.name << "." << m.name << " unit " << m.unit;
      const auto name = prometheus_name(entry.name, m.name, m.unit);
      EXPECT_TRUE(names.insert(name).second) << name;
      EXPECT_EQ(name.find("__"), std::string::npos) << name;
    }
  }
  EXPECT_GE(headlines, 7);
}

// The exported bounds are boundaries of LatencyHistogram's scheme, so no source bucket straddles one.
TEST(ExporterHistogram, BoundsAreSourceBoundaries) {
  std::set<double> uppers;
  for (std::size_t b = 0; b + 1 < LatencyHistogram::bucket_count(); ++b)
    uppers.insert(LatencyHistogram::upper_us(b));
  for (double s : latency_bounds_seconds()) {
    const double us = s * 1e6;
    const bool found =
        std::any_of(uppers.begin(), uppers.end(), [&](double u) { return std::abs(u - us) < 1e-6; });
    EXPECT_TRUE(found) << us << " us is not a bucket boundary";
  }
}

TEST(ExporterHttp, PublishesHeadlineMediansInBaseUnits) {
  const Bundle b = load_bundle(kBundle);
  Exporter e(local_settings());
  ASSERT_GT(e.port(), 0);
  e.publish(b, "6.12-eevdf");
  const auto samples = scrape(e);

  // wakeup latency_p99_us over the 3 ok repetitions: 13700, 19600, 11700 us -> median 13700 us = 0.0137 s.
  const auto& w = instance(b, "wakeup");
  auto p99 = find_samples(samples, "schedlab_wakeup_latency_p99_seconds",
                          {{"host", "testhost"},
                           {"class", "testclass"},
                           {"configuration", "6.12-eevdf"},
                           {"workload", "wakeup"}});
  ASSERT_EQ(p99.size(), 1u);
  EXPECT_EQ(p99[0].labels.at("instance_id"), "wakeup");
  EXPECT_DOUBLE_EQ(p99[0].value, median_of(w, "latency_p99_us") * 1e-6);
  EXPECT_DOUBLE_EQ(p99[0].value, 0.0137);
  auto p50 = find_samples(samples, "schedlab_wakeup_latency_p50_seconds", {{"configuration", "6.12-eevdf"}});
  ASSERT_EQ(p50.size(), 1u);
  EXPECT_DOUBLE_EQ(p50[0].value, median_of(w, "latency_p50_us") * 1e-6);
  // Not headline: not exported.
  EXPECT_TRUE(find_samples(samples, "schedlab_wakeup_latency_p90_seconds").empty());

  // Two yield instances (a threads sweep): one series each, told apart by instance_id.
  auto yields = find_samples(samples, "schedlab_yield_yield_duration_seconds", {{"workload", "yield"}});
  ASSERT_EQ(yields.size(), 2u);
  for (const auto& s : yields) {
    const auto& inst = instance(b, s.labels.at("instance_id"));
    EXPECT_DOUBLE_EQ(s.value, median_of(inst, "ns_per_yield") * 1e-9) << inst.id;
  }
}

TEST(ExporterHttp, LatencyHistogramCarriesTheBundlesCounts) {
  const Bundle b = load_bundle(kBundle);
  Exporter e(local_settings());
  e.publish(b, "running");
  const auto samples = scrape(e);
  // Independently of the exporter: the wakeups of the ok repetitions, and those below 10 ms.
  double total = 0, below_10ms = 0;
  for (const auto& r : instance(b, "wakeup").repetitions) {
    if (!r.ok()) continue;
    const auto& h = r.details.at("histogram");
    total += h.at("count").get<double>();
    for (const auto& bucket : h.at("buckets"))
      if (bucket[1].get<double>() <= 10000) below_10ms += bucket[2].get<double>();
  }
  ASSERT_EQ(total, 560);  // "count": 187, 186 and 187 in the bundle's three repetitions
  const std::map<std::string, std::string> sel = {{"configuration", "running"}, {"instance_id", "wakeup"}};
  auto count = find_samples(samples, "schedlab_wakeup_latency_seconds_count", sel);
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0].value, total);
  auto inf = sel;
  inf["le"] = "+Inf";
  ASSERT_EQ(find_samples(samples, "schedlab_wakeup_latency_seconds_bucket", inf).size(), 1u);
  EXPECT_EQ(find_samples(samples, "schedlab_wakeup_latency_seconds_bucket", inf)[0].value, total);
  double at_10ms = -1;
  std::size_t buckets = 0;
  for (const auto& s : find_samples(samples, "schedlab_wakeup_latency_seconds_bucket", sel)) {
    ++buckets;
    if (s.labels.at("le") != "+Inf" && std::abs(std::stod(s.labels.at("le")) - 0.01) < 1e-12)
      at_10ms = s.value;
  }
  EXPECT_EQ(buckets, latency_bounds_seconds().size() + 1);
  EXPECT_EQ(at_10ms, below_10ms);
  auto sum = find_samples(samples, "schedlab_wakeup_latency_seconds_sum", sel);
  ASSERT_EQ(sum.size(), 1u);
  // Estimated from midpoints: between the p50 and the max of what was recorded, times the count.
  EXPECT_GT(sum[0].value / total, 0.001);
  EXPECT_LT(sum[0].value / total, 0.03);
  // yield carries no histogram.
  EXPECT_TRUE(find_samples(samples, "schedlab_yield_latency_seconds_count").empty());
}

TEST(ExporterHttp, KeepsOnlyTheNewestConfigurations) {
  const Bundle b = load_bundle(kBundle);
  Exporter e(local_settings());  // configurations_per_host = 3
  for (const char* c : {"c1", "c2", "c3", "c4", "c5"}) e.publish(b, c);
  auto configurations = [&] {
    std::set<std::string> seen;
    for (const auto& s : scrape(e))
      if (s.name.rfind("schedlab_", 0) == 0 && s.labels.count("configuration"))
        seen.insert(s.labels.at("configuration"));
    return seen;
  };
  EXPECT_EQ(configurations(), (std::set<std::string>{"c3", "c4", "c5"}));
  // Publishing c3 again makes it the newest: c6 then pushes out c4.
  e.publish(b, "c3");
  e.publish(b, "c6");
  EXPECT_EQ(configurations(), (std::set<std::string>{"c3", "c5", "c6"}));
}

// The instance series beside the headlines: counters per operation (median of the ok repetitions, from
// the bundle's own "EVENT/op" readings), repetitions by status, duration and finish time.
double counter_median(const Instance& inst, const std::string& event) {
  std::vector<double> v;
  for (const auto& r : inst.repetitions)
    if (r.ok() && r.counters.count(event) && r.counters.at(event).ok())
      v.push_back(r.counters.at(event).value);
  std::sort(v.begin(), v.end());
  if (v.empty()) throw std::runtime_error("no ok " + event);
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

TEST(ExporterInstanceSeries, CountersPerOperationStatusAndDuration) {
  const Bundle b = load_bundle(kBundle);
  Exporter e(local_settings());
  e.publish(b, "running");
  const auto samples = scrape(e);
  const auto& y = instance(b, "yield.threads=2");
  const std::map<std::string, std::string> sel = {{"configuration", "running"}, {"instance_id", y.id}};
  auto cs = find_samples(samples, "schedlab_context_switches_per_operation", sel);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].labels.at("workload"), "yield");
  EXPECT_DOUBLE_EQ(cs[0].value, counter_median(y, "perf::CONTEXT-SWITCHES/op"));
  EXPECT_GT(cs[0].value, 1.0);  // 155 switches for 145 yields in the first repetition
  auto mig = find_samples(samples, "schedlab_cpu_migrations_per_operation", sel);
  ASSERT_EQ(mig.size(), 1u);
  EXPECT_DOUBLE_EQ(mig[0].value, counter_median(y, "perf::CPU-MIGRATIONS/op"));
  auto per_rep = find_samples(samples, "schedlab_context_switches_per_repetition", sel);
  ASSERT_EQ(per_rep.size(), 1u);
  EXPECT_DOUBLE_EQ(per_rep[0].value, counter_median(y, "perf::CONTEXT-SWITCHES"));

  // cycles and instructions are unsupported in this bundle (no PMU): no IPC, not a 0.
  EXPECT_TRUE(find_samples(samples, "schedlab_instructions_per_cycle").empty());

  std::map<std::string, double> by_status;
  for (const auto& s : find_samples(samples, "schedlab_repetitions", sel))
    by_status[s.labels.at("status")] = s.value;
  EXPECT_EQ(by_status, (std::map<std::string, double>{{"ok", 3}, {"failed", 0}, {"timeout", 0}}));

  double seconds = y.warmup ? y.warmup->duration_s : 0;
  for (const auto& r : y.repetitions) seconds += r.duration_s;
  auto duration = find_samples(samples, "schedlab_instance_duration_seconds", sel);
  ASSERT_EQ(duration.size(), 1u);
  EXPECT_NEAR(duration[0].value, seconds, 1e-9);
  EXPECT_GT(duration[0].value, 0.9);  // three timed repetitions of about 0.3 s each, and a warm-up

  // "finished_at": "2026-12-01T08:07:32.040Z"; 2026-12-01 is day 20788 since 1970-01-01.
  ASSERT_EQ(b.finished_at, "2026-12-01T08:07:32.040Z");
  auto finished = find_samples(samples, "schedlab_instance_finished_timestamp_seconds", sel);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_NEAR(finished[0].value, 20788.0 * 86400 + 8 * 3600 + 7 * 60 + 32.04, 1e-3);
  EXPECT_FALSE(utc_seconds("2026-12-01 08:07:32"));
}

TEST(ExporterInstanceSeries, UnsupportedCounterExportsNothingAndFailuresAreCounted) {
  Bundle b = load_bundle(kBundle);
  Exporter e(local_settings());
  e.publish(b, "running");
  const std::map<std::string, std::string> sel = {{"configuration", "running"}, {"instance_id", "wakeup"}};
  ASSERT_EQ(find_samples(scrape(e), "schedlab_context_switches_per_operation", sel).size(), 1u);

  // The newer bundle's wakeup: switches unsupported in every repetition, one repetition failed.
  for (auto& inst : b.instances) {
    if (inst.id != "wakeup") continue;
    for (auto& r : inst.repetitions) {
      CounterReading unsupported;
      unsupported.status = status::kUnsupported;
      unsupported.error_number = 13;
      r.counters["perf::CONTEXT-SWITCHES"] = unsupported;
      r.counters.erase("perf::CONTEXT-SWITCHES/op");
    }
    inst.repetitions[1].status = status::kFailed;
  }
  e.publish(b, "running");
  const auto samples = scrape(e);
  EXPECT_TRUE(find_samples(samples, "schedlab_context_switches_per_operation", sel).empty());
  EXPECT_TRUE(find_samples(samples, "schedlab_context_switches_per_repetition", sel).empty());
  EXPECT_EQ(find_samples(samples, "schedlab_cpu_migrations_per_operation", sel).size(), 1u);  // still counted
  // The other instances keep theirs.
  EXPECT_EQ(find_samples(samples, "schedlab_context_switches_per_operation", {{"workload", "yield"}}).size(),
            2u);
  std::map<std::string, double> by_status;
  for (const auto& s : find_samples(samples, "schedlab_repetitions", sel))
    by_status[s.labels.at("status")] = s.value;
  EXPECT_EQ(by_status, (std::map<std::string, double>{{"ok", 2}, {"failed", 1}, {"timeout", 0}}));
}

TEST(ExporterInstanceSeries, InstructionsPerCycleOnlyFromMatchingOkCounters) {
  Bundle b = load_bundle(kBundle);
  auto set = [](Repetition& r, const std::string& event, double value) {
    CounterReading c;
    c.value = value;
    r.counters[event] = c;
  };
  auto& reps = b.instances[0].repetitions;
  ASSERT_EQ(reps.size(), 3u);
  const double ipc[] = {0.5, 2.0, 1.25};  // (iu + ik) / (cu + ck) per repetition
  for (std::size_t i = 0; i < 3; ++i) {
    set(reps[i], "instructions:u", 300 * ipc[i]);
    set(reps[i], "instructions:k", 100 * ipc[i]);
    set(reps[i], "cycles:u", 300);
    set(reps[i], "cycles:k", 100);
  }
  auto series = published_series(b);
  auto find = [&](const PublishedSeries& s, const std::string& id) -> const HeadlineValue* {
    for (const auto& v : s.headlines)
      if (v.family == "schedlab_instructions_per_cycle" && v.instance_id == id) return &v;
    return nullptr;
  };
  const auto* v = find(series, b.instances[0].id);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 1.25);
  EXPECT_EQ(v->repetitions, 3);
  EXPECT_EQ(find(series, b.instances[1].id), nullptr);  // still unsupported there

  // User-only cycles against user+kernel instructions: no ratio from that repetition.
  reps[0].counters.erase("cycles:k");
  const auto fewer = published_series(b);
  v = find(fewer, b.instances[0].id);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->repetitions, 2);
  EXPECT_DOUBLE_EQ(v->value, (2.0 + 1.25) / 2);
}

// A headline metric whose name collides with the latency histogram's family is an Error naming it.
TEST(ExporterHttp, FamilyNameCollisionIsAnError) {
  Bundle b = load_bundle(kBundle);
  for (auto& inst : b.instances) {
    if (inst.workload != "wakeup") continue;
    inst.metric_info["latency_us"] = {"us", Direction::kLowerIsBetter, true, "a made-up headline"};
    for (auto& r : inst.repetitions) r.metrics["latency_us"] = {100, "us"};
  }
  Exporter e(local_settings());
  try {
    e.publish(b, "running");
    ADD_FAILURE() << "a gauge and a histogram both named schedlab_wakeup_latency_seconds";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("schedlab_wakeup_latency_seconds"), std::string::npos)
        << err.what();
  }
  // The rest was published.
  EXPECT_EQ(
      find_samples(scrape(e), "schedlab_wakeup_latency_p99_seconds", {{"configuration", "running"}}).size(),
      1u);
}

TEST(ExporterHttp, HealthMetrics) {
  Exporter e(local_settings());
  e.set_state(DaemonState::kRunning);
  e.set_current_step("t1/running/yield.threads=2", 4, 12);
  e.set_next_run(std::chrono::system_clock::time_point(std::chrono::seconds(1767250800)));
  e.count_started();
  e.count_started();
  e.count_step_failed();
  auto samples = scrape(e);
  for (const char* st : {"starting", "idle", "running", "booting", "stopping"}) {
    auto s = find_samples(samples, "schedlab_daemon_state", {{"state", st}});
    ASSERT_EQ(s.size(), 1u) << st;
    EXPECT_EQ(s[0].value, std::string(st) == "running" ? 1 : 0) << st;
  }
  EXPECT_EQ(find_samples(samples, "schedlab_daemon_step_index").at(0).value, 4);
  EXPECT_EQ(find_samples(samples, "schedlab_daemon_plan_steps").at(0).value, 12);
  EXPECT_EQ(find_samples(samples, "schedlab_daemon_step_info", {{"step", "t1/running/yield.threads=2"}})
                .at(0)
                .value,
            1);
  EXPECT_EQ(find_samples(samples, "schedlab_daemon_next_run_timestamp_seconds").at(0).value, 1767250800);
  EXPECT_EQ(find_samples(samples, "schedlab_steps_started_total").at(0).value, 2);
  EXPECT_EQ(find_samples(samples, "schedlab_steps_finished_total").at(0).value, 1);
  EXPECT_EQ(find_samples(samples, "schedlab_steps_failed_total").at(0).value, 1);
  EXPECT_EQ(find_samples(samples, "schedlab_steps_timed_out_total").at(0).value, 0);
  for (const char* op : {"publish", "push"})
    EXPECT_EQ(find_samples(samples, "schedlab_exporter_errors_total", {{"operation", op}}).at(0).value, 0)
        << op;
  // This process's own figures, read live.
  EXPECT_GT(find_samples(samples, "process_resident_memory_bytes").at(0).value, 1e6);
  EXPECT_GT(find_samples(samples, "process_open_fds").at(0).value, 3);
  EXPECT_EQ(find_samples(samples, "process_cpu_seconds_total").size(), 1u);

  e.set_current_step("", -1, 12);
  e.set_next_run(std::nullopt);
  samples = scrape(e);
  EXPECT_TRUE(find_samples(samples, "schedlab_daemon_step_info").empty());
  EXPECT_TRUE(find_samples(samples, "schedlab_daemon_next_run_timestamp_seconds").empty());
}

// #30 item 12: a failed step is a finished step too (the help says "whatever their outcome"), and a
// step recorded with a failed repetition is not a failed step: its repetitions are counted by status.
TEST(ExporterHttp, StepCountersTellStepsFromRepetitions) {
  Exporter e(local_settings());
  Bundle b = load_bundle(kBundle);  // 9 timed repetitions, all ok as captured
  instance(b, "wakeup").repetitions[0].status = status::kFailed;
  instance(b, "yield.threads=2").repetitions[1].status = status::kTimeout;
  e.count_started();
  e.count_started();
  e.count_step_failed();     // a step without a result (no bundle)
  e.count_step_recorded(b);  // a step recorded with one failed and one timed-out repetition
  const auto samples = scrape(e);
  EXPECT_EQ(find_samples(samples, "schedlab_steps_finished_total").at(0).value, 2);
  EXPECT_EQ(find_samples(samples, "schedlab_steps_failed_total").at(0).value, 1);
  EXPECT_EQ(find_samples(samples, "schedlab_steps_timed_out_total").at(0).value, 1);
  const std::map<std::string, double> by_status = {{"ok", 7}, {"failed", 1}, {"timeout", 1}};
  for (const auto& [st, n] : by_status)
    EXPECT_EQ(find_samples(samples, "schedlab_steps_repetitions_total", {{"status", st}}).at(0).value, n)
        << st;
}

// #30 item 12: the state is one-hot at every scrape, however often it changes. Five gauges set one
// after another showed a scrape in between no state at 1, or two.
TEST(ExporterHttp, StateIsOneHotAtEveryScrape) {
  Exporter e(local_settings());
  std::atomic<bool> done = false;
  std::thread flipper([&] {
    for (int i = 0; !done; ++i) e.set_state(i % 2 ? DaemonState::kRunning : DaemonState::kIdle);
  });
  int scrapes = 0, bad = 0;
  std::string example;
  for (; scrapes < 300; ++scrapes) {
    const auto states =
        find_samples(parse_exposition(http_get(e.port(), "/metrics").body), "schedlab_daemon_state");
    int ones = 0;
    for (const auto& st : states) ones += st.value == 1;
    if (states.size() != 5 || ones != 1) {
      ++bad;
      example = std::to_string(states.size()) + " states, " + std::to_string(ones) + " at 1";
    }
  }
  done = true;
  flipper.join();
  EXPECT_EQ(bad, 0) << bad << " of " << scrapes << " scrapes were not one-hot, e.g. " << example;
}

// #28 item 1: two instances with one id (what the daemon's steps of a sweep recorded before it passed
// --instance-id) are still two series, told apart by params_hash, and the newer bundle of one replaces
// only its own series.
TEST(ExporterHttp, OneIdWithOtherParametersIsAnotherSeries) {
  Bundle b = load_bundle(kBundle);
  for (auto& inst : b.instances)
    if (inst.workload == "yield") inst.id = "yield";
  Exporter e(local_settings());
  e.publish(b, "running");
  auto yields = find_samples(scrape(e), "schedlab_yield_yield_duration_seconds", {{"instance_id", "yield"}});
  ASSERT_EQ(yields.size(), 2u);
  std::set<std::string> hashes;
  for (const auto& y : yields) hashes.insert(y.labels.at("params_hash"));
  EXPECT_EQ(hashes, (std::set<std::string>{"6b4d6f56edcc7899", "63d92b66c2c6c854"}));
  for (const auto& y : yields)
    for (const auto& inst : b.instances) {
      if (inst.params_hash == y.labels.at("params_hash")) {
        EXPECT_DOUBLE_EQ(y.value, median_of(inst, "ns_per_yield") * 1e-9) << inst.params_hash;
      }
    }
}

// #30 item 6: an instance whose repetitions now all fail keeps no median and no buckets from its
// older bundle; only its repetitions by status remain, saying what happened.
TEST(ExporterHttp, AnInstanceThatNowFailsKeepsNoOldSeries) {
  Exporter e(local_settings());
  const Bundle good = load_bundle(kBundle);
  e.publish(good, "running");
  ASSERT_FALSE(find_samples(scrape(e), "schedlab_wakeup_latency_seconds_bucket").empty());
  Bundle failing = good;
  for (auto& r : instance(failing, "wakeup").repetitions) r.status = status::kFailed;
  e.publish(failing, "running");
  const auto samples = scrape(e);
  EXPECT_TRUE(find_samples(samples, "schedlab_wakeup_latency_seconds_bucket").empty());
  EXPECT_TRUE(find_samples(samples, "schedlab_wakeup_latency_seconds_count").empty());
  EXPECT_TRUE(find_samples(samples, "schedlab_wakeup_latency_p99_seconds").empty());
  EXPECT_EQ(find_samples(samples, "schedlab_repetitions", {{"instance_id", "wakeup"}, {"status", "failed"}})
                .at(0)
                .value,
            3);
  // The other instances' series are the newer bundle's, as before.
  EXPECT_EQ(find_samples(samples, "schedlab_yield_yield_duration_seconds").size(), 2u);
}

// #30 item 6: an instance removed from the campaign goes from every configuration at once (it used to
// stay until its configuration was evicted: never, for "running"), and is not published again.
TEST(ExporterHttp, InstancesRemovedFromTheCampaignGo) {
  Exporter e(local_settings());
  const Bundle b = load_bundle(kBundle);
  e.publish(b, "running");
  e.publish(b, "6.12-eevdf");
  e.set_instances({"yield.threads=1", "yield.threads=2"});
  auto samples = scrape(e);
  for (const char* family : {"schedlab_wakeup_latency_p99_seconds", "schedlab_wakeup_latency_seconds_count"})
    EXPECT_TRUE(find_samples(samples, family).empty()) << family;
  EXPECT_TRUE(find_samples(samples, "schedlab_repetitions", {{"workload", "wakeup"}}).empty());
  EXPECT_EQ(find_samples(samples, "schedlab_yield_yield_duration_seconds").size(), 4u);
  e.publish(b, "running");
  EXPECT_TRUE(find_samples(scrape(e), "schedlab_repetitions", {{"workload", "wakeup"}}).empty());
}

TEST(ExporterListen, EmptyTurnsTheExposerOff) {
  ExporterSettings s = local_settings();
  s.listen = "";
  Exporter e(s);
  EXPECT_EQ(e.port(), -1);
  e.publish(load_bundle(kBundle), "running");  // still fine: push can use it
}

TEST(ExporterListen, WildcardOnlyWhenWrittenSo) {
  EXPECT_TRUE(parse_listen("0.0.0.0:9464").wildcard);
  EXPECT_TRUE(parse_listen("[::]:9464").wildcard);
  EXPECT_FALSE(parse_listen("127.0.0.1:9464").wildcard);
  EXPECT_EQ(parse_listen("[::1]:0").civetweb(), "[::1]:0");
  // civetweb reads these as every interface: refused, with the form to write instead.
  for (const char* implicit :
       {"9464", ":9464", "localhost:9464", "127.0.0.1", "127.0.0.1:99999", "[::1]9464"}) {
    try {
      parse_listen(implicit);
      ADD_FAILURE() << implicit << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("0.0.0.0:9464"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(implicit), std::string::npos) << e.what();
    }
  }
}

// IPv6 works where civetweb was built with it; where not (Debian 12), the error says so.
TEST(ExporterListen, Ipv6ServesOrSaysWhy) {
  ExporterSettings s = local_settings();
  s.listen = "[::1]:0";
  try {
    Exporter e(s);
    EXPECT_GT(e.port(), 0);
  } catch (const SystemError& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("IPv6 support"), std::string::npos) << e.what();
  }
}

TEST(ExporterListen, BindFailureNamesAddressAndReason) {
  // Hold a port with a listening socket, as another daemon would.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  ExporterSettings s = local_settings();
  s.listen = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  try {
    Exporter e(s);
    ADD_FAILURE() << "bound " << s.listen << " twice";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(s.listen), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("EADDRINUSE"), std::string::npos) << e.what();
  }
  ::close(fd);
}

// /proc/self/{stat,statm,limits} and /proc/stat of a running exporter_serve, captured on this machine
// (tests/fixtures/exporter/README.md); 100 ticks per second and 4096-byte pages, as getconf said there.
TEST(ExporterProcess, ReadsTheCapture) {
  const auto root = HostPaths::under(kFixtures / "exporter" / "process");
  const auto s = read_process_sample(root, "self", ProcessClock{100, 4096});
  const auto stat = testing::slurp(root.proc / "self" / "stat");
  const auto f = split_ws(stat.substr(stat.rfind(')') + 2));  // from field 3 (state) on
  const double utime = std::stod(f[14 - 3]), stime = std::stod(f[15 - 3]), start = std::stod(f[22 - 3]);
  ASSERT_TRUE(s.cpu_seconds && s.resident_bytes && s.virtual_bytes && s.start_time_seconds && s.max_fds);
  EXPECT_DOUBLE_EQ(*s.cpu_seconds, (utime + stime) / 100);
  EXPECT_DOUBLE_EQ(*s.virtual_bytes, std::stod(f[23 - 3]));
  const auto statm = split_ws(testing::slurp(root.proc / "self" / "statm"));
  EXPECT_DOUBLE_EQ(*s.resident_bytes, std::stod(statm[1]) * 4096);
  // /proc/stat's "btime N" line: the boot time the start ticks count from.
  const auto proc_stat = testing::slurp(root.proc / "stat");
  const auto btime = proc_stat.find("\nbtime ");
  ASSERT_NE(btime, std::string::npos);
  EXPECT_DOUBLE_EQ(*s.start_time_seconds, std::stod(proc_stat.substr(btime + 7)) + start / 100);
  EXPECT_GT(*s.start_time_seconds, 1.7e9);  // after 2023: an epoch time, not a tick count
  EXPECT_GT(*s.max_fds, 0);
  EXPECT_FALSE(s.open_fds);  // the capture has no fd directory: absent, not 0
}

TEST(ExporterProcess, OpenFdsFollowTheLiveProcess) {
  const auto before = read_process_sample(HostPaths::live(), "self", ProcessClock::live());
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const auto after = read_process_sample(HostPaths::live(), "self", ProcessClock::live());
  for (int fd : fds) ::close(fd);
  ASSERT_TRUE(before.open_fds && after.open_fds);
  EXPECT_EQ(*after.open_fds - *before.open_fds, 5);
}

TEST(ExporterPush, NoGatewayConfiguredIsNoError) {
  Exporter e(local_settings());
  EXPECT_EQ(e.push(load_bundle(kBundle), "running"), "");
}

TEST(ExporterPush, UnreachableGatewayIsAnErrorText) {
  ExporterSettings s = local_settings();
  s.pushgateway = "http://127.0.0.1:" + std::to_string(testing::free_port());
  Exporter e(s);
  const auto err = e.push(load_bundle(kBundle), "running");
  EXPECT_NE(err.find(s.pushgateway), std::string::npos) << err;
  // "...: Failed to connect to 127.0.0.1 port P after 0 ms: Couldn't connect to server"
  EXPECT_NE(err.find("Failed to connect"), std::string::npos) << err;
  s.pushgateway = "127.0.0.1:9091";  // no scheme
  Exporter bad(s);
  EXPECT_NE(bad.push(load_bundle(kBundle), "running").find("http://HOST:PORT"), std::string::npos);
}

// A server that refuses the push: its status and its own words come back (civetweb takes no PUT), and
// the pusher counts the error on its own /metrics.
TEST(ExporterPush, RefusalCarriesStatus) {
  Exporter e(local_settings());
  ExporterSettings s = local_settings();
  s.pushgateway = "http://127.0.0.1:" + std::to_string(e.port());
  Exporter pusher(s);
  const auto err = pusher.push(load_bundle(kBundle), "t1/running");
  EXPECT_NE(err.find("PUT http://"), std::string::npos) << err;
  EXPECT_NE(err.find("HTTP 405"), std::string::npos) << err;
  EXPECT_NE(err.find("Method Not Allowed"), std::string::npos) << err;
  EXPECT_EQ(
      find_samples(scrape(pusher), "schedlab_exporter_errors_total", {{"operation", "push"}}).at(0).value, 1);
  // The '/' of the configuration travels base64url-encoded in the grouping key.
  EXPECT_NE(err.find("/metrics/job/schedlab/host/testhost/configuration@base64/dDEvcnVubmluZw=="),
            std::string::npos)
      << err;
}

// A gateway that accepts the connection and never answers costs push_timeout_s, not the daemon's loop.
TEST(ExporterPush, SilentGatewayTimesOut) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(fd, 4), 0);  // the kernel completes the handshake; nobody ever reads
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  ExporterSettings s = local_settings();
  s.listen = "";
  s.pushgateway = "http://127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  s.push_timeout_s = 0.5;
  Exporter e(s);
  const auto t0 = std::chrono::steady_clock::now();
  const auto err = e.push(load_bundle(kBundle), "running");
  const auto waited = std::chrono::steady_clock::now() - t0;
  ::close(fd);
  EXPECT_NE(err.find("timed out"), std::string::npos) << err;
  EXPECT_GE(waited, std::chrono::milliseconds(450));
  EXPECT_LT(waited, std::chrono::seconds(3));
}

// ---- change points (set_change_points) -------------------------------------------------------------

ExportedChange change(const std::string& status, const std::string& direction, const std::string& at,
                      double relative = 0.052) {
  ExportedChange c;
  c.host = "testhost";
  c.workload = "yield";
  c.metric = "ns_per_yield";
  c.instance_id = "yield.threads=2";
  c.params_hash = "6b4d6f56edcc7899";
  c.configuration = "6.12-eevdf";
  c.direction = direction;
  c.status = status;
  c.at = at;
  c.relative_change = relative;
  c.relative_lower = relative - 0.01;
  c.relative_upper = relative + 0.01;
  return c;
}

const std::vector<std::string> kChangeFamilies = {
    "schedlab_change_points", "schedlab_change_point_relative_change",
    "schedlab_change_point_relative_change_lower", "schedlab_change_point_relative_change_upper",
    "schedlab_change_point_timestamp_seconds"};

TEST(ExporterChangePoints, LabelsValuesAndTime) {
  Exporter e(local_settings());
  e.set_change_points({change("confirmed", "worse", "2026-12-06T02:06:03Z"),
                       change("not reproduced", "better", "2026-12-07T02:05:59Z", -0.031)});
  const auto samples = scrape(e);

  const std::map<std::string, std::string> instance = {{"host", "testhost"},
                                                       {"class", "testclass"},
                                                       {"workload", "yield"},
                                                       {"metric", "ns_per_yield"},
                                                       {"instance_id", "yield.threads=2"},
                                                       {"params_hash", "6b4d6f56edcc7899"},
                                                       {"configuration", "6.12-eevdf"}};
  auto count = find_samples(samples, "schedlab_change_points", instance);
  ASSERT_EQ(count.size(), 2u);
  auto confirmed = find_samples(count, "schedlab_change_points", {{"status", "confirmed"}});
  ASSERT_EQ(confirmed.size(), 1u);
  EXPECT_EQ(confirmed[0].labels.at("direction"), "worse");
  EXPECT_EQ(confirmed[0].value, 1);
  EXPECT_EQ(confirmed[0].labels.count("at"), 0u) << "the count is per label set, not per change";
  // A matcher never needs quoting of a space: "not reproduced" is exported as not_reproduced.
  auto not_reproduced = find_samples(count, "schedlab_change_points", {{"status", "not_reproduced"}});
  ASSERT_EQ(not_reproduced.size(), 1u);
  EXPECT_EQ(not_reproduced[0].labels.at("direction"), "better");

  auto with_at = instance;
  with_at["at"] = "2026-12-06T02:06:03Z";
  with_at["status"] = "confirmed";
  with_at["direction"] = "worse";
  auto size = find_samples(samples, "schedlab_change_point_relative_change", with_at);
  ASSERT_EQ(size.size(), 1u);
  EXPECT_DOUBLE_EQ(size[0].value, 0.052);
  auto lower = find_samples(samples, "schedlab_change_point_relative_change_lower", with_at);
  auto upper = find_samples(samples, "schedlab_change_point_relative_change_upper", with_at);
  ASSERT_EQ(lower.size(), 1u);
  ASSERT_EQ(upper.size(), 1u);
  EXPECT_DOUBLE_EQ(lower[0].value, 0.042);
  EXPECT_DOUBLE_EQ(upper[0].value, 0.062);
  // `date -u -d 2026-12-06T02:06:03Z +%s` prints 1796522763.
  auto time = find_samples(samples, "schedlab_change_point_timestamp_seconds", with_at);
  ASSERT_EQ(time.size(), 1u);
  EXPECT_EQ(time[0].value, 1796522763.0);
  // What a Grafana annotation shows of the size: it reads only labels.
  EXPECT_EQ(time[0].labels.at("size"), "+5.2% (95%: +4.2% to +6.2%)");
  EXPECT_EQ(find_samples(samples, "schedlab_change_point_relative_change").size(), 2u);
  auto better =
      find_samples(samples, "schedlab_change_point_relative_change", {{"status", "not_reproduced"}});
  ASSERT_EQ(better.size(), 1u);
  EXPECT_DOUBLE_EQ(better[0].value, -0.031);
}

// Two changes of one series with the same labels but for `at`: counted together, sized apart.
TEST(ExporterChangePoints, CountsChangesWithTheSameLabels) {
  Exporter e(local_settings());
  e.set_change_points({change("confirmed", "worse", "2026-12-01T02:00:00Z"),
                       change("confirmed", "worse", "2026-12-04T02:00:00Z", 0.08)});
  const auto samples = scrape(e);
  auto count = find_samples(samples, "schedlab_change_points");
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0].value, 2);
  EXPECT_EQ(find_samples(samples, "schedlab_change_point_timestamp_seconds").size(), 2u);
}

// The list replaces the previous one: a change it lacks has no series left, and an empty list leaves none.
TEST(ExporterChangePoints, ReplacingTheListRemovesSeries) {
  Exporter e(local_settings());
  e.set_change_points({change("suspected", "worse", "2026-12-01T02:00:00Z"),
                       change("suspected", "worse", "2026-12-02T02:00:00Z")});
  ASSERT_EQ(find_samples(scrape(e), "schedlab_change_point_timestamp_seconds").size(), 2u);
  // The rerun confirmed the second and did not reproduce the first, which the daemon then dropped.
  e.set_change_points({change("confirmed", "worse", "2026-12-02T02:00:00Z")});
  auto samples = scrape(e);
  auto count = find_samples(samples, "schedlab_change_points");
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0].labels.at("status"), "confirmed");
  auto time = find_samples(samples, "schedlab_change_point_timestamp_seconds");
  ASSERT_EQ(time.size(), 1u);
  EXPECT_EQ(time[0].labels.at("at"), "2026-12-02T02:00:00Z");
  e.set_change_points({});
  samples = scrape(e);
  for (const auto& family : kChangeFamilies) EXPECT_TRUE(find_samples(samples, family).empty()) << family;
}

// Cardinality: only the newest kExportedChangesMax (the end of the list) are exported.
TEST(ExporterChangePoints, KeepsOnlyTheNewest) {
  std::vector<ExportedChange> changes;
  const std::size_t total = kExportedChangesMax + 50;
  for (std::size_t i = 0; i < total; ++i) {
    char at[32];
    std::snprintf(at, sizeof at, "2026-%02zu-%02zuT02:00:00Z", 1 + i / 28, 1 + i % 28);
    changes.push_back(change("suspected", "worse", at));
  }
  Exporter e(local_settings());
  e.set_change_points(changes);
  const auto samples = scrape(e);
  auto time = find_samples(samples, "schedlab_change_point_timestamp_seconds");
  EXPECT_EQ(time.size(), kExportedChangesMax);
  std::set<std::string> exported;
  for (const auto& s : time) exported.insert(s.labels.at("at"));
  EXPECT_EQ(exported.count(changes.front().at), 0u);
  EXPECT_EQ(exported.count(changes[total - kExportedChangesMax - 1].at), 0u);
  EXPECT_EQ(exported.count(changes[total - kExportedChangesMax].at), 1u);
  EXPECT_EQ(exported.count(changes.back().at), 1u);
  auto count = find_samples(samples, "schedlab_change_points");
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0].value, static_cast<double>(kExportedChangesMax));
}

// A change whose time does not read is left out and named; the others are set all the same.
TEST(ExporterChangePoints, UnreadableTimeIsAnErrorAfterTheRest) {
  Exporter e(local_settings());
  try {
    e.set_change_points({change("confirmed", "worse", "2026-12-06 02:06:03"),
                         change("suspected", "better", "2026-12-07T02:00:00Z")});
    ADD_FAILURE() << "no error for an unreadable time";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("\"2026-12-06 02:06:03\": not an ISO 8601 UTC time"),
              std::string::npos)
        << err.what();
  }
  const auto samples = scrape(e);
  auto count = find_samples(samples, "schedlab_change_points");
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0].labels.at("status"), "suspected");
}

// A scrape sees one whole list, never a mix of two: every scrape while the lists alternate has the
// counts of one list and exactly its changes' series.
TEST(ExporterChangePoints, AScrapeSeesOneWholeList) {
  std::vector<ExportedChange> three, seven;
  for (int i = 0; i < 3; ++i)
    three.push_back(change("confirmed", "worse", "2026-11-0" + std::to_string(i + 1) + "T02:00:00Z"));
  for (int i = 0; i < 7; ++i)
    seven.push_back(change("suspected", "better", "2026-10-0" + std::to_string(i + 1) + "T02:00:00Z"));
  Exporter e(local_settings());
  e.set_change_points(three);
  std::atomic<bool> stop = false;
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) e.set_change_points(i % 2 ? three : seven);
  });
  std::set<std::size_t> seen;
  for (int i = 0; i < 60; ++i) {
    const auto samples = scrape(e);
    const auto time = find_samples(samples, "schedlab_change_point_timestamp_seconds");
    const auto count = find_samples(samples, "schedlab_change_points");
    ASSERT_EQ(count.size(), 1u);
    EXPECT_EQ(count[0].value, static_cast<double>(time.size()));
    EXPECT_EQ(count[0].labels.at("status"), time.size() == 3 ? "confirmed" : "suspected");
    EXPECT_EQ(find_samples(samples, "schedlab_change_point_relative_change").size(), time.size());
    seen.insert(time.size());
  }
  stop = true;
  writer.join();
  EXPECT_EQ(seen, (std::set<std::size_t>{3, 7})) << "the scrapes did not catch both lists";
}

// The daemon's thread and the exposer's: everything the daemon calls during a campaign (step, counters,
// publishes that evict configurations, next run, instances, change points) while /metrics is scraped
// without pause. Every scrape is whole, and the end state is the last call's. Its point is the
// ThreadSanitizer stage (label tsan): a daemon test scrapes only every few hundred milliseconds.
TEST(ExporterHttp, ScrapedWhileTheDaemonPublishesAndCounts) {
  const Bundle b = load_bundle(kBundle);
  Exporter e(local_settings());  // configurations_per_host = 3
  std::atomic<bool> stop = false;
  std::atomic<int> scrapes = 0, bad = 0;
  std::thread scraper([&] {
    while (!stop) {
      const auto r = http_get(e.port(), "/metrics");
      if (r.status != 200 || find_samples(parse_exposition(r.body), "schedlab_daemon_state").size() != 5)
        ++bad;
      ++scrapes;
    }
  });
  std::set<std::string> instances;
  for (const auto& in : b.instances) instances.insert(in.id);
  const std::vector<std::string> configurations = {"c1", "c2", "c3", "c4", "c5"};
  int rounds = 0;
  for (; (rounds < 4 || scrapes < 50) && rounds < 5000; ++rounds) {  // scrapes during the calls
    e.set_instances(instances);
    e.set_plan_steps(static_cast<int>(configurations.size()));
    for (std::size_t i = 0; i < configurations.size(); ++i) {
      e.set_state(DaemonState::kRunning);
      e.set_current_step("t1/" + configurations[i] + "/yield", static_cast<int>(i),
                         static_cast<int>(configurations.size()));
      e.count_started();
      e.publish(b, configurations[i]);
      e.count_step_recorded(b);
      if (i == 0) e.count_step_failed();
      e.set_change_points({change("suspected", "worse", "2026-11-0" + std::to_string(i + 1) + "T02:00:00Z")});
    }
    e.set_current_step("", 0, static_cast<int>(configurations.size()));
    e.set_next_run(std::chrono::system_clock::now() + std::chrono::hours(1));
    e.set_state(DaemonState::kIdle);
  }
  stop = true;
  scraper.join();
  EXPECT_GE(scrapes, 50);
  EXPECT_EQ(bad, 0) << bad << " of " << scrapes << " scrapes failed or were not whole";
  std::set<std::string> seen;
  const auto samples = scrape(e);
  for (const auto& s : samples)  // a change point's configuration is the change's own
    if (s.name.rfind("schedlab_", 0) == 0 && s.name.rfind("schedlab_change_point", 0) != 0 &&
        s.labels.count("configuration"))
      seen.insert(s.labels.at("configuration"));
  EXPECT_EQ(seen, (std::set<std::string>{"c3", "c4", "c5"}));
  EXPECT_EQ(find_samples(samples, "schedlab_steps_started_total").at(0).value, rounds * 5.0);
  EXPECT_EQ(find_samples(samples, "schedlab_daemon_step_info").size(), 0u);
  EXPECT_EQ(find_samples(samples, "schedlab_daemon_next_run_timestamp_seconds").size(), 1u);
}

}  // namespace
}  // namespace schedlab
