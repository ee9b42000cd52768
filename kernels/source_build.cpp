#include "kernels/source_build.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
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
constexpr const char* kBuildLog = "build.log";  // every tool's output, kept beside the build (and on failure)

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

// "gcc (Debian 12.2.0-14) 12.2.0": the first line of `gcc --version`, the compiler the kernel's
// Makefile uses by default (CC = $(CROSS_COMPILE)gcc).
std::string compiler_identity() {
  ProcessOptions o;
  o.merge_stderr = true;
  const auto res = run_process({"gcc", "--version"}, o);
  if (res.exit_code != 0) return "no gcc (exit " + std::to_string(res.exit_code) + ")";
  return trim(res.output.substr(0, res.output.find('\n')));
}

void require_source_recipe(const Recipe& r) {
  if (r.kind != SourceKind::kSource)
    throw InputError(r.name + " is a package recipe: `schedlab kernel fetch " + r.name + "` gets its kernel");
}

// The packaged config the build starts from (the base recipe's kernel, fetched if needed).
// A base_config_file stands in for a kernel whose only part used is its config.
KernelArtifacts base_kernel(const Recipe& r, const fs::path& recipes_dir, const fs::path& cache,
                            std::ostream& log) {
  if (!r.source.base_config_file.empty()) return {{}, {}, {}, {}, {}, {}, r.source.base_config_file, {}};
  const Recipe base = load_recipe(recipes_dir, r.source.base_config);
  return fetch_kernel(base, cache, log);
}

std::optional<KernelArtifacts> cached_base_kernel(const Recipe& r, const fs::path& recipes_dir,
                                                  const fs::path& cache) {
  if (!r.source.base_config_file.empty())
    return KernelArtifacts{{}, {}, {}, {}, {}, {}, r.source.base_config_file, {}};
  return cached_kernel(load_recipe(recipes_dir, r.source.base_config), cache);
}

std::string recipe_hash(const Recipe& r, const std::string& base_config) {
  // The compiler is part of what is built: a gcc upgrade gives another kernel under the same recipe.
  std::string material = "compiler: " + compiler_identity() + "\n";
  material += r.source.package + "=" + r.source.version + "\n" + base_config;
  if (!r.source.config_fragment.empty()) material += text_of(r.source.config_fragment);
  for (const auto& p : r.source.patches) material += p.filename().string() + "\n" + text_of(p);
  if (!r.source.loadable_modules) material += "\nmodules = false";
  return canonical_hash(material);
}

// "CONFIG_X=y" lines of a fragment as requirements olddefconfig must keep; "CONFIG_X=n" and
// "# CONFIG_X is not set" as options it must leave off.
std::vector<ConfigRequirement> fragment_requirements(const fs::path& fragment) {
  std::vector<ConfigRequirement> out;
  if (fragment.empty()) return out;
  for (const auto& line : split_lines(text_of(fragment))) {
    constexpr std::string_view kNotSetPrefix = "# CONFIG_", kNotSetSuffix = " is not set";
    if (line.starts_with(kNotSetPrefix) && line.ends_with(kNotSetSuffix)) {
      out.push_back(
          {line.substr(kNotSetPrefix.size(), line.size() - kNotSetPrefix.size() - kNotSetSuffix.size()),
           {"n"}});
      continue;
    }
    auto eq = line.find('=');
    if (line.rfind("CONFIG_", 0) != 0 || eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
    if (value.empty()) continue;  // an emptied string option reads back as absent
    out.push_back({line.substr(7, eq - 7), {value}});
  }
  return out;
}

fs::path only_subdirectory(const fs::path& parent) {
  for (const auto& e : fs::directory_iterator(parent))
    if (e.is_directory()) return e.path();
  throw Error(parent.string() + ": no source tree in it");
}

// The whole output of every tool the build runs, appended to CACHE/builds/<name>-<hash>/build.log as
// it comes, so that a failed (or interrupted) 40-minute make leaves its cause on disk.
class BuildLog {
 public:
  explicit BuildLog(fs::path path) : path_(std::move(path)), out_(path_, std::ios::app) {
    if (!out_) throw Error(path_.string() + ": cannot write the build log");
  }
  const fs::path& path() const { return path_; }

  // Runs argv in `cwd` with its output (standard error merged) going to the log; a non-zero exit is
  // an Error quoting the first error line and naming the log.
  ProcessResult run(const std::vector<std::string>& argv, const fs::path& cwd, bool check = true) {
    out_ << "$ " << command_line(argv) << "\n" << std::flush;
    ProcessOptions o;
    o.cwd = cwd;
    o.merge_stderr = true;
    o.on_line = [this](const std::string& line, double) {
      out_ << line << "\n";
      return true;
    };
    auto res = run_process(argv, o);
    out_ << "[exit " << res.exit_code << "]\n" << std::flush;
    if (check && res.exit_code != 0) {
      const auto first = first_error_line(res.output);
      throw Error(command_line(argv) + " failed (exit " + std::to_string(res.exit_code) + ") in " +
                  cwd.string() + (first ? "\n  first error: " + *first : std::string()) + "\n" +
                  last_lines(res.output, 8) + "\n  full log: " + path_.string());
    }
    return res;
  }

 private:
  fs::path path_;
  std::ofstream out_;
};

struct AppliedPatch {
  std::string file;
  std::string
      output;  // patch's own report: "patching file ...", and any "Hunk #1 succeeded at 12 (offset 3 lines)"
};

nlohmann::json applied_json(const std::vector<AppliedPatch>& applied) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : applied) out.push_back({{"file", p.file}, {"output", p.output}});
  return out;
}

// Each patch with --fuzz=0: a hunk whose context does not match exactly is refused rather than
// placed where patch guesses, so a recipe's patch means the same change on every source version.
std::vector<AppliedPatch> apply_patches(const Recipe& r, const fs::path& tree, BuildLog& build_log,
                                        std::ostream& log) {
  std::vector<AppliedPatch> applied;
  for (const auto& patch : r.source.patches) {
    auto res = build_log.run({"patch", "-p1", "--forward", "--batch", "--fuzz=0", "-i", patch.string()}, tree,
                             /*check=*/false);
    if (res.exit_code != 0)
      throw Error(r.file.string() + ": [source] patches: " + patch.filename().string() +
                  " does not apply exactly (no fuzz allowed) to " + r.source.package + " " +
                  r.source.version + ":\n" + last_lines(res.output, 12) +
                  "\n  full log: " + build_log.path().string());
    log << r.name << ": applied " << patch.filename().string() << "\n";
    if (res.output.find("offset") != std::string::npos)
      log << r.name << ": " << patch.filename().string() << " applied at an offset:\n" << res.output;
    applied.push_back({patch.filename().string(), res.output});
  }
  return applied;
}

// The configuration step, the same for a tree unpacked fresh and one copied from a pristine twin:
// the base config plus the fragment, olddefconfig, and mod2noconfig for modules = false. A twin's
// .config must not be the start: an option a patch adds would then take its default (say =m) where
// the fresh path would have turned it off, and one hash would name two configs.
void configure(const Recipe& r, const KernelArtifacts& base, const fs::path& tree, BuildLog& build_log,
               std::ostream& log) {
  std::string config = text_of(base.config);
  if (!r.source.config_fragment.empty()) config += "\n" + text_of(r.source.config_fragment);
  write_file_atomic(tree / ".config", config, /*replace=*/true);
  build_log.run({"make", "olddefconfig"}, tree);
  if (!r.source.loadable_modules) {
    build_log.run({"make", "mod2noconfig"}, tree);
    log << r.name << ": modules = false: every =m option that can be is now off (make mod2noconfig)\n";
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
  auto base_k = cached_base_kernel(r, recipes_dir, cache);
  if (!base_k) return std::nullopt;
  const fs::path dir = cache / "builds" / (r.name + "-" + recipe_hash(r, text_of(base_k->config)));
  auto ready = read_text(dir / kReadyFile);
  if (!ready) return std::nullopt;
  auto j = nlohmann::json::parse(*ready);
  const std::string release = j.at("release");
  const fs::path root = dir / "root";
  return KernelArtifacts{
      r.source.package,
      r.source.version,
      release,
      root,
      root / "boot" / ("vmlinuz-" + release),
      root / "boot" / ("System.map-" + release),
      root / "boot" / ("config-" + release),
      root / "lib/modules" / release,
      j.value("hash", std::string()),
      j.contains("build_id") && j["build_id"].is_string() ? j["build_id"].get<std::string>() : std::string()};
}

std::optional<std::string> first_error_line(const std::string& output) {
  for (const auto& line : split_lines(output))
    if (line.find("error:") != std::string::npos || line.find("Error ") != std::string::npos ||
        line.find("***") != std::string::npos)
      return line;
  return std::nullopt;
}

std::optional<std::string> elf_build_id(const fs::path& elf) {
  std::ifstream in(elf, std::ios::binary);
  if (!in) return std::nullopt;
  auto read_at = [&](std::uint64_t at, std::size_t n) {
    std::string buf(n, '\0');
    in.seekg(static_cast<std::streamoff>(at));
    in.read(buf.data(), static_cast<std::streamsize>(n));
    return in.gcount() == static_cast<std::streamsize>(n) ? std::optional<std::string>(buf) : std::nullopt;
  };
  auto le = [](const std::string& b, std::size_t at, int bytes) {
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i)
      v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
    return v;
  };
  // ELF64 little-endian only: the kernels built here are x86-64.
  const auto header = read_at(0, 64);
  if (!header ||
      header->compare(0, 4,
                      "\x7f"
                      "ELF") != 0 ||
      (*header)[4] != 2 || (*header)[5] != 1)
    return std::nullopt;
  const std::uint64_t shoff = le(*header, 0x28, 8), shentsize = le(*header, 0x3A, 2),
                      shnum = le(*header, 0x3C, 2);
  constexpr std::uint64_t kShtNote = 7, kNtGnuBuildId = 3;
  for (std::uint64_t i = 0; i < shnum && shentsize >= 0x28; ++i) {
    const auto sh = read_at(shoff + i * shentsize, 0x28);
    if (!sh) return std::nullopt;
    if (le(*sh, 4, 4) != kShtNote) continue;
    const std::uint64_t size = le(*sh, 0x20, 8);
    if (size > (1U << 20)) continue;
    const auto notes = read_at(le(*sh, 0x18, 8), static_cast<std::size_t>(size));
    if (!notes) continue;
    auto align4 = [](std::uint64_t n) { return (n + 3) & ~std::uint64_t{3}; };
    for (std::uint64_t at = 0; at + 12 <= notes->size();) {
      const std::uint64_t namesz = le(*notes, at, 4), descsz = le(*notes, at + 4, 4),
                          type = le(*notes, at + 8, 4);
      const std::uint64_t name_at = at + 12, desc_at = name_at + align4(namesz);
      if (desc_at + descsz > notes->size()) break;
      if (type == kNtGnuBuildId && namesz == 4 && notes->compare(name_at, 4, std::string("GNU\0", 4)) == 0) {
        std::string hex;
        constexpr const char* kDigits = "0123456789abcdef";
        for (std::uint64_t b = 0; b < descsz; ++b) {
          const auto c = static_cast<unsigned char>((*notes)[desc_at + b]);
          hex += kDigits[c >> 4];
          hex += kDigits[c & 15];
        }
        return hex;
      }
      at = desc_at + align4(descsz);
    }
  }
  return std::nullopt;
}

KernelArtifacts build_kernel(const Recipe& r, const fs::path& recipes_dir, const fs::path& cache,
                             const SourceBuildOptions& options, std::ostream& log) {
  require_source_recipe(r);
  // Also for prepare_only: preparing would unpack over (and so delete) the finished build.
  if (auto done = cached_build(r, recipes_dir, cache)) {
    log << r.name << ": built before: " << done->root.parent_path().string()
        << (options.prepare_only ? " (nothing to prepare)" : "") << "\n";
    return *done;
  }
  const auto t0 = Clock::now();
  const auto base = base_kernel(r, recipes_dir, cache, log);
  const std::string hash = recipe_hash(r, text_of(base.config));
  const fs::path dir = cache / "builds" / (r.name + "-" + hash);
  // Two builds of one recipe in one cache would unpack over, or delete, each other's tree.
  fs::create_directories(dir.parent_path());
  const FileLock lock(dir.string() + ".lock", "building " + r.name + " in " + dir.string());
  if (auto done = cached_build(r, recipes_dir, cache)) return *done;  // built while we waited for the lock
  std::optional<BuildLog> opened_log;  // opened once the branch below has (re)made `dir`
  auto build_log = [&]() -> BuildLog& {
    if (!opened_log) opened_log.emplace(dir / kBuildLog);
    return *opened_log;
  };
  std::vector<AppliedPatch> applied;

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
    applied = apply_patches(r, tree, build_log(), log);
    configure(r, base, tree, build_log(), log);
  } else {
    started = "fresh: unpacked, configured and compiled in full";
    fs::remove_all(dir);
    fs::create_directories(tree_parent);
    log << r.name << ": unpacking " << tarball.filename().string() << "\n" << std::flush;
    run_checked({"tar", "-xJf", tarball.string(), "-C", tree_parent.string()});
    tree = only_subdirectory(tree_parent);
    applied = apply_patches(r, tree, build_log(), log);
    configure(r, base, tree, build_log(), log);
  }
  const std::string config_text = text_of(tree / ".config");
  auto report = check_config(fragment_requirements(r.source.config_fragment), config_text);
  if (!report.ok()) {
    std::string list;
    for (const auto& m : report.missing()) list += "\n  " + m;
    throw Error(r.source.config_fragment.string() + ": make olddefconfig did not keep:" + list);
  }
  // The recipe's [config] require, on the resolved .config before compiling: a missing option found
  // after a 40-minute build is 40 minutes lost.
  if (auto required = check_config(r.require, config_text); !required.ok()) {
    std::string list;
    for (const auto& m : required.missing()) list += "\n  " + m;
    throw Error(r.file.string() + ": [config] require: the configured " + (tree / ".config").string() +
                " (base config, fragment, olddefconfig" +
                (r.source.loadable_modules ? "" : ", mod2noconfig") + ") does not have:" + list);
  }
  // What the patches said, kept for built.json (a resumed build applied them in an earlier run).
  if (!applied.empty())
    write_file_atomic(dir / "patches.json", nlohmann::json(applied_json(applied)).dump(2) + "\n", true);
  write_file_atomic(dir / kPreparedFile, hash + "\n", /*replace=*/true);
  if (options.prepare_only) {
    log << r.name << ": prepared " << tree.string() << " (patches applied, olddefconfig done)\n";
    return {r.source.package, r.source.version, "", {}, {}, {}, tree / ".config", {}, hash, {}};
  }

  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  const std::string jobs = std::to_string(options.jobs > 0 ? options.jobs : std::max(1L, cpus));
  log << r.name << ": make -j" << jobs << " bzImage modules in " << tree.string() << "\n" << std::flush;
  log << r.name << ": its output goes to " << build_log().path().string() << "\n" << std::flush;
  build_log().run({"make", "-j" + jobs, "bzImage", "modules"}, tree);
  ProcessOptions in_tree;
  in_tree.cwd = tree;
  in_tree.merge_stderr = false;  // the release alone, not make's warnings
  const std::string release = trim(run_checked({"make", "-s", "kernelrelease"}, in_tree));
  const fs::path root = dir / "root";
  fs::create_directories(root / "boot");
  build_log().run(
      {"make", "-j" + jobs, "modules_install", "INSTALL_MOD_PATH=" + root.string(), "INSTALL_MOD_STRIP=1"},
      tree);
  const auto build_id = elf_build_id(tree / "vmlinux");
  // overwrite: a resumed build may have got this far before
  constexpr auto kOverwrite = fs::copy_options::overwrite_existing;
  fs::copy_file(tree / "arch/x86/boot/bzImage", root / "boot" / ("vmlinuz-" + release), kOverwrite);
  fs::copy_file(tree / "System.map", root / "boot" / ("System.map-" + release), kOverwrite);
  fs::copy_file(tree / ".config", root / "boot" / ("config-" + release), kOverwrite);
  build_log().run({"depmod", "-b", root.string(), release}, root);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  nlohmann::json patches = nlohmann::json::array();
  if (auto kept = read_text(dir / "patches.json")) patches = nlohmann::json::parse(*kept);
  nlohmann::json ready = {{"recipe", r.name},
                          {"hash", hash},
                          {"compiler", compiler_identity()},
                          {"release", release},
                          {"build_id", build_id ? nlohmann::json(*build_id) : nlohmann::json(nullptr)},
                          {"patches", patches},
                          {"log", kBuildLog},
                          {"jobs", jobs},
                          {"build_seconds", seconds},
                          {"started", started}};
  write_file_atomic(dir / kReadyFile, ready.dump(2) + "\n");
  // A pristine tree stays: a patched twin starts from it (see above). Patched trees go.
  if (!r.source.patches.empty()) fs::remove_all(tree_parent);
  log << r.name << ": built " << release << " in " << static_cast<long>(seconds) << " s\n";
  return *cached_build(r, recipes_dir, cache);
}

}  // namespace schedlab::kernels
