#pragma once
// The bundled C source tree: F translation units sharing a few headers, a main.c that calls
// them all, and a Makefile with one object per unit. Deterministic: the content depends only on
// F, the fixed seed and the generator version, and a unit's text does not depend on F.
#include <filesystem>
#include <map>
#include <string>

namespace schedlab::kernbench {

inline constexpr int kDefaultFiles = 200;  // about 28 s of make -j4 on the 2-vCPU reference VM
inline constexpr unsigned long long kTreeSeed = 42;
inline constexpr const char* kGeneratorVersion = "1";
inline constexpr const char* kManifestName = ".schedlab-tree.json";

// Relative path -> content, sorted by path.
using TreeFiles = std::map<std::string, std::string>;

TreeFiles generate_tree_files(int files);

// FNV-1a over "path\0content\0" of every file in path order.
std::string tree_content_hash(const TreeFiles& files);
// The same over the regular files found under `dir` (manifest and build outputs excluded: *.o, prog).
std::string tree_content_hash(const std::filesystem::path& dir);

// Writes the tree and its manifest into `dir` (created if needed); returns the content hash.
std::string write_generated_tree(const std::filesystem::path& dir, int files);

struct GeneratedTree {
  std::filesystem::path dir;
  std::string content_hash;
  bool created = false;  // generated now rather than found in the cache
};

// CACHE_ROOT/generated-F-VERSIONHASH, generated on first use (written aside, then renamed).
GeneratedTree ensure_generated_tree(const std::filesystem::path& cache_root, int files);

}  // namespace schedlab::kernbench
