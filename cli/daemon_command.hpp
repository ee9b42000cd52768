#pragma once
// `schedlab daemon --config FILE | --queue URL`: argument parsing only; the work is in daemon/.
#include <CLI/CLI.hpp>

#include <string>

#include "daemon/queue_worker.hpp"

namespace schedlab {

class DaemonCommand {
 public:
  explicit DaemonCommand(CLI::App& app);
  bool chosen() const { return command_->parsed(); }
  int run() const;
  int run_queue() const;

 private:
  CLI::App* command_;
  std::string config_, log_level_ = "info", isolation_, output_;
  QueueWorkerOptions queue_;
};

}  // namespace schedlab
