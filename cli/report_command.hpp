#pragma once
// `schedlab report A [B...] -o FILE.html`: options and execution, kept out of main.cpp's list of commands.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace schedlab {

class ReportCommand {
 public:
  explicit ReportCommand(CLI::App& app);
  bool chosen() const { return command_->parsed(); }
  int run() const;  // throws InputError for unreadable or incomparable inputs, before writing anything

 private:
  CLI::App* command_;
  std::vector<std::string> sides_;
  std::string out_;
  double alpha_ = 0.05;
  double min_effect_pct_ = 2.0;
  bool force_ = false;
  std::string store_ = "results";
};

}  // namespace schedlab
