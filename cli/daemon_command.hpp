#pragma once
// `schedlab daemon --config FILE`: argument parsing only; the work is in daemon/.
#include <CLI/CLI.hpp>

#include <string>

namespace schedlab {

class DaemonCommand {
 public:
  explicit DaemonCommand(CLI::App& app);
  bool chosen() const { return command_->parsed(); }
  int run() const;

 private:
  CLI::App* command_;
  std::string config_, log_level_ = "info", isolation_;
};

}  // namespace schedlab
