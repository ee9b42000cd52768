#include "workloads/kernbench/build_tree.hpp"

#include <algorithm>
#include <fstream>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/host_paths.hpp"
#include "workloads/kernbench/cache_dir.hpp"
#include "workloads/kernbench/process.hpp"
#include "workloads/kernbench/tree_generator.hpp"

namespace schedlab::kernbench {
namespace {

namespace fs = std::filesystem;

const char* const kConfiguredMarker = ".schedlab-configured";

struct Tool {
  const char* program;
  const char* package;  // Debian
};

void require(const std::vector<Tool>& tools, const std::string& why) {
  std::string missing;
  for (const auto& t : tools)
    if (!find_in_path(t.program))
      missing +=
          std::string(missing.empty() ? "" : ", ") + "'" + t.program + "' (Debian package " + t.package + ")";
  if (!missing.empty()) throw InputError("kernbench: " + why + " needs " + missing + ", not found in PATH");
}

const std::vector<Tool> kKernelTools = {{"gcc", "gcc"}, {"flex", "flex"}, {"bison", "bison"}, {"bc", "bc"}};

bool is_kernel_tree(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "Makefile", ec) && fs::is_regular_file(dir / "Kconfig", ec) &&
         fs::is_directory(dir / "arch", ec) && fs::is_directory(dir / "scripts/kconfig", ec);
}

bool has_makefile(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "GNUmakefile", ec) || fs::is_regular_file(dir / "makefile", ec) ||
         fs::is_regular_file(dir / "Makefile", ec);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The decompressor tar needs for a tarball's name; nullptr for an unknown suffix.
const Tool* tarball_tool(const std::string& name) {
  static const Tool kNone{"tar", "tar"}, kXz{"xz", "xz-utils"}, kGzip{"gzip", "gzip"},
      kBzip2{"bzip2", "bzip2"};
  if (ends_with(name, ".tar")) return &kNone;
  if (ends_with(name, ".tar.xz") || ends_with(name, ".txz")) return &kXz;
  if (ends_with(name, ".tar.gz") || ends_with(name, ".tgz")) return &kGzip;
  if (ends_with(name, ".tar.bz2") || ends_with(name, ".tbz2")) return &kBzip2;
  return nullptr;
}

std::string short_hash(const std::string& text) {
  return hex64(fnv1a64(text)).substr(0, 12);
}

[[noreturn]] void throw_tool_failure(const std::string& what, const ProcessResult& r) {
  throw Error(what + " failed (" + r.status_text() + "):\n" + error_excerpt(r.err));
}

// Configures a kernel tree once into its object directory: `make O=OBJ defconfig`.
BuildTree kernel_tree(const fs::path& src, const std::string& hash, const fs::path& cache_root) {
  BuildTree b;
  b.kind = "kernel";
  b.make_dir = src;
  b.tree_hash = hash;
  const fs::path obj = cache_root / ("kobj-" + hash.substr(0, 12));
  b.make_vars = {"O=" + obj.string()};
  b.prepared = "cached";
  if (!fs::exists(obj / kConfiguredMarker)) {
    fs::create_directories(obj);
    auto r = run_process({make_command(b, {"defconfig"}), false, std::nullopt, 0});
    if (!r.ok()) throw_tool_failure("make O=" + obj.string() + " defconfig in " + src.string(), r);
    std::ofstream(obj / kConfiguredMarker) << "defconfig\n";
    b.prepared = "configured";
  }
  return b;
}

// Path, size and modification time of every entry: changes when the user edits the tree.
std::string listing_hash(const fs::path& dir) {
  std::vector<std::string> rows;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::error_code ec;
    const auto rel = fs::relative(e.path(), dir).generic_string();
    const auto status = e.symlink_status(ec);
    std::string row = rel + "\t" + std::to_string(static_cast<int>(status.type()));
    if (fs::is_regular_file(status)) {
      row += "\t" + std::to_string(e.file_size(ec)) + "\t" +
             std::to_string(e.last_write_time(ec).time_since_epoch().count());
    }
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end());
  std::string all = dir.string() + "\n";
  for (const auto& r : rows) all += r + "\n";
  return hex64(fnv1a64(all));
}

// A plain directory is built in a copy: make clean and the objects must not touch the user's files.
BuildTree copied_tree(const fs::path& src, const fs::path& cache_root) {
  BuildTree b;
  b.kind = "directory";
  b.origin = "directory";
  b.source = src;
  b.tree_hash = listing_hash(src);
  const std::string prefix = "copy-" + short_hash(src.string()) + "-";
  b.make_dir = cache_root / (prefix + b.tree_hash.substr(0, 12));
  if (!fs::exists(b.make_dir)) {  // older copies of the same directory are out of date
    for (const auto& e : fs::directory_iterator(cache_root))
      if (e.path().filename().string().rfind(prefix, 0) == 0) fs::remove_all(e.path());
  }
  const bool copied = publish_directory(b.make_dir, [&](const fs::path& tmp) {
    fs::copy(src, tmp, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  });
  b.prepared = copied ? "copied" : "cached";
  return b;
}

fs::path single_subdirectory_or_self(const fs::path& dir) {
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path());
  return entries.size() == 1 && fs::is_directory(entries[0]) ? entries[0] : dir;
}

BuildTree tarball_tree(const fs::path& tarball, const fs::path& cache_root) {
  const std::string hash =
      hex64(fnv1a64(tarball.filename().string() + ":" + std::to_string(fs::file_size(tarball))));
  const fs::path dir = cache_root / ("src-" + hash.substr(0, 12));
  const bool extracted = publish_directory(dir, [&](const fs::path& tmp) {
    auto r = run_process(
        {{"tar", "--no-same-owner", "-xf", tarball.string(), "-C", tmp.string()}, false, std::nullopt, 0});
    if (!r.ok()) throw_tool_failure("extracting " + tarball.string(), r);
  });
  const fs::path root = single_subdirectory_or_self(dir);
  BuildTree b;
  if (is_kernel_tree(root)) {
    b = kernel_tree(root, hash, cache_root);
  } else {
    if (!has_makefile(root))
      throw Error("tarball " + tarball.string() + " has no Makefile at " + root.string());
    b.kind = "directory";
    b.make_dir = root;
    b.tree_hash = hash;
    b.prepared = "cached";
  }
  b.origin = "tarball";
  b.source = tarball;
  if (extracted) b.prepared = "extracted";
  return b;
}

}  // namespace

void check_tree(const std::string& tree) {
  require({{"make", "make"}}, "building a tree");
  if (tree == "generated") {
    require({{"gcc", "gcc"}}, "the generated tree");
    return;
  }
  std::error_code ec;
  const fs::path p = fs::absolute(tree, ec);
  const auto status = fs::status(p, ec);
  if (!fs::exists(status))
    throw InputError(
        "kernbench.tree: '" + tree +
        "' does not exist (give 'generated', a directory with a Makefile, or a linux-source-*.tar.xz)");
  if (fs::is_directory(status)) {
    if (is_kernel_tree(p))
      require(kKernelTools, "a kernel tree");
    else if (!has_makefile(p))
      throw InputError("kernbench.tree: directory '" + tree + "' has no Makefile");
    return;
  }
  if (!fs::is_regular_file(status))
    throw InputError("kernbench.tree: '" + tree + "' is not a directory or a file");
  const std::string name = p.filename().string();
  const Tool* tool = tarball_tool(name);
  if (!tool)
    throw InputError("kernbench.tree: '" + tree +
                     "' is neither a directory nor a tarball (.tar, .tar.xz, .txz, .tar.gz, .tgz, .tar.bz2)");
  require({{"tar", "tar"}, *tool}, "extracting " + name);
  if (name.rfind("linux", 0) == 0) require(kKernelTools, "a kernel tree");
}

BuildTree prepare_tree(const std::string& tree, int files, const fs::path& cache_root) {
  if (tree == "generated") {
    auto g = ensure_generated_tree(cache_root, files);
    BuildTree b;
    b.kind = b.origin = "generated";
    b.source = b.make_dir = g.dir;
    b.tree_hash = g.content_hash;
    b.prepared = g.created ? "generated" : "cached";
    return b;
  }
  std::error_code ec;
  const fs::path src = fs::canonical(tree, ec);
  if (ec) throw Error("kernbench.tree: '" + tree + "': " + ec.message());
  if (!fs::is_directory(src)) return tarball_tree(src, cache_root);
  if (!is_kernel_tree(src)) return copied_tree(src, cache_root);
  // A kernel directory is identified by its path and top Makefile (VERSION, PATCHLEVEL, ...).
  BuildTree b = kernel_tree(
      src, hex64(fnv1a64(src.string() + "\n" + read_text(src / "Makefile").value_or(""))), cache_root);
  b.origin = "directory";
  b.source = src;
  return b;
}

std::vector<std::string> make_command(const BuildTree& tree, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {"make", "-C", tree.make_dir.string()};
  argv.insert(argv.end(), tree.make_vars.begin(), tree.make_vars.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

}  // namespace schedlab::kernbench
