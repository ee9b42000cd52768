#pragma once
// `schedlab kernel list | info | fetch | build | update | boot | resume`: argument parsing only; the
// work is in kernels/.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace schedlab {

class KernelCommand {
 public:
  explicit KernelCommand(CLI::App& app);
  bool chosen() const { return command_->parsed(); }
  int run() const;

 private:
  CLI::App* command_;
  CLI::App *list_, *info_, *fetch_, *build_, *update_, *boot_, *resume_, *guest_collect_;
  std::string recipes_dir_, cache_dir_, name_;
  std::string collect_from_, collect_to_;  // guest-collect
  // boot
  std::vector<std::string> run_args_;
  std::string backend_ = "qemu", then_, append_, topology_, out_ = "results", accel_ = "tcg", root_ = "9p",
              cpu_, tcg_thread_;
  std::string state_file_ = "/var/lib/schedlab/boot-state.json";
  int smp_ = 2, memory_mib_ = 2048, numa_ = 0, timeout_s_ = 900, boot_timeout_s_ = 120;
  std::string then_label_;  // --then-label: the --then kernel's bundles
  int poweroff_grace_s_ = 30;
  bool dry_run_ = false, prepare_only_ = false, allow_dirty_ = false;
  int jobs_ = 0;
  // build --git PATH --ref A --ref B
  std::string git_, git_config_ = "defconfig", git_fragment_, git_name_, git_recipes_out_;
  std::vector<std::string> refs_;

  int build_refs() const;
};

}  // namespace schedlab
