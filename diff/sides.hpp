#pragma once
// A side of a diff: the bundles one configuration produced, named on the command line as a bundle
// file, a directory of bundles, or a query (configuration hash prefix or label) over a store directory.
#include <filesystem>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace schedlab {

struct LoadedBundle {
  std::filesystem::path path;
  Bundle bundle;
};

struct Side {
  std::string spec;                   // as given
  std::string name;                   // for tables: the label the bundles share, else the spec
  std::vector<LoadedBundle> bundles;  // trials, in the order they started
  std::vector<std::string> warnings;  // files a store lookup skipped (damaged bundles), each named
};

// Throws InputError naming the spec (or the bundle's file and JSON path) when nothing usable is found.
Side load_side(const std::string& spec, const std::filesystem::path& store_dir);

// Tables and JSON tell sides apart by name: sides sharing a label fall back to their specs, and a spec
// given twice gets "#2", "#3".
void make_names_distinct(std::vector<Side>& sides);

}  // namespace schedlab
