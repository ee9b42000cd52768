#pragma once
// Runs one primitive under Google Benchmark and returns what its JSON reporter wrote.
#include <string>

#include <nlohmann/json.hpp>

#include "workloads/micro/primitives.hpp"

namespace schedlab::micro {

struct GbenchRequest {
  const Primitive* primitive = nullptr;
  std::string name;          // the benchmark's name, e.g. "pipe:same-cpu"
  double min_time_s = 0.5;   // fixed-time mode
  long long iterations = 0;  // > 0: fixed-iteration mode (one run of exactly this many)
  PrimitiveConfig config;
};

struct GbenchOutcome {
  nlohmann::json json;       // Google Benchmark's JSON output: context and benchmarks
  long long operations = 0;  // iterations of every run, its calibration runs included
  nlohmann::json run;        // the entry of the measured run
};

// Throws Error with Google Benchmark's message when the benchmark reported an error.
GbenchOutcome run_gbench(const GbenchRequest& request);

}  // namespace schedlab::micro
