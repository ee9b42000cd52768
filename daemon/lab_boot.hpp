#pragma once
// A step that boots the lab box itself (campaign `boot = "kexec"` or "grub") spans a reboot: the step's
// `schedlab kernel boot --backend B --state-file ATTEMPT/boot-state.json` stages the boot and the
// machine goes down; the unit starts the daemon again in the new kernel, and the daemon resumes the
// step with `schedlab kernel resume`. What a restarted daemon finds in the step's attempt directory
// tells it which of these happened, using the boot ids the kernel gives every boot.
#include <filesystem>
#include <string>

namespace schedlab {

inline constexpr const char* kBootStateFile = "boot-state.json";  // written by `kernel boot` when staging
inline constexpr const char* kResumeMarker = "resumed-in-boot";   // the boot id the resume started in

enum class StagedBoot {
  kNone,         // nothing staged: the daemon ended before the step staged its boot; rerun it
  kNotRebooted,  // staged in this very boot: the reboot never came; rerun it (it stages again)
  kRebooted,     // staged in an earlier boot and not yet resumed: resume it in this kernel
  kResumeCut,    // its resume began in this boot and was cut short (the daemon was killed); rerun it
  kWentDown,     // its resume began in an earlier boot: the machine went down while the suite ran in
                 // the kernel under test; the step fails with that as its reason
};

// Throws Error naming the file when the state file is not the JSON `kernel boot` writes.
StagedBoot staged_boot(const std::filesystem::path& attempt_dir, const std::string& current_boot_id);
std::string to_string(StagedBoot s);

class Log;
// After a staged boot that never came: the kexec kernel unloaded (`backend` "kexec"), or grub's one-shot
// entry dropped ("grub"), so that a later reboot for any other reason does not boot the kernel under test.
// Logs and returns what was done, for the step's reason.
std::string unstage_boot(const std::string& backend, const Log& log);

}  // namespace schedlab
