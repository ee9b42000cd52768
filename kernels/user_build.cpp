#include "kernels/user_build.hpp"

#include <algorithm>
#include <chrono>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "core/hash.hpp"
#include "core/host_paths.hpp"
#include "kernels/build_steps.hpp"
#include "kernels/process.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kReadyFile = "built.json";
constexpr const char* kPreparedFile = "prepared";
constexpr const char* kBuildLog = "build.log";

ProcessResult git(const fs::path& repo, std::vector<std::string> args) {
  std::vector<std::string> argv{"git", "-C", repo.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.merge_stderr = true;
  return run_process(argv, o);
}

std::string git_checked(const fs::path& repo, std::vector<std::string> args) {
  const auto res = git(repo, args);
  if (res.exit_code != 0) {
    std::vector<std::string> argv{"git", "-C", repo.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    throw Error(command_line(argv) + " failed (exit " + std::to_string(res.exit_code) + "):\n" +
                last_lines(res.output, 6));
  }
  return trim(res.output);
}

// The config the build starts from, as text for the hash; "make defconfig" for a defconfig build
// (its result depends on the commit, which the hash has).
std::string config_material(const Recipe& r, const fs::path& recipes_dir, const fs::path& cache, bool fetch,
                            std::ostream& log) {
  if (r.user.config == "defconfig") return "make defconfig";
  if (r.user.config == "tree") return text_of(r.user.path / ".config");
  if (!r.source.base_config_file.empty()) return text_of(r.source.base_config_file);
  // A user's recipe directory rarely holds Debian's recipes: a base named there or built in.
  const fs::path dir =
      fs::exists(recipes_dir / (r.source.base_config + ".toml")) ? recipes_dir : default_recipes_dir();
  const Recipe base = load_recipe(dir, r.source.base_config);
  if (fetch) return text_of(fetch_kernel(base, cache, log).config);
  const auto k = cached_kernel(base, cache);
  return k ? text_of(k->config) : std::string();
}

std::string build_hash(const Recipe& r, const UserSourceState& state, const std::string& config) {
  std::string material = "compiler: " + compiler_identity() + "\n";
  material += std::string(kind_name(r.kind)) + ": " +
              (r.kind == SourceKind::kGit ? state.commit : state.repository.string()) + "\n" + config;
  if (!r.source.config_fragment.empty()) material += text_of(r.source.config_fragment);
  if (!r.source.loadable_modules) material += "\nmodules = false";
  return canonical_hash(material);
}

fs::path build_dir(const Recipe& r, const fs::path& cache, const std::string& hash) {
  return cache / "builds" / (r.name + "-" + hash);
}

// A tree's state as far as git can tell: its commit and its uncommitted changes. Outside git: nothing
// (a tree without git is rebuilt by `kernel build`, and make decides what changed).
std::string tree_fingerprint(const UserSourceState& s) {
  if (s.commit.empty()) return "";
  const auto diff = git(s.repository, {"diff", "HEAD", "--binary"});
  return s.commit + (s.dirty ? " dirty " + canonical_hash(diff.output) : "");
}

KernelArtifacts artifacts_of(const nlohmann::json& j, const fs::path& dir) {
  KernelArtifacts k = artifacts_under(dir / "root", j.value("kind", std::string("git")),
                                      j.value("commit", std::string()), j.at("release"));
  k.hash = j.value("hash", std::string());
  if (j.contains("build_id") && j["build_id"].is_string()) k.build_id = j["build_id"];
  k.identity.push_back({"source", j.value("kind", std::string())});
  if (const auto c = j.value("commit", std::string()); !c.empty()) k.identity.push_back({"commit", c});
  k.identity.push_back({"repo", j.value("repository", std::string())});
  if (j.value("kind", std::string()) == "tree") {
    k.identity.push_back({"describe", j.value("describe", std::string())});
    k.identity.push_back({"dirty", j.value("dirty", false) ? "1" : "0"});
  }
  return k;
}

// The compiled clone of the newest finished git build of the same repository, to start from.
std::optional<fs::path> seed_clone(const fs::path& repository, const fs::path& cache,
                                   const fs::path& except) {
  std::optional<fs::path> best;
  fs::file_time_type newest{};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache / "builds", ec)) {
    if (e.path() == except || !fs::is_directory(e.path() / "tree/src/.git")) continue;
    const auto text = read_text(e.path() / kReadyFile);
    if (!text) continue;
    const auto j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded() || j.value("kind", "") != "git" || j.value("repository", "") != repository.string())
      continue;
    const auto t = fs::last_write_time(e.path() / kReadyFile, ec);
    if (!best || t > newest) {
      best = e.path() / "tree/src";
      newest = t;
    }
  }
  return best;
}

}  // namespace

UserSourceState user_source_state(const Recipe& r) {
  if (r.kind != SourceKind::kGit && r.kind != SourceKind::kTree)
    throw InputError(r.name + " is not a git or tree recipe");
  std::error_code ec;
  UserSourceState s;
  s.repository = fs::canonical(r.user.path, ec);
  if (ec)
    throw InputError(r.file.string() + ": [source] " + (r.kind == SourceKind::kGit ? "repository" : "path") +
                     ": " + r.user.path.string() + ": " + ec.message());
  if (r.kind == SourceKind::kGit) {
    // --end-of-options: a ref that starts with '-' is a name, never an option.
    const auto res =
        git(s.repository, {"rev-parse", "--verify", "--quiet", "--end-of-options", r.user.ref + "^{commit}"});
    if (res.exit_code != 0)
      throw InputError(r.file.string() + ": [source] ref '" + r.user.ref +
                       "' does not resolve to a commit in " + s.repository.string() +
                       (trim(res.output).empty() ? "" : ": " + last_lines(res.output, 3)));
    s.commit = trim(res.output);
    return s;
  }
  if (git(s.repository, {"rev-parse", "--is-inside-work-tree"}).exit_code != 0) return s;  // not a repository
  const auto head = git(s.repository, {"rev-parse", "--verify", "--quiet", "HEAD^{commit}"});
  if (head.exit_code == 0) s.commit = trim(head.output);
  s.describe = git_checked(s.repository, {"describe", "--always", "--dirty"});
  const auto status = git_checked(s.repository, {"status", "--porcelain", "--untracked-files=no"});
  s.dirty = !status.empty();
  return s;
}

std::optional<KernelArtifacts> cached_user_build(const Recipe& r, const fs::path& recipes_dir,
                                                 const fs::path& cache) {
  const auto state = user_source_state(r);
  std::ostringstream quiet;
  const auto config = config_material(r, recipes_dir, cache, /*fetch=*/false, quiet);
  if (config.empty()) return std::nullopt;  // the base kernel is not even fetched
  const fs::path dir = build_dir(r, cache, build_hash(r, state, config));
  const auto ready = read_text(dir / kReadyFile);
  if (!ready) return std::nullopt;
  const auto j = nlohmann::json::parse(*ready);
  // A tree edited since its build is not that build any more.
  if (r.kind == SourceKind::kTree && j.value("fingerprint", std::string()) != tree_fingerprint(state))
    return std::nullopt;
  return artifacts_of(j, dir);
}

KernelArtifacts build_user_kernel(const Recipe& r, const fs::path& recipes_dir, const fs::path& cache,
                                  const SourceBuildOptions& options, std::ostream& log) {
  auto state = user_source_state(r);
  if (r.kind == SourceKind::kTree && state.dirty && !r.user.allow_dirty && !options.allow_dirty)
    throw InputError(r.file.string() + ": [source] path: " + state.repository.string() +
                     " has uncommitted changes (" + state.describe +
                     "); commit them, or build the tree as it is with allow_dirty = true in the " +
                     "recipe or `kernel build --allow-dirty`");
  if (r.kind == SourceKind::kTree && r.user.config == "tree" && !r.source.config_fragment.empty())
    throw InputError(r.file.string() +
                     ": [source] config_fragment: a tree's own .config is built as it is; " +
                     "put the options in it, or start from defconfig or a base config");
  if (r.kind == SourceKind::kTree && r.user.config == "tree" && !fs::exists(state.repository / ".config"))
    throw InputError(r.file.string() + ": [source] config = \"tree\": " +
                     (state.repository / ".config").string() + " does not exist");
  if (auto done = cached_user_build(r, recipes_dir, cache)) {
    log << r.name << ": built before: " << done->root.parent_path().string() << "\n";
    return *done;
  }
  const auto t0 = Clock::now();
  const std::string config = config_material(r, recipes_dir, cache, /*fetch=*/true, log);
  const std::string hash = build_hash(r, state, config);
  const fs::path dir = build_dir(r, cache, hash);
  fs::create_directories(dir.parent_path());
  const FileLock lock(dir.string() + ".lock", "building " + r.name + " in " + dir.string());
  // The git clones of one repository are copied from one another: one build of a repository at a time.
  const FileLock repo_lock(
      (cache / "builds" / ("repository-" + canonical_hash(state.repository.string()) + ".lock")).string(),
      "building from " + state.repository.string());
  if (auto done = cached_user_build(r, recipes_dir, cache)) return *done;
  fs::create_directories(dir);
  // A tree is rebuilt in the same directory: its earlier record goes first, so a failed rebuild never
  // leaves it describing half-replaced files.
  fs::remove(dir / kReadyFile);
  BuildLog build_log(dir / kBuildLog);

  MakeTree tree;
  std::string started, seeded_from;
  if (r.kind == SourceKind::kGit) {
    const fs::path clone = dir / "tree/src";
    tree.source = clone;
    if (auto mark = read_text(dir / kPreparedFile); mark && trim(*mark) == hash && fs::is_directory(clone)) {
      log << r.name << ": resuming the build in " << clone.string() << "\n";
      started = "resumed an interrupted build (build_seconds covers this invocation only)";
    } else if (auto seed = seed_clone(state.repository, cache, dir)) {
      fs::remove_all(dir / "tree");
      fs::create_directories(dir / "tree");
      seeded_from = trim(git_checked(*seed, {"rev-parse", "HEAD"}));
      log << r.name << ": starting from the compiled clone at " << seeded_from.substr(0, 12) << " ("
          << seed->parent_path().parent_path().filename().string() << ")\n"
          << std::flush;
      run_checked({"cp", "-a", "--reflink=auto", seed->string(), (dir / "tree").string()});
      // The copy has new inodes: refresh the index first, so checkout rewrites only the files that
      // differ between the two commits and make sees only those as new.
      (void)git(clone, {"update-index", "-q", "--refresh"});
      build_log.run({"git", "checkout", "-q", "--detach", state.commit}, clone);
      started = "from the compiled clone of " + seeded_from.substr(0, 12) +
                " (incremental: what the commits between them touch, and the link)";
    } else {
      fs::remove_all(dir / "tree");
      fs::create_directories(dir / "tree");
      log << r.name << ": cloning " << state.repository.string() << " at " << state.commit.substr(0, 12)
          << "\n"
          << std::flush;
      build_log.run(
          {"git", "clone", "-q", "--shared", "--no-checkout", state.repository.string(), clone.string()},
          dir / "tree");
      build_log.run({"git", "checkout", "-q", "--detach", state.commit}, clone);
      started = "fresh: cloned, configured and compiled in full";
    }
  } else if (r.user.config == "tree") {
    tree.source = state.repository;  // in place: the developer's own build with its own .config
    started = "in the tree itself, with its own .config (make is incremental)";
  } else {
    tree.source = state.repository;
    tree.objtree = dir / "obj";
    started = fs::exists(tree.objtree / "vmlinux") ? "out of tree, over the objects of an earlier build"
                                                   : "out of tree, compiled in full";
  }
  if (!tree.objtree.empty()) fs::create_directories(tree.objtree);
  if (r.user.config == "tree") {
    build_log.run(tree.make({"olddefconfig"}), tree.source);
  } else {
    std::string base = config;
    if (r.user.config == "defconfig") {
      build_log.run(tree.make({"defconfig"}), tree.source);
      base = text_of(tree.objects() / ".config");
    }
    configure(r, base, tree, build_log, log);
  }
  check_configured(r, tree, log);
  write_file_atomic(dir / kPreparedFile, hash + "\n", /*replace=*/true);
  if (options.prepare_only) {
    log << r.name << ": prepared " << tree.objects().string() << " (checked out and configured)\n";
    return {kind_name(r.kind), state.commit, "", {}, {}, {}, tree.objects() / ".config", {}, hash, {}};
  }
  const auto compiled = compile_and_install(r, tree, dir / "root", options.jobs, build_log, log);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  nlohmann::json ready = {
      {"recipe", r.name},
      {"kind", kind_name(r.kind)},
      {"hash", hash},
      {"compiler", compiler_identity()},
      {"release", compiled.release},
      {"build_id", compiled.build_id ? nlohmann::json(*compiled.build_id) : nlohmann::json(nullptr)},
      {"repository", state.repository.string()},
      {"commit", state.commit},
      {"log", kBuildLog},
      {"jobs", compiled.jobs},
      {"build_seconds", seconds},
      {"started", started}};
  if (r.kind == SourceKind::kGit) {
    ready["ref"] = r.user.ref;
    if (!seeded_from.empty()) ready["seeded_from"] = seeded_from;
  } else {
    ready["describe"] = state.describe;
    ready["dirty"] = state.dirty;
    ready["fingerprint"] = tree_fingerprint(state);
  }
  write_file_atomic(dir / kReadyFile, ready.dump(2) + "\n");
  // One compiled clone per repository is the start of its next build; older ones go (each is a whole
  // kernel's objects).
  if (r.kind == SourceKind::kGit) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(cache / "builds", ec)) {
      if (e.path() == dir || !fs::is_directory(e.path() / "tree/src/.git")) continue;
      const auto text = read_text(e.path() / kReadyFile);
      const auto j = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
      if (!j.is_discarded() && j.is_object() && j.value("repository", "") == state.repository.string())
        fs::remove_all(e.path() / "tree");
    }
  }
  log << r.name << ": built " << compiled.release << " in " << static_cast<long>(seconds) << " s (" << started
      << ")\n";
  return artifacts_of(ready, dir);
}

}  // namespace schedlab::kernels
