#include "workloads/requests/requests.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/histogram.hpp"
#include "workloads/requests/pool.hpp"
#include "workloads/requests/work.hpp"

namespace schedlab {
namespace {

constexpr std::uint64_t kMinSamplesForP999 = 10000;  // DESIGN.md: below it p99.9 is the maximum
constexpr long kMaxThreads = 4096;
// One message thread's schedule: a request every microsecond at most.
constexpr double kMaxRatePerMessageThread = 1e6;

requests::PoolConfig config_from(const ParamValues& p) {
  requests::PoolConfig c;
  c.message_threads = p.at("message_threads").get<int>();
  c.workers = p.at("workers").get<int>();
  c.rate = p.at("rate").get<double>();
  c.duration_s = p.at("duration_s").get<double>();
  c.operations = p.at("operations").get<long>();
  c.footprint_kb = p.at("footprint_kb").get<long>();
  c.sleep_us = p.at("sleep_us").get<long>();
  c.timer_slack_ns = p.at("timer_slack_ns").get<long>();
  c.cpu_lock = p.at("cpu_lock").get<std::string>() == "on";
  c.policy = parse_policy(p.at("policy").get<std::string>());
  c.nice = p.at("nice").get<int>();
  return c;
}

double us(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

nlohmann::json histogram_summary(const LatencyHistogram& h) {
  return {{"count", h.count()}, {"p50_us", h.percentile_us(0.5)}, {"max_us", us(h.max_ns())}};
}

}  // namespace

std::string RequestsWorkload::summary() const {
  return "schbench-style: M message threads each handing requests to W workers by futex wakeups; each "
         "request is a think-time sleep and matrix multiplications over the worker's cache footprint; "
         "closed loop or a fixed request rate";
}

std::string RequestsWorkload::experiment() const {
  return "schbench (Chris Mason, 2016), the wakeup-latency and requests-per-second benchmark EEVDF, "
         "sched_ext and wakeup or load-balancing patches are judged by: the p99 time from a futex wake to "
         "the worker running, and the throughput of the pools.";
}

std::vector<ParamSpec> RequestsWorkload::params() const {
  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<ParamSpec> p;
  p.push_back({"message_threads",
               ParamKind::kInteger,
               1,
               "",
               "message threads, each with its own pool of workers (schbench -m)",
               1.0,
               256.0,
               {}});
  p.push_back({"workers",
               ParamKind::kInteger,
               cpus,
               "",
               "workers per message thread (default: online CPUs, schbench's -t default with one message "
               "thread)",
               1.0,
               1024.0,
               {}});
  p.push_back({"duration_s",
               ParamKind::kNumber,
               10.0,
               "s",
               "how long requests are handed out (queued ones get at most 1 s more to finish)",
               0.1,
               86400.0,
               {}});
  p.push_back({"rate",
               ParamKind::kNumber,
               0.0,
               "req/s",
               "fixed rate: requests per second over all message threads on an even schedule, latency "
               "counted from the scheduled time; 0: closed loop, each worker asks for its next request "
               "when done (schbench without -R)",
               0.0,
               1e7,
               {}});
  p.push_back({"operations",
               ParamKind::kInteger,
               5,
               "",
               "matrix multiplications per request (schbench -n); 0: no work",
               0.0,
               1e6,
               {}});
  p.push_back({"footprint_kb",
               ParamKind::kInteger,
               256,
               "KiB",
               "per-worker cache footprint: the three matrices of the work fill it (schbench -F)",
               1.0,
               16384.0,
               {}});
  p.push_back({"sleep_us",
               ParamKind::kInteger,
               100,
               "us",
               "think-time sleep of each request before its work (schbench -s); 0: none",
               0.0,
               1e6,
               {}});
  p.push_back({"cpu_lock",
               ParamKind::kChoice,
               "on",
               "",
               "hold a spin lock of the worker's CPU during the work (schbench's default; off = schbench -L)",
               std::nullopt,
               std::nullopt,
               {"on", "off"}});
  p.push_back({"timer_slack_ns",
               ParamKind::kInteger,
               50000,
               "ns",
               "timer slack of every thread (the think sleep and the fixed-rate schedule; 50 us is the "
               "kernel's default for a normal task)",
               1.0,
               1e9,
               {}});
  p.push_back(policy_param("the message threads and workers"));
  p.push_back(nice_param("the message threads and workers"));
  return p;
}

std::vector<MetricDesc> RequestsWorkload::metrics() const {
  const auto higher = Direction::kHigherIsBetter, lower = Direction::kLowerIsBetter;
  return {
      {"requests_s", "ops/s", higher, true, "requests completed per second of elapsed_s"},
      {"wakeup_p50_us", "us", lower, false,
       "median time from the waker's stamp (just before its futex wake) to the woken worker running"},
      {"wakeup_p99_us", "us", lower, true, "99th percentile of wakeup latency (schbench's starred figure)"},
      {"wakeup_p999_us", "us", lower, false,
       "99.9th percentile of wakeup latency; only from >= 10,000 wakeups in the repetition"},
      {"request_p50_us", "us", lower, false,
       "median time from a request's hand-over (closed loop) or scheduled time (fixed rate) to its end"},
      {"request_p99_us", "us", lower, false, "99th percentile of request latency"},
      {"requests", "count", higher, false, "requests completed"},
      {"operations", "count", higher, false, "= requests (counters per operation divide by it)"},
      {"wakeups", "count", higher, false, "worker wakeups measured"},
      {"elapsed_s", "s", lower, false,
       "from the start to the end of duration_s or the last completion, whichever is later"},
  };
}

std::map<std::string, std::map<std::string, std::string>> RequestsWorkload::quick_instances() const {
  return {{"requests", {{"duration_s", "1"}}}};
}

void RequestsWorkload::validate(const ParamValues& params, const WorkloadContext& /*ctx*/) const {
  const auto c = config_from(params);
  const long threads = static_cast<long>(c.message_threads) * (c.workers + 1);
  if (threads > kMaxThreads)
    throw InputError("requests.workers: " + std::to_string(c.message_threads) + " message threads x (" +
                     std::to_string(c.workers) + " workers + 1) = " + std::to_string(threads) +
                     " threads, more than " + std::to_string(kMaxThreads));
  const double side = static_cast<double>(requests::matrix_side(c.footprint_kb));
  const double bytes = 3.0 * side * side * 8.0 * c.message_threads * c.workers;
  const double memory =
      static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (memory > 0 && bytes > memory / 2)
    throw InputError("requests.footprint_kb: " + std::to_string(c.footprint_kb) + " KiB x " +
                     std::to_string(c.message_threads * c.workers) + " workers is more than half of the " +
                     std::to_string(static_cast<long long>(memory / (1 << 20))) + " MiB of memory");
  if (c.rate > 0 && c.rate / c.message_threads > kMaxRatePerMessageThread)
    throw InputError("requests.rate: " + std::to_string(c.rate) +
                     " req/s is more than 1,000,000 per message thread");
  if (c.rate > 0 && c.rate * c.duration_s < c.message_threads)
    throw InputError("requests.rate: " + std::to_string(c.rate) + " req/s over " +
                     std::to_string(c.duration_s) +
                     " s schedules fewer requests than there are message threads");
  // A real-time worker spinning on the lock of its CPU never lets a preempted holder of the same
  // priority back on that CPU.
  if (c.cpu_lock && (c.policy.policy == SCHED_FIFO || c.policy.policy == SCHED_RR))
    throw InputError(
        "requests.cpu_lock: on with a real-time policy can spin forever; set requests.cpu_lock=off");
}

WorkloadResult RequestsWorkload::run(const ParamValues& params, const WorkloadContext& /*ctx*/) {
  const auto c = config_from(params);
  const auto r = requests::run_pool(c);

  LatencyHistogram wakeup, request;
  std::uint64_t completed = 0, unfinished = 0, unsent = 0;
  std::int64_t last_done = r.end_ns;
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : r.groups) {
    nlohmann::json workers = nlohmann::json::array();
    for (const auto& w : g.workers) {
      wakeup.merge(w.wakeup);
      request.merge(w.request);
      completed += w.requests;
      unfinished += w.unfinished;
      last_done = std::max(last_done, w.last_done_ns);
      workers.push_back({{"requests", w.requests},
                         {"unfinished", w.unfinished},
                         {"wakeup", histogram_summary(w.wakeup)},
                         {"request", histogram_summary(w.request)}});
    }
    unsent += g.unsent;
    groups.push_back({{"handed_over", g.handed_over}, {"unsent", g.unsent}, {"workers", workers}});
  }
  if (completed == 0) throw Error("no request completed in " + std::to_string(c.duration_s) + " s");
  const double elapsed_s = static_cast<double>(last_done - r.start_ns) / 1e9;

  WorkloadResult result;
  auto& m = result.metrics;
  m["requests_s"] = {static_cast<double>(completed) / elapsed_s, "ops/s"};
  m["request_p50_us"] = {request.percentile_us(0.50), "us"};
  m["request_p99_us"] = {request.percentile_us(0.99), "us"};
  m["requests"] = {static_cast<double>(completed), "count"};
  m["operations"] = m["requests"];
  m["wakeups"] = {static_cast<double>(wakeup.count()), "count"};
  m["elapsed_s"] = {elapsed_s, "s"};
  auto& d = result.details;
  if (wakeup.count() > 0) {
    m["wakeup_p50_us"] = {wakeup.percentile_us(0.50), "us"};
    m["wakeup_p99_us"] = {wakeup.percentile_us(0.99), "us"};
  } else {
    // Fixed rate faster than the workers drain: they never slept, so no wakeup was measured.
    d["wakeup_latency_absent"] = "no worker slept: every request was queued behind another";
  }
  if (wakeup.count() >= kMinSamplesForP999) {
    m["wakeup_p999_us"] = {wakeup.percentile_us(0.999), "us"};
  } else {
    d["wakeup_p999_us_absent"] = std::to_string(wakeup.count()) + " wakeups < " +
                                 std::to_string(kMinSamplesForP999) + ": p99.9 would be the maximum";
  }
  d["mode"] = c.rate > 0 ? "fixed-rate" : "closed-loop";
  d["matrix_side"] = r.matrix_side;
  d["footprint_bytes"] = 3 * r.matrix_side * r.matrix_side * 8;
  // Fixed rate: what the pools could not take or finish; requests_s falls short of the rate by them.
  d["unsent"] = unsent;
  d["unfinished"] = unfinished;
  d["histogram"] = wakeup.to_json();  // the wakeup latencies, as the exporter reads `histogram`
  d["request_histogram"] = request.to_json();
  d["message_threads"] = groups;
  return result;
}

}  // namespace schedlab
