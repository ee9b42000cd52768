#include "daemon/campaign/campaign.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <climits>
#include <random>
#include <set>

#include "collector/perf/pfm.hpp"
#include "collector/runner/memory_limit.hpp"
#include "collector/runner/runner.hpp"
#include "collector/runner/workload_user.hpp"
#include "collector/sysinfo/host_class.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/host_paths.hpp"
#include "core/topology.hpp"
#include "daemon/exporter/listen.hpp"
#include "experiment/experiment.hpp"
#include "kernels/recipe.hpp"
#include "runtime/configuration.hpp"
#include "workloads/common/task_setup.hpp"
#include "workloads/registry.hpp"

namespace schedlab {

bool on_running_kernel(const std::string& configuration) {
  return configuration == "running" || configuration.rfind("running:", 0) == 0;
}

std::string runtime_configuration_of(const std::string& configuration) {
  return configuration.rfind("running:", 0) == 0 ? configuration.substr(8) : std::string();
}

namespace {

namespace fs = std::filesystem;

const std::set<std::string> kCampaignKeys = {
    "name", "schedule", "store", "output", "configurations", "trials", "order", "seed", "events", "counters",
    "profile", "timeout_s", "settle_timeout_s", "kernel_cache", "recipes", "boot", "runtime_configurations",
    "memory_limit", "workload_user", "on_disk_full", "disk_full_retry",
    "host_label",  // this box's class on /metrics (collector/sysinfo/host_class.hpp)
    // a target campaign (CampaignTarget)
    "target_mde", "margin", "alpha", "max_trials", "budget", "pilot", "look_every"};
const std::set<std::string> kChangesKeys = {"detect", "confirm", "budget", "alpha", "min_effect"};
const std::set<std::string> kExporterKeys = {"listen", "pushgateway", "configurations_per_host", "host"};
const std::set<std::string> kWorkloadKeys = {"name", "id", "repetitions", "params"};

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Reads typed values and reports every problem as "FILE:LINE: KEY: why", the line being that of
// the offending value (or of its table when the key is missing).
class Reader {
 public:
  explicit Reader(fs::path file) : file_(std::move(file)) {}

  std::string where(const toml::node& node) const {
    const auto line = node.source().begin.line;
    return file_.string() + (line ? ":" + std::to_string(line) : "");
  }

  [[noreturn]] void fail(const toml::node& node, const std::string& key, const std::string& why) const {
    throw InputError(where(node) + ": " + key + ": " + why);
  }

  // Keys a table may hold; anything else is a typo that must not fall back to a default silently.
  void check_keys(const toml::table& t, const std::string& prefix, const std::set<std::string>& known) const {
    for (const auto& [k, v] : t) {
      const std::string key(k.str());
      if (!known.count(key)) fail(v, prefix + key, "unknown key (known: " + join(known) + ")");
    }
  }

  std::optional<std::string> string(const toml::table& t, const std::string& prefix,
                                    const std::string& key) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_string()) fail(*n, prefix + key, "expected a string");
    return n->as_string()->get();
  }

  std::string required_string(const toml::table& t, const std::string& prefix, const std::string& key) const {
    auto v = string(t, prefix, key);
    if (!v) fail(t, prefix + key, "missing");
    if (v->empty()) fail(*t.get(key), prefix + key, "must not be empty");
    return *v;
  }

  std::optional<std::int64_t> integer(const toml::table& t, const std::string& prefix, const std::string& key,
                                      std::int64_t min, std::int64_t max = INT_MAX) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_integer()) fail(*n, prefix + key, "expected an integer");
    const auto v = n->as_integer()->get();
    if (v < min)
      fail(*n, prefix + key, "must be at least " + std::to_string(min) + ", got " + std::to_string(v));
    if (v > max)
      fail(*n, prefix + key, "must be at most " + std::to_string(max) + ", got " + std::to_string(v));
    return v;
  }

  std::optional<bool> boolean(const toml::table& t, const std::string& prefix, const std::string& key) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_boolean()) fail(*n, prefix + key, "expected true or false");
    return n->as_boolean()->get();
  }

  // The strings and, for errors about one of them, its node.
  std::optional<std::vector<std::pair<std::string, const toml::node*>>> strings(
      const toml::table& t, const std::string& prefix, const std::string& key) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_array()) fail(*n, prefix + key, "expected an array of strings");
    std::vector<std::pair<std::string, const toml::node*>> out;
    for (const auto& e : *n->as_array()) {
      if (!e.is_string()) fail(e, prefix + key, "expected an array of strings");
      out.emplace_back(e.as_string()->get(), &e);
    }
    return out;
  }

 private:
  fs::path file_;
};

std::string read_bytes(const fs::path& file) {
  auto text = read_text(file);
  if (!text) throw InputError(file.string() + ": cannot read the campaign file");
  return *text;
}

toml::table parse_toml(const fs::path& file, const std::string& bytes) {
  try {
    return toml::parse(bytes, file.string());
  } catch (const toml::parse_error& e) {
    throw InputError(file.string() + ":" + std::to_string(e.source().begin.line) + ": " +
                     std::string(e.description()));
  }
}

// "sqlite:///ABSOLUTE/PATH" for one box, or a PostgreSQL URI (libpq's postgresql://...) for a lab's shared
// store; the URI's own faults (a bad parameter) are libpq's to name, when the daemon connects.
void check_store(const Reader& r, const toml::node& node, const std::string& url) {
  const std::string key = "[campaign] store";
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
    if (url.find_first_of(" \t\n") != std::string::npos)
      r.fail(node, key, "a PostgreSQL URI has no spaces (percent-encode them)");
    return;
  }
  if (url.rfind("sqlite://", 0) != 0)
    r.fail(node, key, "'" + url + "': expected sqlite:///ABSOLUTE/PATH or postgresql://...");
  const std::string path = url.substr(std::string("sqlite://").size());
  if (path.empty() || path.front() != '/' || path.back() == '/')
    r.fail(node, key, "'" + url + "': expected sqlite:///ABSOLUTE/PATH (three slashes, then a file)");
}

// Messages from parsers that name their subject ("WORKLOAD.KEY: ", "exporter listen "), where the
// error already names the key.
std::string without_prefix(const std::string& message, const std::string& prefix) {
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

// The daemon's own parser, so that `campaign check` accepts exactly the addresses the exporter takes.
void check_listen(const Reader& r, const toml::node& node, const std::string& listen) {
  if (listen.empty()) return;  // the exposer is off
  try {
    parse_listen(listen);
  } catch (const InputError& e) {
    r.fail(node, "[exporter] listen", without_prefix(e.what(), "exporter listen "));
  }
}

// A TOML scalar as `--param` would spell it.
std::optional<std::string> scalar_text(const toml::node& n) {
  if (n.is_string()) return n.as_string()->get();
  if (n.is_integer()) return std::to_string(n.as_integer()->get());
  if (n.is_floating_point()) return fmt::format("{}", n.as_floating_point()->get());
  if (n.is_boolean()) return n.as_boolean()->get() ? "true" : "false";
  return std::nullopt;
}

const ParamSpec* find_spec(const std::vector<ParamSpec>& specs, const std::string& key) {
  for (const auto& s : specs)
    if (s.key == key) return &s;
  return nullptr;
}

void read_params(const Reader& r, const toml::node& node, const Workload& workload, CampaignWorkload& out) {
  const std::string prefix = "[[workload]] params";
  if (!node.is_table()) r.fail(node, prefix, "expected a table, e.g. params = { threads = 2 }");
  const auto specs = workload.params();
  for (const auto& [k, v] : *node.as_table()) {
    const std::string key(k.str());
    const std::string what = prefix + "." + key;
    const ParamSpec* spec = find_spec(specs, key);
    if (!spec) {
      std::string known;
      for (const auto& s : specs) known += (known.empty() ? "" : ", ") + s.key;
      r.fail(v, what, "unknown parameter of " + workload.name() + " (known: " + known + ")");
    }
    std::vector<std::string> values;
    std::vector<const toml::node*> nodes;  // each value's own node: a sweep's bad element names its line
    if (v.is_array()) {
      for (const auto& e : *v.as_array()) {
        auto text = scalar_text(e);
        if (!text) r.fail(e, what, "a sweep lists plain values (numbers, strings, booleans)");
        values.push_back(*text);
        nodes.push_back(&e);
      }
      if (values.empty()) r.fail(v, what, "an empty list sweeps nothing");
    } else if (auto text = scalar_text(v)) {
      values.push_back(*text);
      nodes.push_back(&v);
    } else {
      r.fail(v, what, "expected a number, string, boolean or a list of them (a sweep)");
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto& value = values[i];
      if (value.find(',') != std::string::npos || (!value.empty() && value.front() == '['))
        r.fail(*nodes[i], what,
               "'" + value + "': a value must not contain ',' or start with '[' (a sweep is a TOML list)");
      try {
        parse_param_value(workload.name(), *spec, value);
      } catch (const InputError& e) {
        r.fail(*nodes[i], what, without_prefix(e.what(), workload.name() + "." + key + ": "));
      }
    }
    if (v.is_array()) {
      std::string list;
      for (const auto& value : values) list += (list.empty() ? "" : ",") + value;
      out.params[key] = "[" + list + "]";
    } else {
      out.params[key] = values.front();
    }
  }
}

// An id becomes part of step keys ("t1/running/ID") and bundle instance ids.
void check_id(const Reader& r, const toml::node& node, const std::string& id) {
  if (id.empty() || id.find_first_of("/ \t\n,=[]") != std::string::npos)
    r.fail(node, "[[workload]] id",
           "'" + id + "': use letters, digits, '-', '_' or '.' (no '/', ',', '=' or spaces)");
}

void read_workloads(const Reader& r, const toml::table& root, Campaign& c) {
  const toml::node* n = root.get("workload");
  if (!n) throw InputError(c.file.string() + ": no [[workload]]: the campaign has nothing to run");
  if (!n->is_array_of_tables()) r.fail(*n, "workload", "expected [[workload]] tables");
  std::map<std::string, int> ids;  // id -> line of its first use
  for (const auto& node : *n->as_array()) {
    const auto& t = *node.as_table();
    r.check_keys(t, "[[workload]] ", kWorkloadKeys);
    CampaignWorkload w;
    w.line = static_cast<int>(t.source().begin.line);
    w.workload = r.required_string(t, "[[workload]] ", "name");
    std::unique_ptr<Workload> workload;
    try {
      workload = make_workload(w.workload);
    } catch (const InputError& e) {
      r.fail(*t.get("name"), "[[workload]] name", e.what());
    }
    w.id = r.string(t, "[[workload]] ", "id").value_or(w.workload);
    check_id(r, t.get("id") ? *t.get("id") : static_cast<const toml::node&>(t), w.id);
    if (auto [it, fresh] = ids.emplace(w.id, w.line); !fresh)
      r.fail(t.get("id") ? *t.get("id") : static_cast<const toml::node&>(t), "[[workload]] id",
             "'" + w.id + "' is already used by the [[workload]] on line " + std::to_string(it->second) +
                 "; give each instance its own id");
    if (auto v = r.integer(t, "[[workload]] ", "repetitions", 1)) w.repetitions = static_cast<int>(*v);
    if (const toml::node* p = t.get("params")) read_params(r, *p, *workload, w);
    c.workloads.push_back(std::move(w));
  }
}

void read_exporter(const Reader& r, const toml::table& root, Campaign& c) {
  const toml::node* n = root.get("exporter");
  if (!n) return;
  if (!n->is_table()) r.fail(*n, "[exporter]", "expected a table");
  const auto& t = *n->as_table();
  const std::string p = "[exporter] ";
  r.check_keys(t, p, kExporterKeys);
  if (auto v = r.string(t, p, "listen")) {
    check_listen(r, *t.get("listen"), *v);
    c.exporter.listen = *v;
  }
  if (auto v = r.string(t, p, "pushgateway")) {
    if (!v->empty() && v->rfind("http://", 0) != 0 && v->rfind("https://", 0) != 0)
      r.fail(*t.get("pushgateway"), p + "pushgateway",
             "'" + *v + "': expected an http:// or https:// URL, or \"\"");
    c.exporter.pushgateway = *v;
  }
  if (auto v = r.integer(t, p, "configurations_per_host", 1))
    c.exporter.configurations_per_host = static_cast<int>(*v);
  if (auto v = r.string(t, p, "host")) c.exporter.host = *v;
}

std::optional<double> read_percent(const Reader& r, const toml::table& t, const std::string& p,
                                   const char* key);

// `budget`: a positive duration, "20m" or a number of seconds; `example` goes into the error.
std::optional<double> read_budget(const Reader& r, const toml::table& t, const std::string& p,
                                  const char* example) {
  const toml::node* v = t.get("budget");
  if (!v) return std::nullopt;
  double seconds = 0;
  if (v->is_number())
    seconds = v->is_integer() ? static_cast<double>(v->as_integer()->get()) : v->as_floating_point()->get();
  else if (v->is_string())
    try {
      seconds = parse_duration(v->as_string()->get(), "budget");
    } catch (const InputError& e) {
      r.fail(*v, p + "budget", e.what());
    }
  else
    r.fail(*v, p + "budget",
           fmt::format("expected a duration such as \"{}\" or a number of seconds", example));
  if (!(seconds > 0)) r.fail(*v, p + "budget", "must be a positive duration");
  return seconds;
}

void read_changes(const Reader& r, const toml::table& root, Campaign& c) {
  const toml::node* n = root.get("changes");
  if (!n) return;
  if (!n->is_table()) r.fail(*n, "[changes]", "expected a table");
  const auto& t = *n->as_table();
  const std::string p = "[changes] ";
  r.check_keys(t, p, kChangesKeys);
  if (auto v = r.boolean(t, p, "detect")) c.changes.detect = *v;
  if (auto v = r.boolean(t, p, "confirm")) c.changes.confirm = *v;
  if (auto seconds = read_budget(r, t, p, "3m")) c.changes.budget_s = *seconds;
  if (const toml::node* v = t.get("alpha")) {
    if (!v->is_number()) r.fail(*v, p + "alpha", "expected a number in (0, 1)");
    const double a =
        v->is_integer() ? static_cast<double>(v->as_integer()->get()) : v->as_floating_point()->get();
    if (!(a > 0 && a < 1)) r.fail(*v, p + "alpha", fmt::format("{}: expected a number in (0, 1)", a));
    c.changes.alpha = a;
  }
  if (auto v = read_percent(r, t, p, "min_effect")) {
    if (!(*v >= 0)) r.fail(*t.get("min_effect"), p + "min_effect", "must be 0% or more");
    c.changes.min_effect_pct = *v;
  }
  if (c.changes.confirm && !c.changes.detect && t.get("confirm"))
    r.fail(*t.get("confirm"), p + "confirm", "confirms change points: needs detect = true");
}

// A percentage: a number, or a string such as "3%".
std::optional<double> read_percent(const Reader& r, const toml::table& t, const std::string& p,
                                   const char* key) {
  const toml::node* v = t.get(key);
  if (!v) return std::nullopt;
  if (v->is_number())
    return v->is_integer() ? static_cast<double>(v->as_integer()->get()) : v->as_floating_point()->get();
  if (v->is_string()) {
    std::string text = v->as_string()->get();
    if (!text.empty() && text.back() == '%') text.pop_back();
    try {
      std::size_t used = 0;
      const double x = std::stod(text, &used);
      if (used == text.size()) return x;
    } catch (const std::exception&) {
    }
  }
  r.fail(*v, p + key, "expected a percentage such as 3 or \"3%\"");
}

void read_target(const Reader& r, const toml::table& t, const std::string& p, Campaign& c) {
  const auto mde = read_percent(r, t, p, "target_mde");
  if (!mde) {
    for (const char* key : {"margin", "alpha", "max_trials", "budget", "pilot", "look_every"})
      if (const toml::node* v = t.get(key))
        r.fail(*v, p + key, "plans a sequential comparison: give target_mde too");
    return;
  }
  const toml::node& at = *t.get("target_mde");
  if (!(*mde > 0) || *mde >= 100)
    r.fail(at, p + "target_mde", fmt::format("{:g}: expected a percentage above 0 and below 100", *mde));
  if (t.get("trials"))
    r.fail(
        *t.get("trials"), p + "trials",
        "a fixed number of trials contradicts target_mde, which plans the number (give max_trials as a cap)");
  if (c.order == CampaignOrder::kBlocked)
    r.fail(*t.get("order"), p + "order",
           "\"blocked\" contradicts target_mde: a sequential comparison looks after each pair, so its trials "
           "come in pairs");
  if (c.configurations.size() != 2)
    r.fail(t.get("configurations") ? *t.get("configurations") : at, p + "configurations",
           fmt::format("target_mde compares two configurations; {} given", c.configurations.size()));
  CampaignTarget target;
  target.mde_pct = *mde;
  if (auto m = read_percent(r, t, p, "margin")) {
    if (!(*m > 0))
      r.fail(*t.get("margin"), p + "margin", fmt::format("{:g}: must be a positive percentage", *m));
    if (*m > *mde)
      r.fail(*t.get("margin"), p + "margin",
             fmt::format("{:g}% is larger than target_mde {:g}%: a comparison sized to see {:g}% cannot "
                         "promise equivalence within {:g}%",
                         *m, *mde, *mde, *m));
    target.margin_pct = *m;
  }
  if (const toml::node* v = t.get("alpha")) {
    if (!v->is_number()) r.fail(*v, p + "alpha", "expected a number in (0, 0.5)");
    target.alpha =
        v->is_integer() ? static_cast<double>(v->as_integer()->get()) : v->as_floating_point()->get();
    if (!(target.alpha > 0 && target.alpha < 0.5))
      r.fail(*v, p + "alpha", fmt::format("{:g}: must lie in (0, 0.5)", target.alpha));
  }
  // Each pair costs two boots on a kernel comparison: a shorter pilot than `run --versus`'s 6.
  if (auto v = r.integer(t, p, "pilot", 3)) target.pilot = static_cast<int>(*v);
  if (auto v = r.integer(t, p, "look_every", 1)) target.look_every = static_cast<int>(*v);
  if (auto v = r.integer(t, p, "max_trials", 1)) {
    target.max_trials = static_cast<int>(*v);
    if (target.max_trials < target.pilot)
      r.fail(
          *t.get("max_trials"), p + "max_trials",
          fmt::format("{} is below the pilot's {} pairs, the first look", target.max_trials, target.pilot));
  }
  if (auto seconds = read_budget(r, t, p, "20m")) target.budget_s = *seconds;
  if (!target.max_trials && !target.budget_s)
    r.fail(at, p + "target_mde", "give max_trials, budget or both: they bound the comparison");
  c.trials = target.max_trials ? target.max_trials : kBudgetOnlyMaxTrials;
  c.target = target;
}

// The name of this box's class (its `class` label on /metrics), checked as the daemon will take it.
void read_host_label(const Reader& r, const toml::table& t, const std::string& p, Campaign& c) {
  auto v = r.string(t, p, "host_label");
  if (!v) return;
  const toml::node& node = *t.get("host_label");
  if (v->empty())
    r.fail(node, p + "host_label", "must not be empty (leave it out: the class is then the shape)");
  try {
    check_host_label(*v);
  } catch (const InputError& e) {
    r.fail(node, p + "host_label", e.what());
  }
  c.host_label = *v;
}

void read_campaign(const Reader& r, const toml::table& root, const fs::path& recipes_dir, Campaign& c) {
  const toml::node* n = root.get("campaign");
  if (!n) throw InputError(c.file.string() + ": missing table [campaign]");
  if (!n->is_table()) r.fail(*n, "[campaign]", "expected a table");
  const auto& t = *n->as_table();
  const std::string p = "[campaign] ";
  r.check_keys(t, p, kCampaignKeys);
  c.name = r.required_string(t, p, "name");
  const auto schedule = r.required_string(t, p, "schedule");
  if (schedule != "once") {
    try {
      c.schedule = parse_calendar(schedule);
    } catch (const InputError& e) {
      r.fail(*t.get("schedule"), p + "schedule", e.what());
    }
  }
  c.store_url = r.required_string(t, p, "store");
  check_store(r, *t.get("store"), c.store_url);
  c.output = r.required_string(t, p, "output");
  if (!c.output.is_absolute())
    r.fail(*t.get("output"), p + "output", "'" + c.output.string() + "': expected an absolute directory");
  if (auto v = r.string(t, p, "kernel_cache")) {
    c.kernel_cache = *v;
    if (!c.kernel_cache.is_absolute())
      r.fail(*t.get("kernel_cache"), p + "kernel_cache",
             "'" + *v + "': expected an absolute directory (`schedlab kernel --cache-dir`)");
  }
  // The developer's own recipes (`kernel build --git` writes them outside the suite's tree): the
  // configurations are looked up there, and each step's `kernel boot` is given it.
  fs::path recipes = recipes_dir;
  if (auto v = r.string(t, p, "recipes")) {
    c.recipes = *v;
    if (!c.recipes.is_absolute())
      r.fail(*t.get("recipes"), p + "recipes",
             "'" + *v + "': expected an absolute directory (`schedlab kernel --recipes`)");
    if (!fs::is_directory(c.recipes))
      r.fail(*t.get("recipes"), p + "recipes", "'" + *v + "': no such directory");
    recipes = c.recipes;
  }
  if (auto v = r.string(t, p, "boot")) {
    if (*v != "qemu" && *v != "kexec" && *v != "grub")
      r.fail(*t.get("boot"), p + "boot", "'" + *v + "': expected \"qemu\", \"kexec\" or \"grub\"");
    c.boot = *v;
  }
  std::vector<runtime::RuntimeConfiguration> runtime_defined;
  if (auto v = r.string(t, p, "runtime_configurations")) {
    c.runtime_configurations = fs::path(*v).is_absolute() ? fs::path(*v) : c.file.parent_path() / *v;
    try {
      runtime_defined = runtime::load_configurations(c.runtime_configurations);
    } catch (const InputError& e) {
      r.fail(*t.get("runtime_configurations"), p + "runtime_configurations", e.what());
    }
  }
  if (auto configs = r.strings(t, p, "configurations")) {
    if (configs->empty()) r.fail(*t.get("configurations"), p + "configurations", "names no configuration");
    c.configurations.clear();
    std::set<std::string> seen;
    for (const auto& [name, node] : *configs) {
      if (!seen.insert(name).second) r.fail(*node, p + "configurations", "'" + name + "' is listed twice");
      if (const auto rc = runtime_configuration_of(name); !rc.empty()) {
        try {
          (void)runtime::resolve_configuration(rc, runtime_defined);
        } catch (const InputError& e) {
          r.fail(*node, p + "configurations", e.what());
        }
      } else if (name != "running") {
        kernels::Recipe recipe;
        try {
          recipe = kernels::load_recipe(recipes, name);
        } catch (const InputError& e) {
          r.fail(*node, p + "configurations", e.what());
        }
        if (c.boot != "qemu" && recipe.kind != kernels::SourceKind::kPackage)
          r.fail(*node, p + "configurations",
                 "'" + name + "' is " + (recipe.kind == kernels::SourceKind::kImage ? "an " : "a ") +
                     kernels::kind_name(recipe.kind) + " recipe; boot = \"" + c.boot +
                     "\" boots package recipes (install the built kernel as a package first)");
      }
      c.configurations.push_back(name);
    }
    const bool any_running = std::any_of(c.configurations.begin(), c.configurations.end(), on_running_kernel);
    const bool any_recipe = !std::all_of(c.configurations.begin(), c.configurations.end(), on_running_kernel);
    if (c.boot != "qemu" && any_running && any_recipe)
      r.fail(*t.get("configurations"), p + "configurations",
             "'running' cannot be mixed with recipes when boot = \"" + c.boot +
                 "\": after the first reboot the running kernel is a recipe's");
  }
  if (auto v = r.integer(t, p, "trials", 1)) c.trials = static_cast<int>(*v);
  if (auto v = r.string(t, p, "order")) {
    if (*v == "interleaved")
      c.order = CampaignOrder::kInterleaved;
    else if (*v == "blocked")
      c.order = CampaignOrder::kBlocked;
    else
      r.fail(*t.get("order"), p + "order", "'" + *v + "': expected \"interleaved\" or \"blocked\"");
  }
  if (auto v = r.integer(t, p, "seed", 0, INT64_MAX)) c.seed = static_cast<std::uint64_t>(*v);
  if (auto v = r.boolean(t, p, "counters")) c.counters = *v;
  if (auto v = r.boolean(t, p, "profile")) c.profile = *v;
  if (auto events = r.strings(t, p, "events")) {
    if (!c.counters) r.fail(*t.get("events"), p + "events", "contradicts counters = false");
    for (const auto& [name, node] : *events) {
      const auto encoded = encode_event(name);
      if (encoded.unknown)
        r.fail(*node, p + "events", "'" + name + "': unknown event (see `schedlab events`)");
      if (encoded.rejected) r.fail(*node, p + "events", encoded.reason + " (see `schedlab events`)");
      c.events.push_back(name);
    }
  }
  // A number of seconds, integer or float: positive, or also 0 where `zero_ok`.
  auto seconds = [&](const char* key, double& out, bool zero_ok) {
    const toml::node* v = t.get(key);
    if (!v) return;
    if (!v->is_number()) r.fail(*v, p + key, "expected a number of seconds");
    out = v->is_integer() ? static_cast<double>(v->as_integer()->get()) : v->as_floating_point()->get();
    if (zero_ok ? !(out >= 0) : !(out > 0))
      r.fail(*v, p + key, zero_ok ? "must be 0 or more seconds" : "must be a positive number of seconds");
  };
  seconds("timeout_s", c.timeout_s, false);
  seconds("settle_timeout_s", c.settle_timeout_s, true);
  if (auto v = r.string(t, p, "workload_user")) {
    if (*v != "root") {
      try {
        resolve_workload_user(*v, "no user");
      } catch (const InputError&) {
        r.fail(*t.get("workload_user"), p + "workload_user", "no user '" + *v + "' on this machine");
      }
    }
    c.workload_user = *v;
  }
  if (auto v = r.string(t, p, "memory_limit")) {
    try {
      c.memory_limit_bytes = parse_memory_size(*v, "");
    } catch (const InputError& e) {
      r.fail(*t.get("memory_limit"), p + "memory_limit", e.what());
    }
  }
  if (auto v = r.string(t, p, "on_disk_full")) {
    if (*v == "wait")
      c.on_disk_full = OnDiskFull::kWait;
    else if (*v == "stop")
      c.on_disk_full = OnDiskFull::kStop;
    else
      r.fail(*t.get("on_disk_full"), p + "on_disk_full", "'" + *v + "': expected \"wait\" or \"stop\"");
  }
  if (const toml::node* v = t.get("disk_full_retry")) {
    if (v->is_number())
      c.disk_full_retry_s =
          v->is_integer() ? static_cast<double>(v->as_integer()->get()) : v->as_floating_point()->get();
    else if (v->is_string())
      try {
        c.disk_full_retry_s = parse_duration(v->as_string()->get(), "disk_full_retry");
      } catch (const InputError& e) {
        r.fail(*v, p + "disk_full_retry", e.what());
      }
    else
      r.fail(*v, p + "disk_full_retry", "expected a duration such as \"60s\" or a number of seconds");
    if (!(c.disk_full_retry_s > 0)) r.fail(*v, p + "disk_full_retry", "must be a positive duration");
    if (c.on_disk_full == OnDiskFull::kStop)
      r.fail(*v, p + "disk_full_retry", "retries only while waiting: contradicts on_disk_full = \"stop\"");
  }
  read_host_label(r, t, p, c);
  read_target(r, t, p, c);
}

// splitmix64's finaliser: spreads (seed, trial) over the whole generator state.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

Campaign load_campaign(const fs::path& file) {
  return load_campaign(file, kernels::default_recipes_dir());
}

Campaign load_campaign(const fs::path& file, const fs::path& recipes_dir) {
  const std::string bytes = read_bytes(file);
  const toml::table root = parse_toml(file, bytes);
  Reader r(file);
  Campaign c;
  c.file = file;
  c.content_hash = hex64(fnv1a64(bytes));
  r.check_keys(root, "", {"campaign", "changes", "exporter", "workload"});
  read_campaign(r, root, recipes_dir, c);
  read_exporter(r, root, c);
  read_changes(r, root, c);
  read_workloads(r, root, c);
  return c;
}

void check_on_host(const Campaign& c, const HostPaths& paths, const fs::path& cache_dir) {
  WorkloadContext ctx;
  ctx.cache_dir = cache_dir;
  ctx.topology = read_topology(paths);
  ctx.allowed_cpus = current_affinity();
  for (const auto& w : c.workloads) {
    const std::string where =
        c.file.string() + ":" + std::to_string(w.line) + ": [[workload]] " + w.id + ": ";
    try {
      for (const auto& in : expand_sweeps(with_default_sweeps({{w.id, w.workload, w.params}}))) {
        const auto workload = make_workload(in.workload);
        workload->validate(resolve_params(in.workload, workload->params(), in.params), ctx);
      }
    } catch (const InputError& e) {
      throw InputError(where + e.what());
    }
  }
}

std::vector<CampaignStep> expand_plan(const Campaign& c) {
  struct PlannedInstance {
    InstancePlan plan;
    int repetitions;
  };
  std::vector<PlannedInstance> instances;
  for (const auto& w : c.workloads)
    for (auto& ip : expand_sweeps(with_default_sweeps({{w.id, w.workload, w.params}})))
      instances.push_back({std::move(ip), w.repetitions});

  std::vector<std::pair<int, std::string>> blocks;  // (trial, configuration) in run order
  if (c.target) {
    for (int t = 1; t <= c.trials; ++t) {
      const bool b_first = pair_b_first(c, t);
      blocks.emplace_back(t, c.configurations[b_first ? 1 : 0]);
      blocks.emplace_back(t, c.configurations[b_first ? 0 : 1]);
    }
  } else if (c.order == CampaignOrder::kInterleaved) {
    for (int t = 1; t <= c.trials; ++t)
      for (const auto& conf : c.configurations) blocks.emplace_back(t, conf);
  } else {
    for (const auto& conf : c.configurations)
      for (int t = 1; t <= c.trials; ++t) blocks.emplace_back(t, conf);
  }

  std::vector<CampaignStep> plan;
  for (const auto& [trial, conf] : blocks) {
    // The same order for every configuration of a trial: paired trials then differ only in the kernel.
    const auto order = shuffled_order(instances.size(), mix(c.seed ^ mix(static_cast<std::uint64_t>(trial))));
    for (std::size_t i : order) {
      const auto& in = instances[i];
      CampaignStep s;
      s.index = static_cast<int>(plan.size());
      s.configuration = conf;
      s.trial = trial;
      s.instance_id = in.plan.id;
      s.key = "t" + std::to_string(trial) + "/" + conf + "/" + in.plan.id;
      s.workload = in.plan.workload;
      s.params = in.plan.params;
      s.repetitions = in.repetitions;
      s.seed = mix(c.seed ^ fnv1a64(s.key));
      plan.push_back(std::move(s));
    }
  }
  return plan;
}

std::string file_safe_name(const std::string& name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '=' || c == '-') ? c : '_';
  if (!out.empty() && out.front() == '.') out.front() = '_';  // no ".", "..", or hidden name
  return out;
}

fs::path campaign_runs_directory(const Campaign& c) {
  return c.output / file_safe_name(c.name);
}

bool pair_b_first(const Campaign& c, int trial) {
  return (mix(c.seed ^ 0x0a0bULL ^ mix(static_cast<std::uint64_t>(trial))) & 1) != 0;
}

PlanTotals plan_totals(const std::vector<CampaignStep>& plan) {
  PlanTotals t;
  for (const auto& s : plan) {
    ++t.steps;
    t.repetitions += s.repetitions;
    // Each step boots its own kernel: a fresh guest under qemu, a reboot of the box under kexec/grub.
    if (!on_running_kernel(s.configuration)) ++t.boots;
  }
  return t;
}

std::string step_estimate_key(const CampaignStep& step) {
  const auto workload = make_workload(step.workload);
  return step.workload + "/" + canonical_hash(resolve_params(step.workload, workload->params(), step.params));
}

PlanEstimate estimate_duration(const std::vector<CampaignStep>& plan,
                               const std::map<std::string, double>& seconds_per_repetition) {
  PlanEstimate e;
  double total = 0;
  for (const auto& s : plan) {
    auto it = seconds_per_repetition.find(step_estimate_key(s));
    if (it == seconds_per_repetition.end()) {
      ++e.steps_unknown;
      continue;
    }
    ++e.steps_known;
    total += it->second * (s.repetitions + 1);
  }
  if (e.steps_unknown == 0 && e.steps_known > 0) e.seconds = total;
  return e;
}

}  // namespace schedlab
