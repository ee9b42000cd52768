#include "changes/update.hpp"

#include <sys/utsname.h>

#include <algorithm>
#include <fstream>

#include "core/clock.hpp"

namespace schedlab {

namespace fs = std::filesystem;

ChangeRecord to_record(const SeriesChange& change, const std::string& status, const std::string& reason) {
  ChangeRecord r;
  r.series = change.key.text();
  r.at = change.after.started_at;
  r.workload = change.key.workload;
  r.metric = change.key.metric;
  r.host = change.key.host;
  r.instance_id = change.key.instance_id;
  r.params_hash = change.key.params_hash;
  r.configuration = change.after.configuration;
  r.direction = change.direction;
  r.status = status;
  r.reason = reason;
  r.relative = change.change.relative;
  r.lower = change.change.relative_lower;
  r.upper = change.change.relative_upper;
  r.p_value = change.change.p_value;
  return r;
}

const ChangeRecord* stored_record(const SeriesChange& change, const std::vector<ChangeRecord>& stored) {
  const std::string series = change.key.text();
  const ChangeRecord* found = nullptr;
  for (const auto& r : stored)
    if (r.series == series && r.direction == change.direction &&
        std::find(change.nearby.begin(), change.nearby.end(), r.at) != change.nearby.end())
      if (!found || r.at == change.after.started_at) found = &r;
  return found;
}

std::string rerun_name(const SeriesChange& change) {
  std::string name = change.key.workload + "-" + change.key.instance_id + "-" +
                     change.key.params_hash.substr(0, 8) + "-" + change.key.metric + "-" +
                     change.after.started_at;
  for (auto& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  return name;
}

std::string running_kernel_release() {
  utsname u{};
  return uname(&u) == 0 ? std::string(u.release) : std::string();
}

std::string running_hostname() {
  std::ifstream in("/proc/sys/kernel/hostname");
  std::string name;
  std::getline(in, name);
  return name;
}

std::vector<ChangeRecord> update_changes(Store& store, const ChangeSearch& found, const ChangeUpdate& how) {
  const auto stored = store.change_records();
  std::vector<ChangeRecord> out;
  for (const auto& change : found.changes) {
    const ChangeRecord* known = stored_record(change, stored);
    // A rerun's verdict holds for the change found a run or two off as data arrive; an unconfirmable
    // one is planned again once the split moved (the runs either side, and so what can be rerun, moved).
    const bool decided = known && (known->status == kConfirmed || known->status == kNotReproduced ||
                                   (known->status == kUnconfirmable && known->at == change.after.started_at));
    if (decided) {
      out.push_back(*known);
      continue;
    }
    ChangeRecord record = to_record(change, kSuspected, "not confirmed by a rerun");
    if (known && known->status == kSuspected) {
      record.at = known->at;  // the change as first recorded: its key stays
      record.reason = known->reason;
    }
    const bool stopping = how.stop_requested && how.stop_requested();
    if (how.confirm && !stopping) {
      const RerunPlan plan = plan_rerun(change, how.running_release, how.running_host, how.rerun);
      if (!plan.unconfirmable.empty()) {
        record.status = kUnconfirmable;
        record.reason = plan.unconfirmable;
      } else {
        const fs::path dir = how.rerun_root / rerun_name(change);
        // A rerun an earlier (killed) attempt began is set aside, not read as this one's.
        if (fs::exists(dir)) fs::rename(dir, dir.string() + ".discarded-" + utc_timestamp());
        fs::create_directories(dir);
        if (how.say)
          how.say("rerun of " + change.key.workload + "." + change.key.metric + " " + change.key.instance_id +
                  " at " + change.after.started_at + " (" + record.direction + "): " + dir.string());
        std::vector<std::string> args;
        if (plan.before_recipe.empty()) {
          args = rerun_arguments(plan, change, how.rerun, dir / "out");
        } else {
          // Two kernels: a nested daemon boots them pair by pair. Its steps stay in its own session, so
          // that they stay inside whatever this process runs in (a step cgroup that kills them with it).
          const fs::path campaign = dir / "rerun.toml";
          std::ofstream(campaign) << kernel_rerun_campaign(plan, change, how.rerun, dir);
          args = {"daemon", "--config", campaign.string(), "--isolation", "session"};
        }
        const int code = how.run(args, dir / "rerun.log");
        const auto outcome = read_rerun(dir / "out", change);
        if (outcome) {
          record.status = outcome->status;
          record.reason = outcome->reason;
          record.rerun = outcome->record.string();
        } else if (!(how.stop_requested && how.stop_requested())) {
          record.status = kUnconfirmable;
          record.reason = "the rerun ended (exit " + std::to_string(code) +
                          ") without a verdict: " + (dir / "rerun.log").string();
        }
      }
    }
    record.updated_at = utc_timestamp();
    store.record_change(record);
    if (!known || record.status != known->status || record.at != known->at) {
      if (how.say)
        how.say(change.key.workload + "." + change.key.metric + " " + change.key.instance_id + " at " +
                record.at + ": " + record.status + " (" + record.reason + ")");
      if (how.decided) how.decided(record);
    }
    out.push_back(record);
  }
  return out;
}

}  // namespace schedlab
