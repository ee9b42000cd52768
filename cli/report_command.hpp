#pragma once
// `schedlab report A [B...] -o FILE.html`: options and execution, kept out of main.cpp's list of commands.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/comparison_options.hpp"

namespace schedlab {

class ReportCommand {
 public:
  explicit ReportCommand(CLI::App& app);
  bool chosen() const { return command_->parsed(); }
  int run() const;  // throws InputError for unreadable or incomparable inputs, before writing anything

 private:
  CLI::App* command_;
  ComparisonOptions comparison_;
  std::string out_;
};

}  // namespace schedlab
