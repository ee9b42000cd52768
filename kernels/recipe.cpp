#include "kernels/recipe.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;

// Where in the file a node is, for errors: "x.toml:7".
std::string where(const fs::path& file, const toml::node& node) {
  const auto& src = node.source();
  return file.string() + (src.begin.line ? ":" + std::to_string(src.begin.line) : "");
}

class Reader {
 public:
  Reader(fs::path file, const toml::table& root) : file_(std::move(file)), root_(root) {}

  const toml::table* table(const std::string& name) const {
    const toml::node* n = root_.get(name);
    if (!n) return nullptr;
    if (!n->is_table()) fail(*n, "[" + name + "]", "expected a table");
    return n->as_table();
  }

  std::optional<std::string> string(const std::string& tname, const std::string& key) const {
    const auto* t = table(tname);
    const toml::node* n = t ? t->get(key) : nullptr;
    if (!n) return std::nullopt;
    if (!n->is_string()) fail(*n, "[" + tname + "] " + key, "expected a string");
    return n->as_string()->get();
  }

  std::string required_string(const std::string& tname, const std::string& key) const {
    auto v = string(tname, key);
    if (!v || v->empty()) {
      const auto* t = table(tname);
      throw InputError((t ? where(file_, *t) : file_.string()) + ": [" + tname + "]: missing key '" + key +
                       "'");
    }
    return *v;
  }

  std::optional<std::vector<std::string>> strings(const std::string& tname, const std::string& key) const {
    const auto* t = table(tname);
    const toml::node* n = t ? t->get(key) : nullptr;
    if (!n) return std::nullopt;
    const std::string what = "[" + tname + "] " + key;
    if (!n->is_array()) fail(*n, what, "expected an array of strings");
    std::vector<std::string> out;
    for (const auto& e : *n->as_array()) {
      if (!e.is_string()) fail(e, what, "expected an array of strings");
      out.push_back(e.as_string()->get());
    }
    return out;
  }

  std::optional<bool> boolean(const std::string& tname, const std::string& key) const {
    const auto* t = table(tname);
    const toml::node* n = t ? t->get(key) : nullptr;
    if (!n) return std::nullopt;
    if (!n->is_boolean()) fail(*n, "[" + tname + "] " + key, "expected true or false");
    return n->as_boolean()->get();
  }

  [[noreturn]] void fail(const toml::node& n, const std::string& key, const std::string& why) const {
    throw InputError(where(file_, n) + ": " + key + ": " + why);
  }

  // Keys the recipe format does not know are errors: a typo must not silently drop a setting.
  void check_keys(const std::map<std::string, std::set<std::string>>& known) const {
    for (const auto& [k, v] : root_) {
      const std::string key(k.str());
      if (key == "base") continue;
      auto it = known.find(key);
      if (it == known.end()) fail(v, key, "unknown table (known: kernel, source, boot, config, scheduler)");
      if (!v.is_table()) fail(v, "[" + key + "]", "expected a table");
      if (key == "scheduler" && v.as_table()->get("tunables")) {
        const auto* tun = v.as_table()->get("tunables");
        if (!tun->is_table()) fail(*tun, "[scheduler] tunables", "expected a table of NAME = \"VALUE\"");
      }
      for (const auto& [k2, v2] : *v.as_table()) {
        std::string sub(k2.str());
        if (!it->second.count(sub)) {
          std::string list;
          for (const auto& s : it->second) list += (list.empty() ? "" : ", ") + s;
          fail(v2, "[" + key + "] " + sub, "unknown key (known: " + list + ")");
        }
      }
    }
  }

  const fs::path& file() const { return file_; }
  const toml::table& root() const { return root_; }

 private:
  fs::path file_;
  const toml::table& root_;
};

const std::map<std::string, std::set<std::string>> kKnownKeys = {
    {"kernel", {"label", "description"}},
    {"source",
     {"type", "package", "version", "release", "track", "base_config", "base_config_file", "config_fragment",
      "patches", "modules", "repository", "ref", "path", "config", "allow_dirty", "kernel", "system_map",
      "vmlinux", "deb"}},
    {"boot", {"cmdline", "modules"}},
    {"config", {"require"}},
    {"scheduler", {"features", "tunables"}},
};

toml::table parse(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file.string() + ": cannot read recipe");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return toml::parse(text.str(), file.string());
  } catch (const toml::parse_error& e) {
    throw InputError(file.string() + ":" + std::to_string(e.source().begin.line) + ": " +
                     std::string(e.description()));
  }
}

ConfigRequirement parse_requirement(const Reader& r, const std::string& text, const toml::node& node) {
  ConfigRequirement req;
  auto eq = text.find('=');
  req.option = text.substr(0, eq);
  if (req.option.rfind("CONFIG_", 0) == 0) req.option = req.option.substr(7);
  if (req.option.empty() ||
      req.option.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
    r.fail(node, "[config] require",
           "'" + text + "' is not a config option (e.g. \"SCHEDSTATS\" or \"NET_9P=y|m\")");
  if (eq == std::string::npos) {
    req.allowed = {"y"};
  } else {
    std::istringstream values(text.substr(eq + 1));
    for (std::string v; std::getline(values, v, '|');)
      if (!v.empty()) req.allowed.push_back(v);
    if (req.allowed.empty()) r.fail(node, "[config] require", "'" + text + "' names no value");
  }
  return req;
}

// Each source type has its own keys; one that belongs to another type is a mistake worth naming (a
// `ref` in a tree recipe would otherwise be ignored and the working tree built).
void check_keys_of_type(const Reader& r, const std::string& type) {
  static const std::map<std::string, std::set<std::string>> kKeysOf = {
      {"package", {"type", "package", "version", "release", "track"}},
      {"source",
       {"type", "package", "version", "base_config", "base_config_file", "config_fragment", "patches",
        "modules"}},
      {"git",
       {"type", "repository", "ref", "config", "base_config", "base_config_file", "config_fragment",
        "modules"}},
      {"tree",
       {"type", "path", "allow_dirty", "config", "base_config", "base_config_file", "config_fragment",
        "modules"}},
      {"image", {"type", "kernel", "system_map", "vmlinux", "config", "modules", "deb"}},
  };
  const auto it = kKeysOf.find(type);
  if (it == kKeysOf.end()) return;  // the unknown type is reported with the types it could be
  for (const auto& [k, node] : *r.table("source")) {
    const std::string key(k.str());
    if (it->second.count(key)) continue;
    std::string list;
    for (const auto& known : it->second) list += (list.empty() ? "" : ", ") + known;
    std::string hint;
    if (key == "patches") hint = " (commit the change in the repository, or use a source recipe)";
    if (key == "ref") hint = " (a tree recipe builds the directory as it is; a git recipe builds a ref)";
    if (key == "allow_dirty") hint = " (a git recipe builds a commit, never the working tree)";
    r.fail(node, "[source] " + key, "not a key of a " + type + " recipe (its keys: " + list + ")" + hint);
  }
}

// The config of a compiled kind: base_config (a recipe), base_config_file, or for git and tree
// `config` ("defconfig", or "tree": its own .config), exactly one; then the fragment and modules.
void read_build_config(const Reader& r, Recipe& out, const fs::path& dir, bool config_target_allowed) {
  const auto* t = r.table("source");
  if (auto v = r.string("source", "config")) {
    if (!config_target_allowed)
      r.fail(*t->get("config"), "[source] config",
             "a source recipe starts from base_config or base_config_file");
    const bool tree = out.kind == SourceKind::kTree;
    if (*v != "defconfig" && !(tree && *v == "tree"))
      r.fail(*t->get("config"), "[source] config",
             "'" + *v + "': expected \"defconfig\"" + (tree ? " or \"tree\" (the tree's own .config)" : "") +
                 ", or name base_config / base_config_file instead");
    out.user.config = *v;
    out.source.base_config.clear();
    out.source.base_config_file.clear();
  }
  if (auto v = r.string("source", "base_config")) {
    out.source.base_config = *v;
    out.source.base_config_file.clear();
    out.user.config.clear();
  }
  if (auto f = r.string("source", "base_config_file")) {
    out.source.base_config_file = dir / *f;
    out.source.base_config.clear();
    out.user.config.clear();
    if (r.string("source", "base_config"))
      r.fail(*r.table("source")->get("base_config_file"), "[source] base_config_file",
             "name either base_config (a recipe) or base_config_file, not both");
    if (!fs::exists(out.source.base_config_file))
      r.fail(*r.table("source")->get("base_config_file"), "[source] base_config_file",
             out.source.base_config_file.string() + ": no such file");
  }
  if (out.user.config.empty() && out.source.base_config.empty() && out.source.base_config_file.empty())
    (void)r.required_string("source", "base_config");  // the error naming the key
  int named = 0;
  for (const char* key : {"config", "base_config", "base_config_file"}) named += t->get(key) ? 1 : 0;
  if (named > 1)
    throw InputError(where(r.file(), *t) +
                     ": [source]: name one of config, base_config and base_config_file");
  if (auto f = r.string("source", "config_fragment")) {
    out.source.config_fragment = f->empty() ? fs::path() : dir / *f;  // "" drops an inherited one
    if (!f->empty() && !fs::exists(out.source.config_fragment))
      r.fail(*r.table("source")->get("config_fragment"), "[source] config_fragment",
             out.source.config_fragment.string() + ": no such file");
  }
  if (auto m = r.boolean("source", "modules")) out.source.loadable_modules = *m;
}

// A path in a recipe: absolute as written, else relative to the recipe's directory; `~/` is $HOME.
fs::path absolute_beside(const fs::path& dir, const std::string& text) {
  if (text.rfind("~/", 0) == 0)
    if (const char* home = std::getenv("HOME")) return fs::path(home) / text.substr(2);
  return fs::absolute(dir / text).lexically_normal();
}

// Applies the tables of one file on top of `out` (a derived recipe starts from its base).
void apply(const Reader& r, Recipe& out) {
  r.check_keys(kKnownKeys);
  const fs::path dir = r.file().parent_path();
  if (auto v = r.string("kernel", "label")) out.label = *v;
  if (auto v = r.string("kernel", "description")) out.description = *v;
  if (r.table("source")) {
    // One rule for every key of a derived recipe: a key the file names replaces the inherited value
    // (a list as a whole: `patches` included), a key it leaves out is inherited. `type` defaults to
    // the base's, so a variant of a source recipe that names only `patches` stays a source build.
    const SourceKind inherited = out.kind;
    const bool has_base = !out.name.empty();
    auto type = r.string("source", "type").value_or(has_base ? kind_name(inherited) : "package");
    check_keys_of_type(r, type);
    auto keep_or = [&](const std::string& key, std::string& field) {
      if (auto v = r.string("source", key)) {
        // Package, version and release name files in the kernel cache and in /boot: one plain word each,
        // so a recipe from elsewhere cannot lead a write out of them.
        if (const auto why = why_not_a_file_name_word(*v); !why.empty())
          r.fail(*r.table("source")->get(key), "[source] " + key, "'" + *v + "' " + why);
        field = *v;
      }
      if (field.empty()) (void)r.required_string("source", key);  // the error naming the key
    };
    if (type == "package") {
      if (inherited != SourceKind::kPackage || !has_base) out.package = {};
      out.kind = SourceKind::kPackage;
      keep_or("package", out.package.package);
      keep_or("version", out.package.version);
      keep_or("release", out.package.release);
      if (auto v = r.string("source", "track")) out.package.track = *v;
    } else if (type == "source") {
      if (inherited != SourceKind::kSource || !has_base) out.source = {};
      out.kind = SourceKind::kSource;
      keep_or("package", out.source.package);
      keep_or("version", out.source.version);
      read_build_config(r, out, dir, /*config_target_allowed=*/false);
      if (auto list = r.strings("source", "patches")) {
        out.source.patches.clear();
        for (const auto& p : *list) out.source.patches.push_back(dir / p);
        for (const auto& p : out.source.patches)
          if (!fs::exists(p))
            r.fail(*r.table("source")->get("patches"), "[source] patches", p.string() + ": no such file");
      }
    } else if (type == "git" || type == "tree") {
      const SourceKind kind = type == "git" ? SourceKind::kGit : SourceKind::kTree;
      if (inherited != kind || !has_base) {
        out.source = {};
        out.user = {};
      }
      out.kind = kind;
      const std::string path_key = kind == SourceKind::kGit ? "repository" : "path";
      if (auto v = r.string("source", path_key)) out.user.path = absolute_beside(dir, *v);
      if (out.user.path.empty()) (void)r.required_string("source", path_key);
      if (!fs::is_directory(out.user.path))
        r.fail(*r.table("source")->get(path_key), "[source] " + path_key,
               out.user.path.string() + ": no such directory");
      if (kind == SourceKind::kGit) {
        if (auto v = r.string("source", "ref")) out.user.ref = *v;
        if (out.user.ref.empty()) (void)r.required_string("source", "ref");
      } else {
        if (auto v = r.boolean("source", "allow_dirty")) out.user.allow_dirty = *v;
      }
      read_build_config(r, out, dir, /*config_target_allowed=*/true);
    } else if (type == "image") {
      if (inherited != SourceKind::kImage || !has_base) out.image = {};
      out.kind = SourceKind::kImage;
      auto file_key = [&](const char* key, fs::path& field, bool directory) {
        auto v = r.string("source", key);
        if (!v) return;
        field = absolute_beside(dir, *v);
        const bool ok = directory ? fs::is_directory(field) : fs::is_regular_file(field);
        if (!ok)
          r.fail(*r.table("source")->get(key), std::string("[source] ") + key,
                 field.string() + (directory ? ": no such directory" : ": no such file"));
      };
      file_key("kernel", out.image.kernel, false);
      file_key("deb", out.image.deb, false);
      file_key("system_map", out.image.system_map, false);
      file_key("vmlinux", out.image.vmlinux, false);
      file_key("config", out.image.config, false);
      file_key("modules", out.image.modules, true);
      const auto* t = r.table("source");
      if (out.image.kernel.empty() == out.image.deb.empty())
        throw InputError(where(r.file(), *t) +
                         ": [source]: an image recipe names either kernel (a bzImage) or " +
                         "deb (a kernel package), exactly one");
      if (!out.image.deb.empty())
        for (const char* key : {"system_map", "vmlinux", "config", "modules"})
          if (const auto* n = t->get(key))
            r.fail(*n, std::string("[source] ") + key, "a deb brings its own; name it only with kernel");
      if (!out.image.kernel.empty() && out.image.config.empty())
        throw InputError(where(r.file(), *t) +
                         ": [source]: missing key 'config' (the image's .config: the suite checks [config] "
                         "require on it and the collector reads it)");
    } else {
      r.fail(*r.table("source")->get("type"), "[source] type",
             "'" + type + "': expected \"package\", \"source\", \"git\", \"tree\" or \"image\"");
    }
  }
  if (auto v = r.string("boot", "cmdline")) out.cmdline = *v;
  if (auto v = r.strings("boot", "modules")) out.extra_modules = *v;
  if (auto v = r.strings("config", "require")) {
    out.require.clear();
    const auto* arr = r.table("config")->get("require")->as_array();
    for (std::size_t i = 0; i < v->size(); ++i)
      out.require.push_back(parse_requirement(r, (*v)[i], *arr->get(i)));
  }
  if (auto v = r.strings("scheduler", "features")) out.sched_features = *v;
  if (const auto* s = r.table("scheduler"); s && s->get("tunables")) {
    out.sched_tunables.clear();
    for (const auto& [k, node] : *s->get("tunables")->as_table()) {
      const std::string name(k.str());
      if (name.find('/') != std::string::npos || name.find("..") != std::string::npos)
        r.fail(node, "[scheduler] tunables." + name, "a name under /sys/kernel/debug/sched/, without '/'");
      if (node.is_string())
        out.sched_tunables[name] = node.as_string()->get();
      else if (node.is_integer())
        out.sched_tunables[name] = std::to_string(node.as_integer()->get());
      else
        r.fail(node, "[scheduler] tunables." + name, "expected a string or an integer");
    }
  }
}

Recipe load(const fs::path& file, std::vector<fs::path>& seen) {
  if (std::find(seen.begin(), seen.end(), file) != seen.end())
    throw InputError(file.string() + ": base recipes form a cycle");
  seen.push_back(file);
  const toml::table root = parse(file);
  Reader r(file, root);
  Recipe out;
  if (const toml::node* base = root.get("base")) {
    if (!base->is_string()) r.fail(*base, "base", "expected a recipe name");
    const fs::path base_file = file.parent_path() / (base->as_string()->get() + ".toml");
    if (!fs::exists(base_file))
      r.fail(*base, "base", "no recipe '" + base->as_string()->get() + "' next to it");
    out = load(base_file, seen);
    out.chain.push_back(base_file);
  } else if (!r.table("source")) {
    throw InputError(file.string() + ": missing table [source] (and no `base` recipe to take it from)");
  }
  apply(r, out);
  out.name = file.stem().string();
  out.file = file;
  if (out.label.empty()) out.label = out.name;
  return out;
}

}  // namespace

const char* kind_name(SourceKind k) {
  switch (k) {
    case SourceKind::kPackage:
      return "package";
    case SourceKind::kSource:
      return "source";
    case SourceKind::kGit:
      return "git";
    case SourceKind::kTree:
      return "tree";
    case SourceKind::kImage:
      return "image";
  }
  return "package";
}

std::string Recipe::cache_key() const {
  if (kind == SourceKind::kPackage) return package.package + "_" + package.version;
  return source.package + "_" + source.version;
}

std::string Recipe::release() const {
  return kind == SourceKind::kPackage ? package.release : "";
}

Recipe load_recipe_file(const fs::path& file) {
  std::vector<fs::path> seen;
  return load(file, seen);
}

std::vector<Recipe> load_recipes(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".toml") files.push_back(e.path());
  if (ec) throw InputError(dir.string() + ": cannot list recipes: " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<Recipe> out;
  for (const auto& f : files) out.push_back(load_recipe_file(f));
  return out;
}

Recipe load_recipe(const fs::path& dir, const std::string& name) {
  const fs::path file = dir / (name + ".toml");
  if (name.find('/') != std::string::npos || !fs::exists(file)) {
    std::string known;
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".toml") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown kernel recipe '" + name + "' in " + dir.string() + " (known: " + known + ")");
  }
  return load_recipe_file(file);
}

void repin_recipe_file(const fs::path& file, const PackageSource& pin) {
  const toml::table root = parse(file);
  Reader r(file, root);
  const auto* source = r.table("source");
  if (!source) throw InputError(file.string() + ": has no [source] of its own to re-pin (it derives it)");
  auto text = read_text(file);
  if (!text) throw InputError(file.string() + ": cannot read recipe");
  std::vector<std::string> lines;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"package", pin.package},
                                   {"version", pin.version},
                                   {"release", pin.release}}) {
    const toml::node* n = source->get(key);
    if (!n) throw InputError(file.string() + ": [source]: missing key '" + key + "'");
    auto line_no = static_cast<std::size_t>(n->source().begin.line);
    if (line_no == 0 || line_no > lines.size())
      throw Error(where(file, *n) + ": cannot locate [source] " + key);
    std::string& line = lines[line_no - 1];
    const std::regex value_re("^(\\s*" + key + "\\s*=\\s*)\"[^\"]*\"");
    if (!std::regex_search(line, value_re))
      throw InputError(where(file, *n) + ": [source] " + key + ": write it as " + key +
                       " = \"...\" on one line so `update` can re-pin it");
    line = std::regex_replace(line, value_re, "$1\"" + value + "\"", std::regex_constants::format_first_only);
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  write_file_atomic(file, out, /*replace=*/true);
}

fs::path default_recipes_dir() {
  return SCHEDLAB_RECIPES_DIR;
}

}  // namespace schedlab::kernels
