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
  std::string name;                   // for tables: the shared label, else the spec (name_sides: shorter)
  std::vector<LoadedBundle> bundles;  // trials, in the order they started
  std::vector<std::string> warnings;  // files a store lookup skipped (damaged bundles), each named
};

// Throws InputError naming the spec (or the bundle's file and JSON path) when nothing usable is found.
Side load_side(const std::string& spec, const std::filesystem::path& store_dir);

// A side of the bundles a store's index names for `spec` (daemon/store: Store::bundle_paths), loaded from
// their files; an indexed file this machine cannot read or load becomes a warning naming it. InputError
// when none loads.
Side load_side_from_files(const std::string& spec, const std::vector<std::filesystem::path>& files,
                          const std::string& where);

// Names the sides for tables and JSON, short and distinct, the same rule for all: their labels; else
// their kernel releases (less what they all share, "-amd64") and/or configurations (a runtime
// configuration's name, else the scheduler), "6.1.0-50" and "6.12.100+deb12"; else each one's shortest
// path component no other side has; else (one side given twice) the spec, then "#2", "#3".
void name_sides(std::vector<Side>& sides);

}  // namespace schedlab
