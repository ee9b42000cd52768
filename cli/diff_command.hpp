#pragma once
// `schedlab diff BASE OTHER...`: options and execution, kept out of main.cpp's list of commands.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/comparison_options.hpp"

namespace schedlab {

inline constexpr int kExitRegression = 3;  // diff --fail-on worse found a regression

class DiffCommand {
 public:
  explicit DiffCommand(CLI::App& app);
  bool chosen() const { return command_->parsed(); }
  int run() const;  // throws InputError for inputs that cannot be compared

 private:
  CLI::App* command_;
  ComparisonOptions comparison_;
  bool json_ = false;   // --json: --format json, as before --format existed
  std::string format_;  // text (80 columns, for mail), markdown, json; empty: text for a terminal
  bool all_counters_ = false;
  std::string fail_on_;
  std::size_t profile_lines_ = 0;
  bool profile_all_ = false;
};

}  // namespace schedlab
