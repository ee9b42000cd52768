#include "cli/store_command.hpp"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "core/error.hpp"
#include "daemon/store/store.hpp"

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
  store_ = app.add_subcommand("store", "The store that indexes result bundles");
  store_->require_subcommand(1);
  rebuild_ = store_->add_subcommand("rebuild", "Drop the bundle index and re-index every bundle under DIR");
  rebuild_->add_option("DIR", dir_, "Directory of bundles (searched recursively)")->required();
  for (auto* c : {history_, rebuild_})
    c->add_option("--store", url_, "sqlite:///PATH")->default_val(default_store_url());
}

int StoreCommand::run() const {
  auto store = open_store(url_);
  if (rebuild_->parsed()) {
    std::vector<std::string> skipped;
    const int indexed = store->rebuild(dir_, skipped);
    for (const auto& s : skipped) fmt::print(stderr, "schedlab: skipped {}\n", s);
    fmt::print("indexed {} bundle(s) from {} into {}\n", indexed, dir_, url_);
    return skipped.empty() ? 0 : 1;
  }
  const auto points = store->history(workload_, metric_, kernel_);
  if (points.empty()) {
    fmt::print(stderr, "schedlab: no ok repetition of {}.{}{} in {}\n", workload_, metric_,
               kernel_.empty() ? "" : " on " + kernel_, url_);
    return 1;
  }
  fmt::print("{:<25} {:<28} {:<24} {:>14} {:<6} {:>4}  {}\n", "started", "configuration", "instance",
             "median", "unit", "n", "bundle");
  for (const auto& p : points)
    fmt::print("{:<25} {:<28} {:<24} {:>14.6g} {:<6} {:>4}  {}\n", p.started_at, p.configuration,
               p.instance_id, p.median, p.unit, p.repetitions, p.bundle_path);
  return 0;
}

}  // namespace schedlab
