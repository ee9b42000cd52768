#include "cli/campaign_command.hpp"

#include <chrono>
#include <iostream>

#include "daemon/campaign/campaign.hpp"
#include "daemon/campaign/check_report.hpp"
#include "daemon/store/store.hpp"
#include "kernels/recipe.hpp"

namespace schedlab {

CampaignCommand::CampaignCommand(CLI::App& app) {
  command_ = app.add_subcommand("campaign", "Campaign files for `schedlab daemon`");
  command_->require_subcommand(1);
  check_ = command_->add_subcommand(
      "check", "Validate a campaign file and print its plan, totals, next run and estimated duration");
  check_->add_option("FILE", file_, "The campaign file (TOML)")->required();
  check_->add_option(
      "--recipes", recipes_dir_,
      "Kernel recipe directory configurations are checked against (default: the built-in one)");
}

int CampaignCommand::run() const {
  const auto campaign = load_campaign(
      file_, recipes_dir_.empty() ? kernels::default_recipes_dir() : std::filesystem::path(recipes_dir_));
  check_on_host(campaign);
  const auto plan = expand_plan(campaign);
  // Past runs come from the store once the daemon's store is wired in; until then, none are known.
  // Past runs from the campaign's own store, when it exists already (check never creates one).
  std::map<std::string, double> past;
  const std::string prefix = "sqlite://";
  if (campaign.store_url.rfind(prefix, 0) == 0 &&
      std::filesystem::exists(campaign.store_url.substr(prefix.size())))
    past = open_store(campaign.store_url)->seconds_per_repetition();
  const auto estimate = estimate_duration(plan, past);
  std::cout << format_campaign_check(campaign, plan, estimate, std::chrono::system_clock::now());
  return 0;
}

}  // namespace schedlab
