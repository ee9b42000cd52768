#include "kernels/ref_recipes.hpp"

#include <toml++/toml.h>

#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "kernels/process.hpp"
#include "kernels/recipe.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;

std::string resolve(const fs::path& repo, const std::string& ref) {
  ProcessOptions o;
  o.merge_stderr = true;
  const auto res = run_process(
      {"git", "-C", repo.string(), "rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}"},
      o);
  if (res.exit_code != 0)
    throw InputError("--ref " + ref + ": does not resolve to a commit in " + repo.string() +
                     (trim(res.output).empty() ? "" : ": " + trim(res.output)));
  return trim(res.output);
}

// The [config] require of the suite's source recipes: what the qemu backend and the collector use.
toml::array requirements() {
  toml::array a;
  for (const char* o :
       {"SCHEDSTATS", "DEBUG_FS", "PERF_EVENTS", "KALLSYMS_ALL", "PROC_FS", "CGROUP_SCHED", "BLK_DEV_INITRD",
        "DEVTMPFS", "SERIAL_8250_CONSOLE", "VIRTIO_PCI=y|m", "NET_9P=y|m", "NET_9P_VIRTIO=y|m", "9P_FS=y|m"})
    a.push_back(o);
  return a;
}

}  // namespace

std::string ref_name_part(const std::string& ref) {
  std::string out;
  for (const char c : ref) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (keep)
      out += c;
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && (out.back() == '-' || out.back() == '.')) out.pop_back();
  return out.empty() ? "ref" : out;
}

std::vector<RefRecipe> write_ref_recipes(const RefRecipesRequest& q) {
  if (q.refs.empty()) throw InputError("--git needs at least one --ref");
  std::error_code ec;
  const fs::path repo = fs::canonical(q.repository, ec);
  if (ec) throw InputError("--git " + q.repository.string() + ": " + ec.message());
  const std::string prefix = q.prefix.empty() ? ref_name_part(repo.filename().string()) : q.prefix;
  std::vector<RefRecipe> out;
  for (const auto& ref : q.refs) {
    RefRecipe r;
    r.commit = resolve(repo, ref);
    r.name = prefix + "-" + ref_name_part(ref);
    for (const auto& other : out)
      if (other.name == r.name)
        throw InputError("--ref " + ref + ": gives the recipe name " + r.name + " twice");
    r.file = q.out_dir / (r.name + ".toml");
    out.push_back(r);
  }

  toml::table source{{"type", "git"}, {"repository", repo.string()}, {"modules", false}};
  fs::path fragment = q.fragment;
  if (q.config == "defconfig") {
    source.insert("config", "defconfig");
    if (fragment.empty()) fragment = q.builtin_recipes / "fragments/schedlab-defconfig-guest.config";
  } else if (fs::is_regular_file(q.config)) {
    source.insert("base_config_file", fs::absolute(q.config).string());
    if (fragment.empty()) fragment = q.builtin_recipes / "fragments/schedlab-build-builtin.config";
  } else {
    (void)load_recipe(fs::exists(q.out_dir / (q.config + ".toml")) ? q.out_dir : q.builtin_recipes, q.config);
    source.insert("base_config", q.config);
    if (fragment.empty()) fragment = q.builtin_recipes / "fragments/schedlab-build-builtin.config";
  }
  if (!fs::is_regular_file(fragment)) throw InputError("--fragment " + fragment.string() + ": no such file");
  source.insert("config_fragment", fs::absolute(fragment).string());

  fs::create_directories(q.out_dir);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto& ref = q.refs[i];
    toml::table s = source;
    s.insert("ref", ref);
    toml::table root{
        {"kernel", toml::table{{"label", prefix + "@" + ref}, {"description", repo.string() + " at " + ref}}},
        {"source", s},
        {"boot", toml::table{{"cmdline", "loglevel=5"}}},
        {"config", toml::table{{"require", requirements()}}},
    };
    std::ostringstream text;
    text << "# Written by `schedlab kernel build --git " << repo.string() << "`: " << ref
         << " is resolved each time the recipe is built (now " << out[i].commit << ").\n"
         << root << "\n";
    if (const auto existing = read_text(out[i].file); existing && *existing != text.str()) {
      // The same recipe but for the commit in the comment is ours to refresh; anything else is not.
      const auto body = [](const std::string& t) { return t.substr(t.find('\n') + 1); };
      if (body(*existing) != body(text.str()))
        throw InputError(out[i].file.string() +
                         ": a different recipe of that name exists; remove it or pass "
                         "--name to write these under another prefix");
    }
    write_file_atomic(out[i].file, text.str(), /*replace=*/true);
  }
  return out;
}

CommitsBetween commits_between(const fs::path& repo, const std::string& from, const std::string& to,
                               std::size_t cap) {
  CommitsBetween c;
  ProcessOptions o;
  o.merge_stderr = false;
  const auto range = from + ".." + to;
  c.count = std::stol(trim(run_checked({"git", "-C", repo.string(), "rev-list", "--count", range}, o)));
  std::istringstream lines(run_checked(
      {"git", "-C", repo.string(), "log", "--oneline", "--no-decorate", "-n", std::to_string(cap), range},
      o));
  for (std::string line; std::getline(lines, line);) c.lines.push_back(line);
  return c;
}

}  // namespace schedlab::kernels
