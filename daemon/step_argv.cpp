#include "daemon/step_argv.hpp"

#include <cmath>

#include <fmt/format.h>

#include "daemon/lab_boot.hpp"

namespace schedlab {

namespace fs = std::filesystem;

int qemu_step_timeout_s(const Campaign& c, const CampaignStep& s) {
  // The step's own budget: its repetitions and the discarded warm-up, each up to the campaign's
  // per-repetition timeout, the settle wait, and the guest's boot and shutdown on top.
  const double budget = (s.repetitions + 1) * c.timeout_s + c.settle_timeout_s + kQemuBootAllowanceS;
  return static_cast<int>(std::ceil(budget));
}

std::vector<std::string> step_argv(const Campaign& c, const CampaignStep& s, const fs::path& binary,
                                   const fs::path& attempt_dir) {
  // The campaign's instance id ("yield.threads=2"): without it every step of a sweep records "yield".
  std::vector<std::string> run{"run", "--workload", s.workload, "--instance-id", s.instance_id};
  for (const auto& [key, value] : s.params)
    run.insert(run.end(), {"--param", s.workload + "." + key + "=" + value});
  run.insert(run.end(),
             {"--repetitions", std::to_string(s.repetitions), "--seed", std::to_string(s.seed), "--timeout",
              fmt::format("{:g}", c.timeout_s), "--settle-timeout", fmt::format("{:g}", c.settle_timeout_s)});
  if (c.workload_user != "root") run.insert(run.end(), {"--workload-user", c.workload_user});
  if (c.memory_limit_bytes) run.insert(run.end(), {"--memory-limit", std::to_string(*c.memory_limit_bytes)});
  if (!c.host_label.empty()) run.insert(run.end(), {"--host-label", c.host_label});
  if (!c.counters) run.push_back("--no-counters");
  for (const auto& e : c.events) run.insert(run.end(), {"--event", e});
  if (c.profile) run.push_back("--profile");
  std::vector<std::string> argv{binary.string()};
  if (on_running_kernel(s.configuration)) {
    argv.insert(argv.end(), run.begin(), run.end());
    argv.insert(argv.end(), {"--out", attempt_dir.string()});
    // A runtime configuration of the booted kernel: applied around the step's trial, restored after.
    if (const auto name = runtime_configuration_of(s.configuration); !name.empty()) {
      argv.insert(argv.end(), {"--configuration", name});
      if (!c.runtime_configurations.empty())
        argv.insert(argv.end(), {"--configurations", c.runtime_configurations.string()});
    }
  } else {
    argv.push_back("kernel");
    if (!c.kernel_cache.empty()) argv.insert(argv.end(), {"--cache-dir", c.kernel_cache.string()});
    if (!c.recipes.empty()) argv.insert(argv.end(), {"--recipes", c.recipes.string()});
    argv.insert(argv.end(), {"boot", s.configuration, "--out", attempt_dir.string()});
    if (c.boot == "qemu") argv.insert(argv.end(), {"--timeout", std::to_string(qemu_step_timeout_s(c, s))});
    if (c.boot != "qemu")
      argv.insert(argv.end(), {"--backend", c.boot, "--state-file", (attempt_dir / kBootStateFile).string()});
    argv.push_back("--");
    argv.insert(argv.end(), run.begin(), run.end());
    argv.insert(argv.end(), {"--label", s.configuration});
  }
  return argv;
}

}  // namespace schedlab
