#include "cli/comparison_options.hpp"

#include <iostream>
#include <memory>
#include <set>

#include "core/error.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/store.hpp"

namespace schedlab {

void ComparisonOptions::add_to(CLI::App& command) {
  command.add_option("--alpha", alpha, "Significance level after Benjamini-Hochberg")->default_val(0.05);
  command
      .add_option("--min-effect", min_effect_pct,
                  "Margin, percent: better/worse need the interval beyond it, equivalent (TOST) the 1-2alpha "
                  "interval inside it")
      ->default_val(2.0);
  command.add_flag("--force", force,
                   "Compare across hardware fingerprints, workload versions or measuring methods");
  command
      .add_option("--store", store,
                  "Directory of bundles that labels and hashes are looked up in, or a store's index "
                  "(postgresql://..., sqlite:///PATH)")
      ->default_val("results");
  command.add_option(
      "--host", host,
      "With a store's index: only bundles measured on these hosts: a glob of the hostname, or with a "
      "PostgreSQL store also of the host class's label or shape (as submit --hosts)");
}

std::vector<Side> ComparisonOptions::load_sides() const {
  std::vector<Side> loaded;
  std::set<std::string> warned;  // two sides looked up in one store skip the same files
  const bool indexed = store.find("://") != std::string::npos;
  std::unique_ptr<Store> index = indexed ? open_store_to_read(store) : nullptr;
  if (!host.empty() && !indexed)
    throw InputError("--host: only with --store postgresql://... or sqlite:///PATH");
  for (const auto& spec : sides) {
    std::error_code ec;
    if (index && !std::filesystem::exists(spec, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& p : index->bundle_paths(spec, host)) files.emplace_back(p);
      loaded.push_back(load_side_from_files(
          spec, files, pg::redacted(store) + (host.empty() ? "" : " from host " + host)));
    } else {
      loaded.push_back(load_side(spec, store));
    }
    for (const auto& w : loaded.back().warnings)
      if (warned.insert(w).second) std::cerr << "schedlab: warning: " << w << "\n";
  }
  name_sides(loaded);
  return loaded;
}

DiffOptions ComparisonOptions::diff_options() const {
  DiffOptions options;
  options.alpha = alpha;
  options.min_effect_pct = min_effect_pct;
  options.force = force;
  return options;
}

}  // namespace schedlab
