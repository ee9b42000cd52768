#pragma once
// `schedlab diff BASE OTHER...`: options and execution, kept out of main.cpp's list of commands.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace schedlab {

inline constexpr int kExitRegression = 3;  // diff --fail-on worse found a regression

class DiffCommand {
 public:
  explicit DiffCommand(CLI::App& app);
  bool chosen() const { return command_->parsed(); }
  int run() const;  // throws InputError for inputs that cannot be compared

 private:
  CLI::App* command_;
  std::vector<std::string> sides_;
  bool json_ = false;
  double alpha_ = 0.05;
  double min_effect_pct_ = 2.0;
  std::string fail_on_;
  bool force_ = false;
  std::size_t profile_lines_ = 0;
  bool profile_all_ = false;
  std::string store_ = "results";
};

}  // namespace schedlab
