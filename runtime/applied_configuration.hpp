#pragma once
// A runtime configuration applied for one trial: every setting written, read back and journalled
// before the trial, restored after it (restore_journal.hpp covers a schedlab that is killed).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "collector/runner/isolation.hpp"
#include "collector/runner/runner.hpp"
#include "core/host_paths.hpp"
#include "runtime/configuration.hpp"

namespace schedlab::runtime {

struct RuntimeContext {
  HostPaths paths = HostPaths::live();
  std::filesystem::path journal_dir;     // CACHE/runtime
  std::filesystem::path schedulers_dir;  // schedlab-scx and NAME.bpf.o (schedulers/)
  IsolationMode isolation = IsolationMode::kAuto;
  double attach_timeout_s = 60;  // BPF verification takes ~0.7 s under TCG; a slow box gets room
};

// BUILD/schedulers beside the running schedlab binary.
std::filesystem::path default_schedulers_dir();

// Applies `c` (throws Error naming the configuration and the setting the kernel refused; what was
// applied before the refusal is restored first).
std::unique_ptr<TrialEnvironment> apply_configuration(const RuntimeConfiguration& c,
                                                      const RuntimeContext& ctx);

TrialEnvironmentFactory environment_factory(RuntimeConfiguration c, RuntimeContext ctx);

// Before any trial: each configuration applied and restored once, so a refusal (a locked-down debugfs,
// a missing file, a kernel without sched_ext) is an InputError before anything is measured. Returns the
// switch records (apply and restore times) of these rehearsals. A sched_ext scheduler is checked (kernel,
// loader, object), not attached.
nlohmann::json rehearse_configurations(const std::vector<RuntimeConfiguration>& configurations,
                                       const RuntimeContext& ctx);

}  // namespace schedlab::runtime
