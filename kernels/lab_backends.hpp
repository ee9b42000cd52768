#pragma once
// The lab backends boot a real machine into a recipe's kernel: kexec (straight into it) or grub
// (one reboot into it; the saved default stays the known-good kernel, so a kernel that does not boot
// comes back to one that records the failure). Both write a boot state file first; after the
// reboot, `schedlab kernel resume` reads it and runs the suite, or records `boot-failed` when the
// machine came up in another kernel. Facts come in through LabEnvironment (tests point it at a tree).
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/host_paths.hpp"
#include "kernels/boot_backend.hpp"

namespace schedlab::kernels {

struct LabEnvironment {
  HostPaths paths;                     // /proc (cmdline, boot_id, osrelease) and /boot (kernels, grub.cfg)
  std::filesystem::path etc = "/etc";  // default/grub
  std::filesystem::path run = "/run";  // systemd/system: systemd is PID 1
};

std::unique_ptr<BootBackend> make_kexec_backend(const LabEnvironment& env);
std::unique_ptr<BootBackend> make_grub_backend(const LabEnvironment& env);

// The command line a kexec'd kernel gets: the running one's (without BOOT_IMAGE=, initrd=, init's
// arguments after "--" and earlier schedlab.* words), then the recipe's, then its identity.
std::string kexec_cmdline(const std::string& running_cmdline, const Recipe& recipe,
                          const std::string& append);

// The grub-reboot target for a release in a grub.cfg: "SUBMENU_ID>ENTRY_ID" of the non-recovery
// entry whose linux line loads vmlinuz-RELEASE; nullopt when there is none.
std::optional<std::string> grub_entry_for(const std::string& grub_cfg, const std::string& release);

// After a reboot: reads the state file, runs the suite when the expected kernel is running (through
// `run_suite`, which gets the argv and returns the exit code), else records boot-failed; writes a boot
// record into the state's out_dir and removes the state file (a result is recorded exactly once).
struct ResumeOutcome {
  std::string status;  // ok | failed | boot-failed
  std::string reason;
  std::filesystem::path record;
};
ResumeOutcome resume_boot(const std::filesystem::path& state_file, const LabEnvironment& env,
                          const std::function<int(const std::vector<std::string>&)>& run_suite);

}  // namespace schedlab::kernels
