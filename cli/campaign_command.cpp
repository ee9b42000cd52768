#include "cli/campaign_command.hpp"

#include <chrono>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"

#include "daemon/campaign/campaign.hpp"
#include "daemon/campaign/check_report.hpp"
#include "daemon/campaign_experiments.hpp"
#include "daemon/store/pg.hpp"
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

namespace {

// Per instance of a target campaign: the plan its earlier runs' spread gives, or that the pilot will.
std::string target_plan_lines(const Campaign& c, const std::vector<CampaignStep>& plan) {
  std::string out;
  std::set<std::string> seen;
  for (const auto& step : plan) {
    if (!seen.insert(step.instance_id).second) continue;
    const auto metric = campaign_metric(step.workload);
    const auto known =
        campaign_history(campaign_runs_directory(c), campaign_comparison_key(c, step, metric.name), "");
    if (!known) {
      out += fmt::format("{}: no earlier run compared it: the pilot's {} pairs plan it\n", step.instance_id,
                         c.target->pilot);
      continue;
    }
    const SequentialExperiment experiment(campaign_design(c), metric.direction, known);
    out += fmt::format("{}: {} (boots included)\n", step.instance_id, experiment.plan_line());
    const auto& lv = known->levels;
    if (lv.is_object() && lv.contains("best_repetitions_per_trial"))
      out += fmt::format(
          "{}: levels: sigma {:.2f}% between repetitions ({:.2f} s each), {:.2f}% between trials ({:.1f} s "
          "of "
          "boot, start-up and warm-up each): {} repetitions per trial would reach the target in the least "
          "machine time ({} given)\n",
          step.instance_id, lv["sigma_repetition"].get<double>() * 100,
          lv["repetition_seconds"].get<double>(), lv["sigma_trial"].get<double>() * 100,
          lv["trial_overhead_seconds"].get<double>(), lv["best_repetitions_per_trial"].get<double>(),
          step.repetitions);
  }
  return out;
}

}  // namespace

int CampaignCommand::run() const {
  const auto campaign = load_campaign(
      file_, recipes_dir_.empty() ? kernels::default_recipes_dir() : std::filesystem::path(recipes_dir_));
  check_on_host(campaign);
  const auto plan = expand_plan(campaign);
  // Past runs from the campaign's own store, when it exists already (check never creates one, nor a
  // PostgreSQL store's schema; a server that does not answer leaves the estimate without them).
  std::map<std::string, double> past;
  const std::string prefix = "sqlite://";
  if (campaign.store_url.rfind(prefix, 0) == 0 &&
      std::filesystem::exists(campaign.store_url.substr(prefix.size())))
    past = open_store(campaign.store_url)->seconds_per_repetition();
  else if (pg::is_postgres_url(campaign.store_url))
    try {
      past = open_store_to_read(campaign.store_url)->seconds_per_repetition();
    } catch (const Error& e) {
      std::cerr << "schedlab: no past runs for the estimate: " << e.what() << "\n";
    }
  const auto estimate = estimate_duration(plan, past);
  if (campaign.target && campaign.target->budget_s && estimate.seconds &&
      *estimate.seconds / campaign.trials > *campaign.target->budget_s)
    throw InputError(
        fmt::format("{}: [campaign] budget: {} is below one pair of trials, which took {} here "
                    "(boots not counted; from {})",
                    campaign.file.string(), format_duration(*campaign.target->budget_s),
                    format_duration(*estimate.seconds / campaign.trials), pg::redacted(campaign.store_url)));
  std::cout << format_campaign_check(campaign, plan, estimate, std::chrono::system_clock::now());
  if (campaign.target) std::cout << target_plan_lines(campaign, plan);
  return 0;
}

}  // namespace schedlab
