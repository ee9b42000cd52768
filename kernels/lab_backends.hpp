#pragma once
// The lab backends boot a real machine into a recipe's kernel: kexec (straight into it) or grub
// (one reboot into it; the saved default stays the known-good kernel, so a kernel that does not boot
// comes back to one that records the failure). Both write a boot state file first; after the
// reboot, `schedlab kernel resume` reads it and runs the suite, or records `boot-failed` when the
// machine came up in another kernel. Facts come in through LabEnvironment (tests point it at a tree).
#include <filesystem>
#include <functional>
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

// What a lab boot adds to the kernel's command line, in this order: the identity marker
// (identity_args), the recipe's own arguments, then --append. The marker comes first so that a later
// staging from the booted kernel knows where the previous boot's additions begin.
std::string lab_boot_args(const Recipe& recipe, const std::string& append);

// The command line a kexec'd kernel gets: the running one's (without BOOT_IMAGE=, initrd=, init's
// arguments after "--", and everything from an earlier lab boot's schedlab.recipe= marker on: that
// boot's recipe arguments and --append), then lab_boot_args.
std::string kexec_cmdline(const std::string& running_cmdline, const Recipe& recipe,
                          const std::string& append);

// A menu entry of a grub.cfg, as grub numbers and names it.
struct GrubEntry {
  std::vector<std::string> indexes, ids, titles;  // per menu level: the submenu (if any), then the entry
  std::string id_path;                            // "SUBMENU_ID>ENTRY_ID": a grub-reboot target
  std::string release;                            // its linux line loads vmlinuz-RELEASE ("" when not)
  std::string body;                               // the lines between its braces
  bool recovery = false;
};
std::vector<GrubEntry> grub_entries(const std::string& grub_cfg);

// The grub-reboot target for a release in a grub.cfg: "SUBMENU_ID>ENTRY_ID" of the non-recovery
// entry whose linux line loads vmlinuz-RELEASE; nullopt when there is none.
std::optional<std::string> grub_entry_for(const std::string& grub_cfg, const std::string& release);

// What the box boots when nobody picks: GRUB_DEFAULT as grub-mkconfig sees it (/etc/default/grub, then
// /etc/default/grub.d/*.cfg, the last assignment winning), grubenv's saved_entry when that is `saved`,
// and the grub.cfg entry (and kernel) it names.
struct DefaultBoot {
  bool grub = false;         // there is a grub.cfg: the default can be read (and changed by an install)
  std::string grub_default;  // "0" when no file sets it
  std::string saved_entry;   // "" when grubenv has none
  std::string entry;         // the id path of the entry grub boots by default ("" when none matches)
  std::string release;       // the kernel that entry loads
  std::string describe() const;
};
DefaultBoot default_boot(const LabEnvironment& env);

// After a reboot: reads the state file, runs the suite when the staged boot is the one running (its
// release, and its lab_boot_args on /proc/cmdline) through `run_suite`, which gets the argv and returns
// the exit code; else records boot-failed. Before the suite it marks the state file with this boot's
// id, so that a resume after a crash during the suite records that, not a kernel that did not come up.
// Writes a boot record into the state's out_dir and removes the state file (a result is recorded
// exactly once).
struct ResumeOutcome {
  std::string status;  // ok | failed | boot-failed
  std::string reason;
  std::filesystem::path record;
};
ResumeOutcome resume_boot(const std::filesystem::path& state_file, const LabEnvironment& env,
                          const std::function<int(const std::vector<std::string>&)>& run_suite);

}  // namespace schedlab::kernels
