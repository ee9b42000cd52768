#include "cli/queue_command.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "daemon/campaign/campaign.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/work_queue.hpp"
#include "kernels/recipe.hpp"

namespace schedlab {

QueueCommand::QueueCommand(CLI::App& app) {
  submit_ =
      app.add_subcommand("submit", "Put a campaign's steps in the lab's work queue for a class of hosts");
  submit_->add_option("CAMPAIGN", file_, "Campaign file (TOML); its plan's steps are queued")->required();
  submit_
      ->add_option("--hosts", hosts_,
                   "Hosts that may run them: a glob of host names, class labels or shapes (\"*\": any)")
      ->default_val("*");
  queue_ = app.add_subcommand("queue", "What the lab's work queue holds, and what waits for a host class");
  queue_
      ->add_option("--seen-within", seen_within_s_,
                   "A daemon counts as present when it asked for work this many seconds ago or less")
      ->default_val(600);
  queue_->add_flag("--json", json_, "One JSON object per submission, for scripts");
  for (auto* c : {submit_, queue_})
    c->add_option("--queue", url_, "The queue's PostgreSQL database (postgresql://...)")->required();
}

int QueueCommand::run() const {
  if (!pg::is_postgres_url(url_))
    throw InputError("--queue " + url_ + ": expected a PostgreSQL URL (postgresql://...)");
  return submit_->parsed() ? submit() : show();
}

int QueueCommand::submit() const {
  WorkQueue::check_hosts_pattern(hosts_);
  const Campaign campaign = load_campaign(file_, kernels::default_recipes_dir());
  // A queued step runs on whichever box claims it, alone: what needs one box across steps stays with a
  // box's own daemon (--config). A lab boot's step (kexec, grub) is one step: its box holds the claim
  // across the reboot.
  if (campaign.target)
    throw InputError(file_ +
                     ": [campaign] target_mde: a sequential comparison looks at all its pairs on one "
                     "box; run it with `schedlab daemon --config` there");
  std::ifstream in(file_, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<SubmittedStep> steps;
  for (const auto& s : expand_plan(campaign)) steps.push_back({s.key, s.index});
  WorkQueue queue(url_);
  const auto id = queue.submit(campaign.name, campaign.content_hash,
                               std::filesystem::path(file_).filename().string(), text.str(), hosts_, steps);
  fmt::print("submission {}: {} step(s) of campaign '{}' queued for hosts '{}' in {}\n", id, steps.size(),
             campaign.name, hosts_, pg::redacted(url_));
  if (campaign.store_url != url_)
    fmt::print("their bundles are indexed in the queue's database (the campaign's store is not used)\n");
  return 0;
}

int QueueCommand::show() const {
  WorkQueue queue(url_);
  const auto rows = queue.summary(seen_within_s_);
  if (json_) {
    for (const auto& r : rows)
      fmt::print("{}\n", nlohmann::json{{"submission", r.submission},
                                        {"campaign", r.campaign},
                                        {"hosts", r.hosts},
                                        {"submitted_at", r.submitted_at},
                                        {"total", r.total},
                                        {"queued", r.queued},
                                        {"claimed", r.claimed},
                                        {"finished", r.finished},
                                        {"failed", r.failed},
                                        {"claimed_by", r.claimed_by},
                                        {"able_hosts", r.able_hosts}}
                             .dump());
    return 0;
  }
  if (rows.empty()) {
    fmt::print("the queue in {} is empty\n", pg::redacted(url_));
    return 0;
  }
  fmt::print("{:>5} {:<20} {:<16} {:>6} {:>6} {:>7} {:>8} {:>6}  {}\n", "id", "campaign", "hosts", "steps",
             "queued", "claimed", "finished", "failed", "submitted");
  for (const auto& r : rows)
    fmt::print("{:>5} {:<20} {:<16} {:>6} {:>6} {:>7} {:>8} {:>6}  {}\n", r.submission, r.campaign, r.hosts,
               r.total, r.queued, r.claimed, r.finished, r.failed, r.submitted_at);
  for (const auto& r : rows) {
    if (r.queued + r.claimed == 0) continue;
    if (r.able_hosts.empty())
      fmt::print(
          "submission {}: {} step(s) wait for hosts '{}': no daemon of that class or name has asked for "
          "work in the last {:g} s\n",
          r.submission, r.queued + r.claimed, r.hosts, seen_within_s_);
    else if (!r.claimed_by.empty())
      fmt::print("submission {}: running on {}\n", r.submission, fmt::join(r.claimed_by, ", "));
  }
  return 0;
}

}  // namespace schedlab
