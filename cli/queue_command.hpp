#pragma once
// `schedlab submit CAMPAIGN --queue URL --hosts PATTERN` and `schedlab queue --queue URL`: argument parsing
// and printing; the queue is daemon/store/work_queue.hpp.
#include <CLI/CLI.hpp>

#include <string>

namespace schedlab {

class QueueCommand {
 public:
  explicit QueueCommand(CLI::App& app);
  bool chosen() const { return submit_->parsed() || queue_->parsed(); }
  int run() const;

 private:
  int submit() const;
  int show() const;

  CLI::App *submit_, *queue_;
  std::string file_, url_, hosts_ = "*";
  double seen_within_s_ = 600;
  bool json_ = false;
};

}  // namespace schedlab
