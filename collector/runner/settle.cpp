#include "collector/runner/settle.hpp"

#include <chrono>
#include <sstream>
#include <thread>

#include "core/clock.hpp"

namespace schedlab {
namespace {

struct LoadSample {
  double load1 = -1;
  int running = -1;
};

LoadSample sample(const HostPaths& paths) {
  LoadSample s;
  auto load = split_ws(read_line(paths.proc / "loadavg").value_or(""));
  if (!load.empty()) s.load1 = std::stod(load[0]);
  std::istringstream stat(read_text(paths.proc / "stat").value_or(""));
  for (std::string line; std::getline(stat, line);)
    if (line.rfind("procs_running ", 0) == 0) s.running = std::stoi(line.substr(14));
  return s;
}

}  // namespace

nlohmann::json settle(const SettlePolicy& policy, int cpus, const HostPaths& paths) {
  const double start = monotonic_seconds();
  const double max_load = policy.max_load_per_cpu * std::max(cpus, 1);
  LoadSample first = sample(paths), last = first;
  bool quiet = false;
  for (;;) {
    quiet =
        last.load1 >= 0 && last.load1 <= max_load && last.running >= 0 && last.running <= policy.max_running;
    if (quiet || monotonic_seconds() - start >= policy.max_wait_s) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    last = sample(paths);
  }
  return {{"settled", quiet},
          {"waited_s", monotonic_seconds() - start},
          {"load1_first", first.load1},
          {"procs_running_first", first.running},
          {"load1", last.load1},
          {"procs_running", last.running},
          {"max_load1", max_load},
          {"max_running", policy.max_running},
          {"max_wait_s", policy.max_wait_s}};
}

}  // namespace schedlab
