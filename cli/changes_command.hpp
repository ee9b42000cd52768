#pragma once
// `schedlab changes`: change points on every series of the store (changes/), with the status stored for
// each, and with --confirm a paired rerun of each suspected one; argument parsing and printing only.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace schedlab {

class ChangesCommand {
 public:
  explicit ChangesCommand(CLI::App& app);
  bool chosen() const { return command_->parsed(); }
  int run() const;  // throws InputError for a bad option (exit 2)

 private:
  CLI::App* command_;
  std::string url_, since_, workload_, metric_, rerun_dir_, kernel_cache_, confirm_budget_ = "3m";
  bool json_ = false, confirm_ = false;
  std::uint64_t seed_ = 1;
  double alpha_ = 0.05, min_effect_pct_ = 2;
};

}  // namespace schedlab
