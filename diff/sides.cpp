#include "diff/sides.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <tuple>

#include "core/bundle_io.hpp"
#include "core/error.hpp"

namespace schedlab {
namespace fs = std::filesystem;
namespace {

std::vector<fs::path> bundle_files_under(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A directory may hold other JSON (exports, diffs): only files that declare our schema are bundles.
// Of a directory given as a side every one must load, so a damaged trial is reported rather than
// skipped; a store lookup skips it with a warning (load_store).
bool declares_bundle_schema(const fs::path& file) {
  try {
    auto j = nlohmann::json::parse(std::ifstream(file), nullptr, /*allow_exceptions=*/true);
    return j.is_object() && j.contains("schema") && j["schema"].is_string() &&
           j["schema"].get<std::string>().rfind("schedlab.result/", 0) == 0;
  } catch (const nlohmann::json::exception&) {
    return true;  // unreadable: let load_bundle name the problem
  }
}

std::vector<LoadedBundle> load_directory(const fs::path& dir) {
  std::vector<LoadedBundle> out;
  for (const auto& file : bundle_files_under(dir)) {
    if (!declares_bundle_schema(file)) continue;
    out.push_back({file, load_bundle(file)});
  }
  return out;
}

// A store is everything ever written under a directory: one damaged file in it must not make a
// lookup of unrelated bundles fail, so it is skipped with a warning naming it.
std::vector<LoadedBundle> load_store(const fs::path& dir, std::vector<std::string>& warnings) {
  std::vector<LoadedBundle> out;
  for (const auto& file : bundle_files_under(dir)) {
    if (!declares_bundle_schema(file)) continue;
    try {
      out.push_back({file, load_bundle(file)});
    } catch (const InputError& e) {
      warnings.push_back(std::string(e.what()) + " (skipped while looking bundles up in " + dir.string() +
                         ")");
    }
  }
  return out;
}

bool matches_query(const Bundle& b, const std::string& query) {
  if (b.label == query) return true;
  auto hash = b.configuration.value("hash", std::string());
  return query.size() >= 6 && hash.rfind(query, 0) == 0;
}

std::string shared_label(const std::vector<LoadedBundle>& bundles) {
  std::set<std::string> labels;
  for (const auto& b : bundles) labels.insert(b.bundle.label);
  if (labels.size() == 1 && !labels.begin()->empty()) return *labels.begin();
  return "";
}

}  // namespace

namespace {
// Trials in the order they started; the side named by its shared label, else its spec.
void ordered_and_named(Side& side) {
  std::stable_sort(side.bundles.begin(), side.bundles.end(), [](const auto& a, const auto& b) {
    return std::tie(a.bundle.started_at, a.bundle.trial) < std::tie(b.bundle.started_at, b.bundle.trial);
  });
  auto label = shared_label(side.bundles);
  side.name = label.empty() ? side.spec : label;
}
}  // namespace

Side load_side(const std::string& spec, const fs::path& store_dir) {
  Side side;
  side.spec = spec;
  fs::path path(spec);
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    side.bundles.push_back({path, load_bundle(path)});
  } else if (fs::is_directory(path, ec)) {
    side.bundles = load_directory(path);
    if (side.bundles.empty()) throw InputError(spec + ": directory holds no schedlab result bundle");
  } else {
    if (!fs::is_directory(store_dir, ec)) {
      throw InputError(spec + ": no such file or directory, and no store directory " + store_dir.string() +
                       " to look it up in as a configuration hash or label");
    }
    for (auto& loaded : load_store(store_dir, side.warnings)) {
      if (matches_query(loaded.bundle, spec)) side.bundles.push_back(std::move(loaded));
    }
    if (side.bundles.empty()) {
      throw InputError(spec + ": not a file or directory, and no bundle in " + store_dir.string() +
                       " has that label or a configuration hash starting with it");
    }
  }
  ordered_and_named(side);
  return side;
}

Side load_side_from_files(const std::string& spec, const std::vector<fs::path>& files,
                          const std::string& where) {
  Side side;
  side.spec = spec;
  for (const auto& f : files) {
    try {
      side.bundles.push_back({f, load_bundle(f)});
    } catch (const InputError& e) {  // indexed, but not readable here (another box's disk, or gone)
      side.warnings.push_back(std::string("skipped an indexed bundle: ") + e.what());
    }
  }
  if (side.bundles.empty())
    throw InputError(
        spec + ": " +
        (files.empty() ? "no bundle in " + where + " has that label or a configuration hash starting with it"
                       : std::to_string(files.size()) + " bundle(s) in " + where +
                             " have that label, and none loads on this machine"));
  ordered_and_named(side);
  return side;
}

}  // namespace schedlab
