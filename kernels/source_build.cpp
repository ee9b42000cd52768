#include "kernels/source_build.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "core/hash.hpp"
#include "core/host_paths.hpp"
#include "kernels/build_steps.hpp"
#include "kernels/config_check.hpp"
#include "kernels/image_kernel.hpp"
#include "kernels/process.hpp"
#include "kernels/user_build.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kBuiltRecord = "built.json";
constexpr const char* kPreparedFile = "prepared";  // the recipe hash, once the tree is patched and configured
constexpr const char* kBuildLog = "build.log";  // every tool's output, kept beside the build (and on failure)

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

// The compiled tree of a finished build with this recipe's source, config and fragment but no
// patches (any recipe name), if one is in the cache.
std::optional<fs::path> pristine_twin(const Recipe& r, const KernelArtifacts& base, const fs::path& cache) {
  Recipe pristine = r;
  pristine.source.patches.clear();
  const std::string suffix = "-" + recipe_hash(pristine, text_of(base.config));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache / "builds", ec)) {
    const auto name = e.path().filename().string();
    if (!name.ends_with(suffix) || !fs::exists(e.path() / kBuiltRecord) ||
        !fs::is_directory(e.path() / "tree"))
      continue;
    return only_subdirectory(e.path() / "tree");
  }
  return std::nullopt;
}
}  // namespace

std::optional<KernelArtifacts> cached_build(const Recipe& r, const fs::path& recipes_dir,
                                            const fs::path& cache) {
  if (r.kind == SourceKind::kGit || r.kind == SourceKind::kTree)
    return cached_user_build(r, recipes_dir, cache);
  if (r.kind == SourceKind::kImage) return cached_image(r, cache);
  require_source_recipe(r);
  auto base_k = cached_base_kernel(r, recipes_dir, cache);
  if (!base_k) return std::nullopt;
  const fs::path dir = cache / "builds" / (r.name + "-" + recipe_hash(r, text_of(base_k->config)));
  auto ready = read_text(dir / kBuiltRecord);
  if (!ready) return std::nullopt;
  auto j = nlohmann::json::parse(*ready);
  KernelArtifacts k = artifacts_under(dir / "root", r.source.package, r.source.version, j.at("release"));
  k.hash = j.value("hash", std::string());
  if (j.contains("build_id") && j["build_id"].is_string()) k.build_id = j["build_id"];
  return k;
}

std::optional<std::string> first_error_line(const std::string& output) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
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
  if (r.kind == SourceKind::kGit || r.kind == SourceKind::kTree)
    return build_user_kernel(r, recipes_dir, cache, options, log);
  if (r.kind == SourceKind::kImage) return install_image(r, cache, log);
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
    configure(r, text_of(base.config), MakeTree{tree, {}}, build_log(), log);
  } else {
    started = "fresh: unpacked, configured and compiled in full";
    fs::remove_all(dir);
    fs::create_directories(tree_parent);
    log << r.name << ": unpacking " << tarball.filename().string() << "\n" << std::flush;
    run_checked({"tar", "-xJf", tarball.string(), "-C", tree_parent.string()});
    tree = only_subdirectory(tree_parent);
    applied = apply_patches(r, tree, build_log(), log);
    configure(r, text_of(base.config), MakeTree{tree, {}}, build_log(), log);
  }
  check_configured(r, MakeTree{tree, {}}, log);
  // What the patches said, kept for built.json (a resumed build applied them in an earlier run).
  if (!applied.empty())
    write_file_atomic(dir / "patches.json", nlohmann::json(applied_json(applied)).dump(2) + "\n", true);
  write_file_atomic(dir / kPreparedFile, hash + "\n", /*replace=*/true);
  if (options.prepare_only) {
    log << r.name << ": prepared " << tree.string() << " (patches applied, olddefconfig done)\n";
    return {r.source.package, r.source.version, "", {}, {}, {}, tree / ".config", {}, hash, {}};
  }

  const fs::path root = dir / "root";
  const auto compiled = compile_and_install(r, MakeTree{tree, {}}, root, options.jobs, build_log(), log);
  const auto& release = compiled.release;
  const auto& build_id = compiled.build_id;
  const auto& jobs = compiled.jobs;
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
  write_file_atomic(dir / kBuiltRecord, ready.dump(2) + "\n");
  // A pristine tree stays: a patched twin starts from it (see above). Patched trees go.
  if (!r.source.patches.empty()) fs::remove_all(tree_parent);
  log << r.name << ": built " << release << " in " << static_cast<long>(seconds) << " s\n";
  return *cached_build(r, recipes_dir, cache);
}

}  // namespace schedlab::kernels
