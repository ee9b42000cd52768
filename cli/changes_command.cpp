#include "cli/changes_command.hpp"

#include <cmath>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "changes/series_changes.hpp"
#include "changes/update.hpp"
#include "cli/store_command.hpp"
#include "core/error.hpp"
#include "daemon/step_process.hpp"
#include "daemon/store/store.hpp"
#include "experiment/experiment.hpp"

namespace schedlab {

namespace fs = std::filesystem;

ChangesCommand::ChangesCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "changes",
      "Change points of every headline series in the store (E-Divisive on ranks, permutation test)");
  command_->add_option("--store", url_, "sqlite:///PATH or postgresql://...")
      ->default_val(default_store_url());
  command_->add_option("--since", since_,
                       "Only changes at or after DATE (YYYY-MM-DD or an ISO 8601 UTC time)");
  command_->add_option("--workload", workload_, "Only this workload");
  command_->add_option("--metric", metric_, "Only this metric (default: every headline metric)");
  command_->add_flag("--json", json_, "JSON (schema schedlab.changes/1)");
  command_->add_option("--seed", seed_, "Seed of the permutation tests")->default_val(1);
  command_->add_option("--alpha", alpha_, "Significance level of each split")->default_val(0.05);
  command_
      ->add_option("--min-effect", min_effect_pct_, "Percent: smaller changes of the median are not reported")
      ->default_val(2);
  command_->add_flag("--confirm", confirm_,
                     "Rerun each suspected change as a paired experiment of the configurations either side, "
                     "and record confirmed, not reproduced or unconfirmable in the store");
  command_->add_option("--confirm-budget", confirm_budget_, "Machine time of each rerun: 90s, 3m, 1h")
      ->default_val("3m");
  command_->add_option("--rerun-dir", rerun_dir_, "Where reruns write (default: reruns/ beside the store)");
  command_->add_option("--kernel-cache", kernel_cache_,
                       "Where a kernel change's rerun finds its recipes' kernels (as `kernel --cache-dir`)");
}

namespace {

void check_since(const std::string& since) {
  static const std::regex form(R"(\d{4}-(\d{2})-(\d{2})(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?)?)");
  std::smatch m;
  if (!std::regex_match(since, m, form) || std::stoi(m[1]) < 1 || std::stoi(m[1]) > 12 ||
      std::stoi(m[2]) < 1 || std::stoi(m[2]) > 31)
    throw InputError("--since " + since + ": not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)");
}

std::string shortened(const std::string& s, std::size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

fs::path store_file(const std::string& url) {
  const std::string sqlite = "sqlite://";
  return url.rfind(sqlite, 0) == 0 ? fs::path(url.substr(sqlite.size())) : fs::path(url);
}

}  // namespace

int ChangesCommand::run() const {
  if (!since_.empty()) check_since(since_);
  if (!(alpha_ > 0 && alpha_ < 1))
    throw InputError("--alpha " + fmt::format("{}", alpha_) + ": must be in (0, 1)");
  if (!(min_effect_pct_ >= 0))
    throw InputError("--min-effect " + fmt::format("{}", min_effect_pct_) + ": must be >= 0");
  const double budget_s = parse_duration(confirm_budget_, "--confirm-budget");
  // Without --confirm it only reads: a missing store is "no store at PATH" and nothing is created.
  // It must exist in either case: --confirm writes statuses into a store, never makes an empty one.
  auto store = open_store_to_read(url_);
  if (confirm_) store = open_store(url_);

  stats::ChangePointOptions options;
  options.alpha = alpha_;
  options.seed = seed_;
  options.min_effect = min_effect_pct_ / 100;
  ChangeQuery query;
  query.workload = workload_;
  query.metric = metric_;
  query.since = since_;
  const ChangeSearch found = find_changes(*store, query, options);

  std::vector<ChangeRecord> records;
  if (confirm_) {
    ChangeUpdate how;
    how.confirm = true;
    how.rerun.budget_s = budget_s;
    how.rerun.seed = seed_;
    how.rerun.kernel_cache = kernel_cache_.empty() ? fs::path() : fs::absolute(kernel_cache_);
    how.rerun_root = rerun_dir_.empty() ? store_file(url_).parent_path() / "reruns" : fs::path(rerun_dir_);
    fs::create_directories(how.rerun_root);
    how.running_release = running_kernel_release();
    how.running_host = running_hostname();
    StepProcess process(how.rerun_root / ".rerun.step");
    process.kill_leftovers();
    how.run = [&](const std::vector<std::string>& args, const fs::path& log) {
      std::vector<std::string> argv{fs::read_symlink("/proc/self/exe").string()};
      argv.insert(argv.end(), args.begin(), args.end());
      const StepExit e = process.run(
          argv, log, [] { return false; }, 3);
      return e.exit_code;
    };
    how.say = [](const std::string& line) { fmt::print(stderr, "schedlab: {}\n", line); };
    records = update_changes(*store, found, how);
  } else {
    const auto stored = store->change_records();
    for (const auto& c : found.changes) {
      const ChangeRecord* known = stored_record(c, stored);
      records.push_back(known ? *known : to_record(c, kSuspected, "not confirmed by a rerun"));
    }
  }

  if (json_) {
    nlohmann::json out{{"schema", "schedlab.changes/1"},
                       {"store", url_},
                       {"series", found.series},
                       {"alpha", alpha_},
                       {"min_effect_pct", min_effect_pct_},
                       {"seed", seed_},
                       {"permutations", stats::permutation_count(options)},
                       {"changes", nlohmann::json::array()}};
    for (std::size_t i = 0; i < found.changes.size(); ++i) {
      const auto& f = found.changes[i];
      const auto& r = records[i];
      out["changes"].push_back(
          {{"status", r.status},
           {"status_reason", r.reason},
           {"rerun", r.rerun.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.rerun)},
           {"direction", f.direction},
           {"started_at", f.after.started_at},
           {"before_started_at", f.before.started_at},
           {"workload", f.key.workload},
           {"metric", f.key.metric},
           {"unit", f.unit},
           {"host", f.key.host},
           {"instance", f.key.instance_id},
           {"params_hash", f.key.params_hash},
           {"configuration", f.after.configuration},
           {"index", f.change.index},
           {"runs_before", f.change.index - f.change.before_begin},
           {"runs_after", f.change.after_end - f.change.index},
           {"before_median", f.change.before_median},
           {"after_median", f.change.after_median},
           {"change_pct", f.change.relative * 100},
           {"shift", f.change.shift.estimate},
           {"shift_lower", f.change.shift.lower},
           {"shift_upper", f.change.shift.upper},
           {"shift_lower_pct", f.change.relative_lower * 100},
           {"shift_upper_pct", f.change.relative_upper * 100},
           {"confidence", f.change.shift.confidence},
           {"p_value", f.change.p_value},
           {"bundle", f.after.bundle_path},
           {"differences", f.differences}});
    }
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  std::map<std::string, int> by_status;
  for (const auto& r : records) ++by_status[r.status];
  std::string counts;
  for (const auto& [status, n] : by_status)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, status);
  // The store's path is left out: a long one would break the 100 columns (--json has it).
  fmt::print("{} change point(s){} in {} series (alpha {}, min effect {}%, seed {}, {} permutations)\n",
             found.changes.size(), counts.empty() ? "" : " (" + counts + ")", found.series, alpha_,
             min_effect_pct_, seed_, stats::permutation_count(options));
  // On a drifting machine a level shift of the machine reads as a change too (stats/README.md: 9 of 26
  // A/A series here); until a paired rerun confirms one, a reader must be told.
  if (by_status.count(kSuspected))
    fmt::print(
        "suspected: not confirmed by a rerun (a level shift of the machine reads as a change too: "
        "--confirm)\n");
  for (std::size_t i = 0; i < found.changes.size(); ++i) {
    const auto& f = found.changes[i];
    const auto& r = records[i];
    fmt::print("\n{}  {}.{}  {}  (params {}, host {})\n", f.after.started_at, f.key.workload, f.key.metric,
               f.key.instance_id, f.key.params_hash.substr(0, 8), f.key.host);
    fmt::print("  {:.6g} -> {:.6g} {}  {:+.1f}% {}  shift {:+.1f}% [{:+.1f}%, {:+.1f}%]  p {:.3g}\n",
               f.change.before_median, f.change.after_median, f.unit, f.change.relative * 100, f.direction,
               f.change.shift.estimate / std::abs(f.change.before_median) * 100,
               f.change.relative_lower * 100, f.change.relative_upper * 100, f.change.p_value);
    fmt::print("  {}: {}\n", r.status, shortened(r.reason, 92 - r.status.size()));
    fmt::print("  runs {} before, {} after; previous run {}\n", f.change.index - f.change.before_begin,
               f.change.after_end - f.change.index, f.before.started_at);
    if (f.differences.empty()) fmt::print("  no recorded identity differs between the two runs\n");
    for (const auto& d : f.differences) fmt::print("  {}\n", shortened(d, 96));
  }
  return 0;
}

}  // namespace schedlab
