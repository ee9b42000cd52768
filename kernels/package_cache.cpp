#include "kernels/package_cache.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ostream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "core/host_paths.hpp"
#include "kernels/process.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;

constexpr const char* kReadyFile = "fetched.json";  // written last: its presence means complete

fs::path entry_dir(const Recipe& recipe, const fs::path& cache_dir) {
  return cache_dir / "kernels" / recipe.cache_key();
}

KernelArtifacts artifacts(const Recipe& recipe, const fs::path& root) {
  return artifacts_under(root, recipe.package.package, recipe.package.version, recipe.package.release);
}

void require_package_recipe(const Recipe& recipe, const std::string& what) {
  if (recipe.kind != SourceKind::kPackage)
    throw InputError(recipe.name + " is a source recipe (" + recipe.file.string() + "): " + what +
                     " works on package recipes; build it with `schedlab kernel build " + recipe.name + "`");
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

KernelArtifacts artifacts_under(const fs::path& root, const std::string& package, const std::string& version,
                                const std::string& release) {
  return {package,
          version,
          release,
          root,
          root / "boot" / ("vmlinuz-" + release),
          root / "boot" / ("System.map-" + release),
          root / "boot" / ("config-" + release),
          root / "lib/modules" / release};
}

AptPolicy parse_apt_policy(const std::string& text) {
  AptPolicy p;
  std::istringstream in(text);
  bool table = false;
  for (std::string line; std::getline(in, line);) {
    auto t = trim(line);
    if (t.rfind("Installed:", 0) == 0) {
      auto v = trim(t.substr(10));
      if (v != "(none)") p.installed = v;
    } else if (t.rfind("Candidate:", 0) == 0) {
      auto v = trim(t.substr(10));
      if (v != "(none)") p.candidate = v;
    } else if (t == "Version table:") {
      table = true;
    } else if (table && !t.empty()) {
      // "     6.1.176-1 500" or " *** 6.1.176-1 500" (versions) vs "        500 http://..." (sources)
      auto indent = line.find_first_not_of(' ');
      if (indent == std::string::npos || indent >= 8) continue;
      if (t.rfind("*** ", 0) == 0) t = t.substr(4);
      auto words = split_ws(t);
      if (!words.empty()) p.versions.push_back(words[0]);
    }
  }
  return p;
}

AptPolicy apt_policy(const std::string& package) {
  return parse_apt_policy(run_checked({"apt-cache", "policy", package}));
}

fs::path default_cache_dir() {
  if (::geteuid() == 0) return "/var/cache/schedlab";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/tmp") / ".cache/schedlab";
}

std::optional<KernelArtifacts> cached_kernel(const Recipe& recipe, const fs::path& cache_dir) {
  if (recipe.kind != SourceKind::kPackage) return std::nullopt;
  const auto dir = entry_dir(recipe, cache_dir);
  if (!fs::exists(dir / kReadyFile)) return std::nullopt;
  return artifacts(recipe, dir / "root");
}

KernelArtifacts fetch_kernel(const Recipe& recipe, const fs::path& cache_dir, std::ostream& log) {
  require_package_recipe(recipe, "fetch");
  if (auto cached = cached_kernel(recipe, cache_dir)) {
    log << recipe.name << ": " << recipe.cache_key() << " is cached in "
        << cached->root.parent_path().string() << "\n";
    return *cached;
  }
  const auto& pin = recipe.package;
  const auto policy = apt_policy(pin.package);
  if (policy.versions.empty())
    throw Error(recipe.file.string() + ": [source] package: apt knows no package " + pin.package +
                " (has `apt-get update` run? is this Debian 12?); `schedlab kernel update " + recipe.name +
                "` re-pins the recipe to what the archive has");
  if (std::find(policy.versions.begin(), policy.versions.end(), pin.version) == policy.versions.end())
    throw Error(recipe.file.string() + ": [source] version: the archive no longer has " + pin.package + " " +
                pin.version + " (it has: " + joined(policy.versions) + "); run `schedlab kernel update " +
                recipe.name + "` to re-pin the recipe, explicitly");

  const auto dir = entry_dir(recipe, cache_dir);
  fs::create_directories(dir.parent_path());
  const FileLock lock(dir.string() + ".lock", "fetching " + pin.package + " into " + dir.string());
  if (auto cached = cached_kernel(recipe, cache_dir)) return *cached;  // fetched while we checked the pin
  const auto work = dir.parent_path() / (dir.filename().string() + ".partial");
  fs::remove_all(work);
  fs::create_directories(work / "deb");
  const auto t0 = std::chrono::steady_clock::now();
  log << recipe.name << ": apt-get download " << pin.package << "=" << pin.version << "\n" << std::flush;
  ProcessOptions in_deb;
  in_deb.cwd = work / "deb";
  run_checked({"apt-get", "-q", "-o", "APT::Sandbox::User=root", "download", pin.package + "=" + pin.version},
              in_deb);
  fs::path deb;
  for (const auto& e : fs::directory_iterator(work / "deb"))
    if (e.path().extension() == ".deb") deb = e.path();
  if (deb.empty())
    throw Error("apt-get download " + pin.package + "=" + pin.version + " left no .deb in " +
                (work / "deb").string());
  const auto deb_bytes = fs::file_size(deb);
  log << recipe.name << ": unpacking " << deb.filename().string() << " (" << deb_bytes / (1024 * 1024)
      << " MiB)\n"
      << std::flush;
  run_checked({"dpkg-deb", "-x", deb.string(), (work / "root").string()});
  auto a = artifacts(recipe, work / "root");
  for (const auto& f : {a.vmlinuz, a.system_map, a.config, a.modules})
    if (!fs::exists(f))
      throw Error(deb.string() + " has no " + fs::relative(f, work / "root").string() +
                  " ([source] release = \"" + pin.release + "\" in " + recipe.file.string() +
                  " names the files it should have)");
  run_checked({"depmod", "-b", (work / "root").string(), pin.release});
  fs::remove(deb);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json ready = {{"package", pin.package},
                          {"version", pin.version},
                          {"release", pin.release},
                          {"deb_bytes", deb_bytes},
                          {"fetch_seconds", seconds}};
  write_file_atomic(work / kReadyFile, ready.dump(2) + "\n");
  fs::remove_all(dir);
  fs::rename(work, dir);
  log << recipe.name << ": fetched " << recipe.cache_key() << " into " << dir.string() << " in "
      << static_cast<int>(seconds) << " s\n";
  return artifacts(recipe, dir / "root");
}

PackageSource newest_pin(const Recipe& recipe) {
  require_package_recipe(recipe, "update");
  const auto& track = recipe.package.track;
  if (track.empty())
    throw InputError(recipe.file.string() +
                     ": [source] track: the recipe names no metapackage to follow "
                     "(e.g. track = \"linux-image-amd64\"); edit the pin by hand");
  const auto policy = apt_policy(track);
  if (!policy.candidate)
    throw Error(recipe.file.string() + ": [source] track: apt has no candidate for " + track);
  // "Depends: linux-image-6.1.0-57-amd64 (= 6.1.192-3)"
  const auto show = run_checked({"apt-cache", "show", "--no-all-versions", track + "=" + *policy.candidate});
  const std::regex dep(R"((linux-image-[A-Za-z0-9.+~-]+)\s*\(=\s*([^)\s]+)\))");
  std::smatch m;
  std::istringstream in(show);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Depends:", 0) != 0 || !std::regex_search(line, m, dep)) continue;
    PackageSource pin = recipe.package;
    pin.package = m[1];
    pin.version = m[2];
    pin.release = pin.package.substr(std::string("linux-image-").size());
    return pin;
  }
  throw Error("apt-cache show " + track + "=" + *policy.candidate +
              ": no `Depends: linux-image-... (= VERSION)` line to follow");
}

}  // namespace schedlab::kernels
