#pragma once
// `schedlab campaign check FILE`: argument parsing only; the work is in daemon/campaign/.
#include <CLI/CLI.hpp>

#include <string>

namespace schedlab {

class CampaignCommand {
 public:
  explicit CampaignCommand(CLI::App& app);
  bool chosen() const { return command_->parsed(); }
  int run() const;  // throws InputError for a bad campaign file

 private:
  CLI::App* command_;
  CLI::App* check_;
  std::string file_;
  std::string recipes_dir_;
};

}  // namespace schedlab
