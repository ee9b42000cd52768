#include "cli/store_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/postgres_store.hpp"
#include "daemon/store/store.hpp"
#include "workloads/registry.hpp"

namespace schedlab {

std::string default_store_url() {
  if (::geteuid() == 0) return "sqlite:///var/lib/schedlab/store.db";
  const char* home = std::getenv("HOME");
  return std::string("sqlite://") + (home ? home : "/tmp") + "/.local/share/schedlab/store.db";
}

StoreCommand::StoreCommand(CLI::App& app) {
  history_ = app.add_subcommand("history", "A headline metric's time series from the store, oldest first");
  history_->add_option("--workload", workload_, "Workload name (see `schedlab workloads`)")->required();
  history_->add_option("--metric", metric_, "Metric name, e.g. ns_per_yield")->required();
  history_->add_option("--kernel", kernel_, "Only this configuration label or kernel release");
  history_->add_option("--instance", instance_,
                       "Only this instance: its id (a sweep's: yield.threads=2) or its params hash (or 6+ "
                       "of its first characters)");
  store_ = app.add_subcommand("store", "The store that indexes result bundles");
  store_->require_subcommand(1);
  rebuild_ = store_->add_subcommand("rebuild", "Drop the bundle index and re-index every bundle under DIR");
  rebuild_->add_option("DIR", dir_, "Directory of bundles (searched recursively)")->required();
  migrate_ = store_->add_subcommand("migrate", "Create or upgrade a PostgreSQL store's schema");
  import_ = store_->add_subcommand(
      "import",
      "Index every bundle under DIR into a PostgreSQL store (those already there stay as they are)");
  import_->add_option("DIR", dir_, "Directory of bundles (searched recursively)")->required();
  import_->add_option("--from", from_,
                      "The box's SQLite store (sqlite:///PATH): its campaign progress is copied too");
  import_->add_option("--host", host_, "The box the progress is of (default: this machine's hostname)");
  history_->add_option("--host", host_,
                       "Only bundles measured on these hosts: a glob ('*', '?') of the hostname, or with a "
                       "PostgreSQL store also of the host class's label or shape (as submit --hosts)");
  for (auto* c : {history_, rebuild_, migrate_, import_})
    c->add_option("--store", url_, "sqlite:///PATH or postgresql://...")->default_val(default_store_url());
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Unknown names are bad input (exit 2) with the known ones listed, as `run` says of its arguments;
// a known name with nothing in the store is not (exit 1, "no ok repetition").
void check_history_names(Store& store, const std::string& workload, const std::string& metric,
                         const std::string& kernel, const std::string& instance, const std::string& url) {
  const auto declared = make_workload(workload);  // throws "unknown workload 'X' (known: ...)"
  std::vector<std::string> metrics = store.metric_names(workload);
  for (const auto& m : declared->metrics()) metrics.push_back(m.name);
  std::sort(metrics.begin(), metrics.end());
  metrics.erase(std::unique(metrics.begin(), metrics.end()), metrics.end());
  if (std::find(metrics.begin(), metrics.end(), metric) == metrics.end())
    throw InputError("--metric " + metric + ": not a metric of " + workload + " (known: " + joined(metrics) +
                     ")");
  if (instance.empty() || !store.history(workload, metric, kernel, instance, "").empty()) return;
  std::set<std::string> known;
  for (const auto& p : store.history(workload, metric, kernel, "", ""))
    known.insert(p.instance_id + " (params " + p.params_hash + ")");
  throw InputError("--instance " + instance + ": no instance of " + workload + " with " + metric +
                   (kernel.empty() ? "" : " on " + kernel) + " in " + pg::redacted(url) +
                   " has that id or params hash (known: " +
                   (known.empty() ? "none" : joined({known.begin(), known.end()})) + ")");
}

}  // namespace

int StoreCommand::run() const {
  if (history_->parsed()) {
    // A reader: it never creates the store (nor its directory), and a missing one is bad input.
    auto store = open_store_to_read(url_);
    check_history_names(*store, workload_, metric_, kernel_, instance_, url_);
    return print_history(*store);
  }
  if (migrate_->parsed()) {
    if (!pg::is_postgres_url(url_))
      throw InputError("--store " + url_ +
                       ": migrate is for PostgreSQL stores (an SQLite store is made as it is opened)");
    const int version = migrate_store(url_);
    fmt::print("{}: schema version {}\n", pg::redacted(url_), version);
    return 0;
  }
  if (import_->parsed()) return run_import();
  auto store = open_store(url_);
  if (rebuild_->parsed()) {
    std::vector<std::string> skipped;
    const int indexed = store->rebuild(dir_, skipped);
    for (const auto& s : skipped) fmt::print(stderr, "schedlab: skipped {}\n", s);
    fmt::print("indexed {} bundle(s) from {} into {}\n", indexed, dir_, url_);
    return skipped.empty() ? 0 : 1;
  }
  return 0;
}

int StoreCommand::run_import() const {
  if (!pg::is_postgres_url(url_))
    throw InputError("--store " + url_ + ": import is into a PostgreSQL store (postgresql://...)");
  std::unique_ptr<Store> progress;
  if (!from_.empty()) {
    if (pg::is_postgres_url(from_))
      throw InputError("--from " + from_ + ": expected the box's sqlite:///PATH");
    progress = open_store_to_read(from_);
  }
  const auto counts = import_into_postgres(url_, host_, dir_, progress.get());
  for (const auto& s : counts.skipped) fmt::print(stderr, "schedlab: skipped {}\n", s);
  fmt::print("imported into {}: {} bundle(s) newly indexed", pg::redacted(url_), counts.bundles);
  if (progress)
    fmt::print(", {} campaign run(s), {} campaign(s) first seen, {} change point(s) of {}", counts.runs,
               counts.campaigns, counts.changes, store_host(host_));
  fmt::print("\n");
  return counts.skipped.empty() ? 0 : 1;
}

int StoreCommand::print_history(Store& store) const {
  auto points = store.history(workload_, metric_, kernel_, instance_, host_);
  if (points.empty()) {
    fmt::print(stderr, "schedlab: no ok repetition of {}.{}{}{} in {}\n", workload_, metric_,
               kernel_.empty() ? "" : " on " + kernel_, host_.empty() ? "" : " from host " + host_,
               pg::redacted(url_));
    return 1;
  }
  fmt::print("{:<25} {:<28} {:<24} {:<16} {:>14} {:<6} {:>4}  {}\n", "started", "configuration", "instance",
             "params", "median", "unit", "n", "bundle");
  for (const auto& p : points)
    fmt::print("{:<25} {:<28} {:<24} {:<16} {:>14.6g} {:<6} {:>4}  {}\n", p.started_at, p.configuration,
               p.instance_id, p.params_hash, p.median, p.unit, p.repetitions, p.bundle_path);
  return 0;
}

}  // namespace schedlab
