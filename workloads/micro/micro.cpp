#include "workloads/micro/micro.hpp"

#include <optional>

#include "core/error.hpp"
#include "workloads/common/placement.hpp"
#include "workloads/common/task_setup.hpp"
#include "workloads/micro/gbench_run.hpp"
#include "workloads/micro/primitives.hpp"

namespace schedlab {
namespace {

// Every primitive, the two-thread ones with both ends on one CPU and on two cores: a list
// value, so that the runner makes one instance of each (a sweep).
constexpr const char* kDefaultBenchmarks =
    "[yield,pipe:same-cpu,pipe:other-core,futex:same-cpu,futex:other-core,thread_create,"
    "migrate:other-core,nanosleep]";

struct Choice {
  const micro::Primitive* primitive;
  Placement placement;
};

std::string known_primitives() {
  std::string out;
  for (const auto& p : micro::primitives()) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

// "NAME" or "NAME:PLACEMENT"; throws InputError naming the parameter.
Choice parse_benchmark(const std::string& text) {
  const std::string param = "micro.benchmarks";
  if (!text.empty() && text.front() == '[')
    throw InputError(param + ": '" + text + "': a list is a sweep, expanded by `schedlab run`");
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  const auto* primitive = micro::find_primitive(name);
  if (!primitive)
    throw InputError(param + ": unknown benchmark '" + name + "' (known: " + known_primitives() +
                     "; NAME:PLACEMENT places its threads)");
  Placement placement = Placement::kUnpinned;
  if (colon != std::string::npos) {
    try {
      placement = parse_placement(text.substr(colon + 1));
    } catch (const InputError& e) {
      throw InputError(param + ": " + e.what());
    }
  }
  if (placement == Placement::kSameThread)
    throw InputError(param + ": " + text + ": same-thread applies to tbench only");
  if (primitive->needs_two_cpus && placement == Placement::kUnpinned)
    throw InputError(param + ": " + name + " needs two CPUs: give a placement, e.g. " + name + ":other-core");
  return {primitive, placement};
}

// The CPUs of the benchmark's thread and of its partner.
std::vector<int> cpus_for(const Choice& c, const WorkloadContext& ctx) {
  try {
    return assign_cpus(c.placement, 2, ctx.topology, ctx.allowed_cpus);
  } catch (const InputError& e) {
    throw InputError(std::string("micro.benchmarks: ") + e.what());
  }
}

}  // namespace

std::string MicroWorkload::summary() const {
  return "scheduler primitives under Google Benchmark: sched_yield, pipe and futex ping-pong, thread "
         "creation, migration, clock_nanosleep overshoot";
}

std::string MicroWorkload::experiment() const {
  return "lmbench's lat_ctx and `perf bench sched pipe`: the cost of one scheduler operation measured "
         "in-process, with the kernel's counters per operation.";
}

std::vector<ParamSpec> MicroWorkload::params() const {
  std::vector<ParamSpec> p;
  p.push_back({"benchmarks",
               ParamKind::kText,
               kDefaultBenchmarks,
               "",
               "the benchmark, NAME or NAME:PLACEMENT (NAME: yield, pipe, futex, thread_create, migrate, "
               "nanosleep; PLACEMENT: where its two threads, or a migration's two CPUs, are); a list "
               "[A,B] sweeps",
               std::nullopt,
               std::nullopt,
               {}});
  p.push_back({"min_time_s",
               ParamKind::kNumber,
               0.5,
               "s",
               "fixed-time mode: Google Benchmark's minimum time of the measured run",
               0.001,
               60.0,
               {}});
  p.push_back({"iterations",
               ParamKind::kInteger,
               0,
               "",
               "fixed-iteration mode when > 0: one run of exactly this many operations",
               0.0,
               1e12,
               {}});
  p.push_back({"sleep_ns", ParamKind::kInteger, 100000, "ns", "what nanosleep requests", 1.0, 1e9, {}});
  p.push_back({"timer_slack_ns",
               ParamKind::kInteger,
               50000,
               "ns",
               "nanosleep's timer slack (PR_SET_TIMERSLACK; 50000 is the kernel's default for SCHED_OTHER)",
               1.0,
               1e9,
               {}});
  p.push_back(policy_param("the benchmark's threads"));
  p.push_back(nice_param("the benchmark's threads"));
  return p;
}

std::vector<MetricDesc> MicroWorkload::metrics() const {
  return {
      {"ns_per_op", "ns", Direction::kLowerIsBetter, true,
       "wall time per operation of the measured run (Google Benchmark's real_time)"},
      {"cpu_ns_per_op", "ns", Direction::kLowerIsBetter, false,
       "CPU time of the benchmark's own thread per operation (Google Benchmark's cpu_time)"},
      {"iterations", "count", Direction::kHigherIsBetter, false, "operations of the measured run"},
      {"operations", "count", Direction::kHigherIsBetter, false,
       "operations of every run in the repetition, Google Benchmark's calibration runs included: "
       "what the runner divides its counters by (COUNTER/op)"},
      {"thread_switches_per_op", "count", Direction::kLowerIsBetter, false,
       "context switches of the benchmark's threads per operation (getrusage RUSAGE_THREAD, measured run)"},
      {"thread_migrations_per_op", "count", Direction::kLowerIsBetter, false,
       "CPU migrations of the benchmark's own thread per operation (se.nr_migrations, measured run)"},
      {"overshoot_ns", "ns", Direction::kLowerIsBetter, false,
       "nanosleep only: mean time from the deadline to the return of clock_nanosleep"},
  };
}

std::map<std::string, std::map<std::string, std::string>> MicroWorkload::quick_instances() const {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::string list = kDefaultBenchmarks;
  list = list.substr(1, list.size() - 2);
  for (std::size_t start = 0;;) {
    const auto comma = list.find(',', start);
    const auto value = list.substr(start, comma - start);
    // The id a sweep of the default gives, so that quick and full runs match in a diff.
    out["micro.benchmarks=" + value] = {{"benchmarks", value}, {"min_time_s", "0.1"}};
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void MicroWorkload::validate(const ParamValues& params, const WorkloadContext& ctx) const {
  const auto choice = parse_benchmark(params.at("benchmarks").get<std::string>());
  cpus_for(choice, ctx);
  parse_policy(params.at("policy").get<std::string>());
}

WorkloadResult MicroWorkload::run(const ParamValues& params, const WorkloadContext& ctx) {
  const auto name = params.at("benchmarks").get<std::string>();
  const auto choice = parse_benchmark(name);
  const auto cpus = cpus_for(choice, ctx);

  micro::GbenchRequest req;
  req.primitive = choice.primitive;
  req.name = name;
  req.min_time_s = params.at("min_time_s").get<double>();
  req.iterations = params.at("iterations").get<long long>();
  // A migration between "unpinned" CPUs is refused by parse_benchmark; every other primitive
  // leaves an unpinned thread where the scheduler puts it.
  req.config.cpu0 = cpus[0];
  req.config.cpu1 = cpus[1];
  req.config.policy = parse_policy(params.at("policy").get<std::string>());
  req.config.nice = params.at("nice").get<int>();
  req.config.sleep_ns = params.at("sleep_ns").get<std::int64_t>();
  req.config.timer_slack_ns = params.at("timer_slack_ns").get<std::int64_t>();
  const auto out = micro::run_gbench(req);

  const auto& entry = out.run;
  if (entry.value("time_unit", "") != "ns")
    throw Error("Google Benchmark reported " + name + " in '" + entry.value("time_unit", "") + "', not ns");
  WorkloadResult result;
  auto& m = result.metrics;
  m["ns_per_op"] = {entry.at("real_time").get<double>(), "ns"};
  m["cpu_ns_per_op"] = {entry.at("cpu_time").get<double>(), "ns"};
  m["iterations"] = {entry.at("iterations").get<double>(), "count"};
  m["operations"] = {static_cast<double>(out.operations), "count"};
  if (entry.contains("thread_switches"))
    m["thread_switches_per_op"] = {entry["thread_switches"].get<double>(), "count"};
  if (entry.contains("thread_migrations"))
    m["thread_migrations_per_op"] = {entry["thread_migrations"].get<double>(), "count"};
  if (entry.contains("overshoot_ns")) m["overshoot_ns"] = {entry["overshoot_ns"].get<double>(), "ns"};

  result.details = {{"benchmark", name},
                    {"primitive", choice.primitive->name},
                    {"operation", choice.primitive->op},
                    {"placement", to_string(choice.placement)},
                    {"cpus", cpus},
                    {"mode", req.iterations > 0 ? "fixed-iterations" : "fixed-time"},
                    {"gbench", out.json}};
  return result;
}

}  // namespace schedlab
