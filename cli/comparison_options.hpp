#pragma once
// The options `schedlab diff` and `schedlab report` share: which sides, where labels are looked up,
// and how verdicts are reached. One definition, so the two commands cannot drift apart.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "diff/diff.hpp"

namespace schedlab {

struct ComparisonOptions {
  std::vector<std::string> sides;
  double alpha = 0.05;
  double min_effect_pct = 2.0;
  bool force = false;
  std::string store = "results";
  std::string host;  // with a store's index: only this host's bundles

  // Registers --alpha, --min-effect, --force and --store on the command (SIDES stays per command).
  void add_to(CLI::App& command);
  // Every side loaded and named (name_sides); throws InputError naming the side that fails.
  std::vector<Side> load_sides() const;
  DiffOptions diff_options() const;
};

}  // namespace schedlab
