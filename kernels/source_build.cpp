#include "kernels/source_build.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "core/hash.hpp"
#include "core/host_paths.hpp"
#include "kernels/config_check.hpp"
#include "kernels/process.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kReadyFile = "built.json";
constexpr const char* kPreparedFile = "prepared";  // the recipe hash, once the tree is patched and configured

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto nl = text.find('\n', at);
    out.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

std::string text_of(const fs::path& p) {
  auto t = read_text(p);
  if (!t) throw InputError(p.string() + ": cannot read it");
  return *t;
}

void require_source_recipe(const Recipe& r) {
  if (r.kind != SourceKind::kSource)
    throw InputError(r.name + " is a package recipe: `schedlab kernel fetch " + r.name + "` gets its kernel");
}

// The packaged config the build starts from (the base recipe's kernel, fetched if needed).
KernelArtifacts base_kernel(const Recipe& r, const fs::path& recipes_dir, const fs::path& cache,
                            std::ostream& log) {
  const Recipe base = load_recipe(recipes_dir, r.source.base_config);
  return fetch_kernel(base, cache, log);
}

std::string recipe_hash(const Recipe& r, const std::string& base_config) {
  std::string material = r.source.package + "=" + r.source.version + "\n" + base_config;
  if (!r.source.config_fragment.empty()) material += text_of(r.source.config_fragment);
  for (const auto& p : r.source.patches) material += p.filename().string() + "\n" + text_of(p);
  if (!r.source.loadable_modules) material += "\nmodules = false";
  return canonical_hash(material);
}

// "CONFIG_X=y" lines of a fragment as requirements olddefconfig must keep.
std::vector<ConfigRequirement> fragment_requirements(const fs::path& fragment) {
  std::vector<ConfigRequirement> out;
  if (fragment.empty()) return out;
  for (const auto& line : split_lines(text_of(fragment))) {
    auto eq = line.find('=');
    if (line.rfind("CONFIG_", 0) != 0 || eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
    if (value.empty()) continue;  // an emptied string option reads back as absent
    out.push_back({line.substr(7, eq - 7), {value}});
  }
  return out;
}

ProcessOptions in_directory(const fs::path& dir) {
  ProcessOptions o;
  o.cwd = dir;
  return o;
}

fs::path only_subdirectory(const fs::path& parent) {
  for (const auto& e : fs::directory_iterator(parent))
    if (e.is_directory()) return e.path();
  throw Error(parent.string() + ": no source tree in it");
}

void apply_patches(const Recipe& r, const fs::path& tree, std::ostream& log) {
  for (const auto& patch : r.source.patches) {
    auto res =
        run_process({"patch", "-p1", "--forward", "--batch", "-i", patch.string()}, in_directory(tree));
    if (res.exit_code != 0)
      throw Error(r.file.string() + ": [source] patches: " + patch.filename().string() +
                  " does not apply to " + r.source.package + " " + r.source.version + ":\n" +
                  last_lines(res.output, 12));
    log << r.name << ": applied " << patch.filename().string() << "\n";
  }
}

// The compiled tree of a finished build with this recipe's source, config and fragment but no
// patches (any recipe name), if one is in the cache.
std::optional<fs::path> pristine_twin(const Recipe& r, const KernelArtifacts& base, const fs::path& cache) {
  Recipe pristine = r;
  pristine.source.patches.clear();
  const std::string suffix = "-" + recipe_hash(pristine, text_of(base.config));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache / "builds", ec)) {
    const auto name = e.path().filename().string();
    if (!name.ends_with(suffix) || !fs::exists(e.path() / kReadyFile) || !fs::is_directory(e.path() / "tree"))
      continue;
    return only_subdirectory(e.path() / "tree");
  }
  return std::nullopt;
}
}  // namespace

std::optional<KernelArtifacts> cached_build(const Recipe& r, const fs::path& recipes_dir,
                                            const fs::path& cache) {
  require_source_recipe(r);
  const Recipe base = load_recipe(recipes_dir, r.source.base_config);
  auto base_k = cached_kernel(base, cache);
  if (!base_k) return std::nullopt;
  const fs::path dir = cache / "builds" / (r.name + "-" + recipe_hash(r, text_of(base_k->config)));
  auto ready = read_text(dir / kReadyFile);
  if (!ready) return std::nullopt;
  auto j = nlohmann::json::parse(*ready);
  const std::string release = j.at("release");
  const fs::path root = dir / "root";
  return KernelArtifacts{r.source.package,
                         r.source.version,
                         release,
                         root,
                         root / "boot" / ("vmlinuz-" + release),
                         root / "boot" / ("System.map-" + release),
                         root / "boot" / ("config-" + release),
                         root / "lib/modules" / release};
}

KernelArtifacts build_kernel(const Recipe& r, const fs::path& recipes_dir, const fs::path& cache,
                             const SourceBuildOptions& options, std::ostream& log) {
  require_source_recipe(r);
  if (!options.prepare_only)
    if (auto done = cached_build(r, recipes_dir, cache)) {
      log << r.name << ": built before: " << done->root.parent_path().string() << "\n";
      return *done;
    }
  const auto t0 = Clock::now();
  const auto base = base_kernel(r, recipes_dir, cache, log);
  const std::string hash = recipe_hash(r, text_of(base.config));
  const fs::path dir = cache / "builds" / (r.name + "-" + hash);
  // Two builds of one recipe in one cache would unpack over, or delete, each other's tree.
  fs::create_directories(dir.parent_path());
  const FileLock lock(dir.string() + ".lock", "building " + r.name + " in " + dir.string());

  // The source tarball, once per version.
  const fs::path src = cache / "sources" / (r.source.package + "_" + r.source.version);
  fs::create_directories(src.parent_path());
  if (const FileLock src_lock(src.string() + ".lock",
                              "unpacking " + r.source.package + " into " + src.string());
      !fs::exists(src / "unpacked")) {
    const auto policy = apt_policy(r.source.package);
    if (std::find(policy.versions.begin(), policy.versions.end(), r.source.version) == policy.versions.end())
      throw Error(r.file.string() + ": [source] version: the archive has no " + r.source.package + " " +
                  r.source.version + "; edit the pin (the archive has: " +
                  (policy.versions.empty() ? std::string("nothing") : policy.versions.front()) + ", ...)");
    fs::remove_all(src);
    fs::create_directories(src / "deb");
    ProcessOptions in_deb;
    in_deb.cwd = src / "deb";
    log << r.name << ": apt-get download " << r.source.package << "=" << r.source.version << "\n"
        << std::flush;
    run_checked({"apt-get", "-q", "-o", "APT::Sandbox::User=root", "download",
                 r.source.package + "=" + r.source.version},
                in_deb);
    for (const auto& e : fs::directory_iterator(src / "deb"))
      if (e.path().extension() == ".deb")
        run_checked({"dpkg-deb", "-x", e.path().string(), (src / "x").string()});
    fs::remove_all(src / "deb");
    write_file_atomic(src / "unpacked", "\n");
  }
  fs::path tarball;
  for (const auto& e : fs::directory_iterator(src / "x/usr/src"))
    if (e.path().string().ends_with(".tar.xz")) tarball = e.path();
  if (tarball.empty()) throw Error((src / "x/usr/src").string() + ": no linux-source tarball");

  const fs::path tree_parent = dir / "tree";
  fs::path tree;
  // How this build began, recorded beside its time: a resumed or twin-seeded build compiles only part
  // of the kernel, and its seconds must not be read as a whole build's.
  std::string started;
  if (auto mark = read_text(dir / kPreparedFile);
      mark && trim(*mark) == hash && fs::is_directory(tree_parent)) {
    // An interrupted build of this very recipe: its tree is patched and configured, and make is
    // incremental, so go on where it stopped instead of unpacking again.
    tree = only_subdirectory(tree_parent);
    log << r.name << ": resuming the build in " << tree.string() << "\n";
    started = "resumed an interrupted build (build_seconds covers this invocation only)";
  } else if (auto twin = pristine_twin(r, base, cache); twin && !r.source.patches.empty()) {
    // The same source, config and fragment built without patches: start from its compiled tree, so
    // that only what the patches touch is compiled again (and the diff of the two is the patches).
    fs::remove_all(dir);
    fs::create_directories(tree_parent);
    log << r.name << ": starting from the built tree of "
        << twin->parent_path().parent_path().filename().string() << "\n";
    run_checked({"cp", "-a", "--reflink=auto", twin->string(), tree_parent.string()});
    started = "from the compiled tree of " + twin->parent_path().parent_path().filename().string() +
              " (incremental: what the patches touch, and the link)";
    tree = only_subdirectory(tree_parent);
    apply_patches(r, tree, log);
    run_checked({"make", "olddefconfig"}, in_directory(tree));
  } else {
    started = "fresh: unpacked, configured and compiled in full";
    fs::remove_all(dir);
    fs::create_directories(tree_parent);
    log << r.name << ": unpacking " << tarball.filename().string() << "\n" << std::flush;
    run_checked({"tar", "-xJf", tarball.string(), "-C", tree_parent.string()});
    tree = only_subdirectory(tree_parent);
    apply_patches(r, tree, log);
    std::string config = text_of(base.config);
    if (!r.source.config_fragment.empty()) config += "\n" + text_of(r.source.config_fragment);
    write_file_atomic(tree / ".config", config, /*replace=*/true);
    run_checked({"make", "olddefconfig"}, in_directory(tree));
    if (!r.source.loadable_modules) {
      run_checked({"make", "mod2noconfig"}, in_directory(tree));
      log << r.name << ": modules = false: every =m option that can be is now off (make mod2noconfig)\n";
    }
  }
  ProcessOptions in_tree;
  in_tree.cwd = tree;
  auto report = check_config(fragment_requirements(r.source.config_fragment), text_of(tree / ".config"));
  if (!report.ok()) {
    std::string list;
    for (const auto& m : report.missing()) list += "\n  " + m;
    throw Error(r.source.config_fragment.string() + ": make olddefconfig did not keep:" + list);
  }
  write_file_atomic(dir / kPreparedFile, hash + "\n", /*replace=*/true);
  if (options.prepare_only) {
    log << r.name << ": prepared " << tree.string() << " (patches applied, olddefconfig done)\n";
    return {r.source.package, r.source.version, "", {}, {}, {}, tree / ".config", {}};
  }

  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  const std::string jobs = std::to_string(options.jobs > 0 ? options.jobs : std::max(1L, cpus));
  log << r.name << ": make -j" << jobs << " bzImage modules in " << tree.string() << "\n" << std::flush;
  ProcessOptions quiet_make = in_tree;
  quiet_make.merge_stderr = true;
  run_checked({"make", "-j" + jobs, "bzImage", "modules"}, quiet_make);
  const std::string release = trim(run_checked({"make", "-s", "kernelrelease"}, in_tree));
  const fs::path root = dir / "root";
  fs::create_directories(root / "boot");
  run_checked(
      {"make", "-j" + jobs, "modules_install", "INSTALL_MOD_PATH=" + root.string(), "INSTALL_MOD_STRIP=1"},
      in_tree);
  // overwrite: a resumed build may have got this far before
  constexpr auto kOverwrite = fs::copy_options::overwrite_existing;
  fs::copy_file(tree / "arch/x86/boot/bzImage", root / "boot" / ("vmlinuz-" + release), kOverwrite);
  fs::copy_file(tree / "System.map", root / "boot" / ("System.map-" + release), kOverwrite);
  fs::copy_file(tree / ".config", root / "boot" / ("config-" + release), kOverwrite);
  run_checked({"depmod", "-b", root.string(), release});
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  nlohmann::json ready = {{"recipe", r.name},         {"hash", hash},
                          {"release", release},       {"jobs", jobs},
                          {"build_seconds", seconds}, {"started", started}};
  write_file_atomic(dir / kReadyFile, ready.dump(2) + "\n");
  // A pristine tree stays: a patched twin starts from it (see above). Patched trees go.
  if (!r.source.patches.empty()) fs::remove_all(tree_parent);
  log << r.name << ": built " << release << " in " << static_cast<long>(seconds) << " s\n";
  return *cached_build(r, recipes_dir, cache);
}

}  // namespace schedlab::kernels
