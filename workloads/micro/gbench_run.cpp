#include "workloads/micro/gbench_run.hpp"

#include <sstream>
#include <vector>

#include "core/error.hpp"

namespace schedlab::micro {

GbenchOutcome run_gbench(const GbenchRequest& req) {
  // Google Benchmark keeps its flags and its list of benchmarks in globals of its own. This runs
  // in the runner's child, a fresh process per repetition; the list is cleared again on the way
  // out so that a second call in one process starts from nothing too.
  std::vector<char> argv0{'s', 'c', 'h', 'e', 'd', 'l', 'a', 'b', '\0'};
  char* argv[] = {argv0.data(), nullptr};
  int argc = 1;
  benchmark::Initialize(&argc, argv);
  benchmark::ClearRegisteredBenchmarks();

  GbenchOutcome out;
  const GbenchRequest* request = &req;
  long long* operations = &out.operations;
  auto* b = benchmark::RegisterBenchmark(req.name.c_str(), [request, operations](benchmark::State& state) {
    request->primitive->fn(state, request->config);
    *operations += static_cast<long long>(state.iterations());
  });
  // Wall time decides the iteration count: several primitives sleep, and the benchmark thread's
  // CPU time would then be far below the wall time it takes. Minimum time and iterations are set
  // here, not by flags: Debian's 1.7.1 takes --benchmark_min_time as a plain number only.
  // Repetitions(1) guards against BENCHMARK_REPETITIONS in the environment (the runner repeats,
  // not Google Benchmark); it puts "repeats:1" into the name.
  b->UseRealTime()->Unit(benchmark::kNanosecond)->Repetitions(1);
  if (req.iterations > 0)
    b->Iterations(req.iterations);
  else
    b->MinTime(req.min_time_s);

  std::ostringstream json_text, errors;
  benchmark::JSONReporter reporter;
  reporter.SetOutputStream(&json_text);
  reporter.SetErrorStream(&errors);
  const std::size_t matched = benchmark::RunSpecifiedBenchmarks(&reporter, ".");
  benchmark::ClearRegisteredBenchmarks();
  if (matched != 1)
    throw Error("Google Benchmark ran " + std::to_string(matched) + " benchmarks instead of " + req.name +
                (errors.str().empty() ? "" : ": " + errors.str()));

  out.json = nlohmann::json::parse(json_text.str(), nullptr, /*allow_exceptions=*/false);
  if (!out.json.is_object() || !out.json.contains("benchmarks") || out.json["benchmarks"].size() != 1)
    throw Error("Google Benchmark's JSON output for " + req.name + " is not one run: " + json_text.str());
  out.run = out.json["benchmarks"][0];
  if (out.run.value("error_occurred", false))
    throw Error(req.name + ": " + out.run.value("error_message", std::string("error without a message")));
  return out;
}

}  // namespace schedlab::micro
