#include "runtime/configuration.hpp"

#include <toml++/toml.h>

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/host_paths.hpp"

namespace schedlab::runtime {
namespace {

// Names become directory names and diff side names: no '/', no spaces, nothing a shell would mangle.
void check_name(const std::string& name, const std::string& where) {
  if (name.empty() || name.size() > 64 || name == "." || name == ".." ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:+-") !=
          std::string::npos)
    throw InputError(where + ": configuration name '" + name +
                     "': use letters, digits and . _ : + - (at most 64)");
}

void check_scheduler(const std::string& s, const std::string& where) {
  if (s.empty() || s == "eevdf" || s == "cfs") return;
  if (s.rfind("scx:", 0) == 0 && s.size() > 4 &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_", 4) == std::string::npos)
    return;
  throw InputError(where + ": scheduler '" + s + "': expected \"eevdf\", \"cfs\" or \"scx:NAME\"");
}

void check_feature(const std::string& f, const std::string& where) {
  if (f.empty() || f.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
    throw InputError(where + ": sched feature '" + f + "': expected NAME or NO_NAME in capitals");
}

void check_tunable(const std::string& t, const std::string& where) {
  if (t.empty() || t.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
    throw InputError(where + ": tunable '" + t + "': expected a file name under /sys/kernel/debug/sched");
}

// Scheduler sysctls only: a configuration is about the scheduler, and a typo must not write elsewhere.
void check_sysctl(const std::string& s, const std::string& where) {
  if (s.rfind("kernel.sched_", 0) != 0 && s != "kernel.numa_balancing" && s != "kernel.timer_migration")
    throw InputError(
        where + ": sysctl '" + s +
        "': only scheduler sysctls (kernel.sched_*, kernel.numa_balancing, kernel.timer_migration)");
  if (s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.") != std::string::npos ||
      s.find("..") != std::string::npos)
    throw InputError(where + ": sysctl '" + s + "': not a sysctl name");
}

long parse_long(const std::string& text, const std::string& where) {
  long v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size())
    throw InputError(where + ": '" + text + "': expected a whole number");
  return v;
}

long check_weight(long w, const std::string& where) {
  if (w < 1 || w > 10000)
    throw InputError(where + ": cpu_weight " + std::to_string(w) + ": expected 1..10000");
  return w;
}

std::string scalar_text(const toml::node& n) {
  if (auto s = n.value<std::string>()) return *s;
  if (auto i = n.value<std::int64_t>()) return std::to_string(*i);
  if (auto b = n.value<bool>()) return *b ? "1" : "0";
  return {};
}

void finish(RuntimeConfiguration& c) {
  check_name(c.name, c.defined_at);
  if (c.scheduler.empty() && c.features.empty() && c.tunables.empty() && c.sysctls.empty() &&
      !c.needs_cgroup())
    c.scheduler = "";  // the machine as found: an A/A side
}

}  // namespace

nlohmann::json RuntimeConfiguration::to_json() const {
  nlohmann::json j = {{"name", name},
                      {"scheduler", scheduler.empty() ? nlohmann::json(nullptr) : nlohmann::json(scheduler)}};
  if (!features.empty()) j["features"] = features;
  if (!tunables.empty()) j["tunables"] = tunables;
  if (!sysctls.empty()) j["sysctls"] = sysctls;
  if (cpu_weight) j["cpu_weight"] = *cpu_weight;
  if (cpu_max)
    j["cpu_max"] = {
        {"quota_us", cpu_max->quota_us ? nlohmann::json(*cpu_max->quota_us) : nlohmann::json("max")},
        {"period_us", cpu_max->period_us}};
  return j;
}

std::string RuntimeConfiguration::to_spec() const {
  std::string spec = "name=" + name;
  if (!scheduler.empty()) spec += ",scheduler=" + scheduler;
  for (const auto& f : features) spec += ",feature=" + f;
  for (const auto& [k, v] : tunables) spec += ",tunable." + k + "=" + v;
  for (const auto& [k, v] : sysctls) spec += ",sysctl." + k + "=" + v;
  if (cpu_weight) spec += ",cpu.weight=" + std::to_string(*cpu_weight);
  if (cpu_max)
    spec += ",cpu.max=" + (cpu_max->quota_us ? std::to_string(*cpu_max->quota_us) : std::string("max")) +
            "/" + std::to_string(cpu_max->period_us);
  return spec;
}

RuntimeConfiguration configuration_from_json(const nlohmann::json& given, const std::string& where) {
  if (!given.is_object()) throw InputError(where + ": a runtime configuration is an object");
  auto text = [&](const nlohmann::json& v, const std::string& key) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number() || v.is_boolean()) return v.dump();
    throw InputError(where + ": " + key + ": expected a string or a number");
  };
  RuntimeConfiguration c;
  c.defined_at = where;
  c.name = given.contains("name") ? text(given["name"], "name") : std::string();
  if (given.contains("scheduler") && !given["scheduler"].is_null())
    c.scheduler = text(given["scheduler"], "scheduler");
  if (given.contains("features"))
    for (const auto& f : given["features"]) c.features.push_back(text(f, "features"));
  if (given.contains("tunables"))
    for (const auto& [k, v] : given["tunables"].items()) c.tunables[k] = text(v, "tunables." + k);
  if (given.contains("sysctls"))
    for (const auto& [k, v] : given["sysctls"].items()) c.sysctls[k] = text(v, "sysctls." + k);
  if (given.contains("cpu_weight")) c.cpu_weight = parse_long(text(given["cpu_weight"], "cpu_weight"), where);
  if (given.contains("cpu_max")) {
    const auto& m = given["cpu_max"];
    if (!m.is_object() || !m.contains("quota_us") || !m.contains("period_us"))
      throw InputError(where + ": cpu_max: expected {quota_us, period_us}");
    c.cpu_max = parse_cpu_max(
        text(m["quota_us"], "cpu_max.quota_us") + " " + text(m["period_us"], "cpu_max.period_us"), where);
  }
  return c;
}

CpuBandwidth parse_cpu_max(const std::string& text, const std::string& where) {
  std::string t = text;
  for (auto& c : t)
    if (c == '/') c = ' ';
  auto words = split_ws(t);
  if (words.empty() || words.size() > 2)
    throw InputError(where + ": cpu_max '" + text + "': expected \"QUOTA PERIOD\" (microseconds) or \"max\"");
  CpuBandwidth b;
  if (words[0] != "max") b.quota_us = parse_long(words[0], where + ": cpu_max quota");
  if (words.size() == 2) b.period_us = parse_long(words[1], where + ": cpu_max period");
  // The kernel's own limits (kernel/sched/core.c): period 1 ms..1 s, quota at least 1 ms.
  if (b.period_us < 1000 || b.period_us > 1000000)
    throw InputError(where + ": cpu_max period " + std::to_string(b.period_us) +
                     " us: the kernel takes 1000..1000000");
  if (b.quota_us && *b.quota_us < 1000)
    throw InputError(where + ": cpu_max quota " + std::to_string(*b.quota_us) +
                     " us: the kernel takes at least 1000");
  return b;
}

std::vector<RuntimeConfiguration> load_configurations(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file.string() + ": cannot read the configurations file");
  std::stringstream text;
  text << in.rdbuf();
  toml::table root;
  try {
    root = toml::parse(text.str(), file.string());
  } catch (const toml::parse_error& e) {
    throw InputError(file.string() + ":" + std::to_string(e.source().begin.line) + ": " +
                     std::string(e.description()));
  }
  auto at = [&](const toml::node& n) { return file.string() + ":" + std::to_string(n.source().begin.line); };
  std::vector<RuntimeConfiguration> out;
  for (const auto& [top, node] : root) {
    if (top.str() != "configuration" || !node.is_table())
      throw InputError(at(node) + ": '" + std::string(top.str()) +
                       "': expected [configuration.NAME] tables only");
    for (const auto& [name, body] : *node.as_table()) {
      RuntimeConfiguration c;
      c.name = std::string(name.str());
      c.defined_at = at(body);
      if (!body.is_table())
        throw InputError(c.defined_at + ": configuration." + c.name + ": expected a table");
      for (const auto& [key_, value] : *body.as_table()) {
        const std::string key(key_.str());
        const std::string where = at(value) + ": configuration." + c.name + "." + key;
        if (key == "scheduler") {
          c.scheduler = value.value<std::string>().value_or("\x01");
          check_scheduler(c.scheduler, where);
        } else if (key == "features") {
          if (!value.is_array()) throw InputError(where + ": expected a list of strings");
          for (const auto& f : *value.as_array()) {
            auto s = f.value<std::string>();
            if (!s) throw InputError(where + ": expected a list of strings");
            check_feature(*s, where);
            c.features.push_back(*s);
          }
        } else if (key == "tunables" || key == "sysctls") {
          if (!value.is_table()) throw InputError(where + ": expected a table such as { name = value }");
          for (const auto& [k, v] : *value.as_table()) {
            const std::string sub(k.str()), val = scalar_text(v);
            if (val.empty()) throw InputError(where + "." + sub + ": expected a number or a string");
            if (key == "tunables") {
              check_tunable(sub, where);
              c.tunables[sub] = val;
            } else {
              check_sysctl(sub, where);
              c.sysctls[sub] = val;
            }
          }
        } else if (key == "cpu_weight") {
          auto w = value.value<std::int64_t>();
          if (!w) throw InputError(where + ": expected a whole number 1..10000");
          c.cpu_weight = check_weight(static_cast<long>(*w), where);
        } else if (key == "cpu_max") {
          auto s = value.value<std::string>();
          if (!s) throw InputError(where + ": expected a string such as \"50000 100000\" or \"max\"");
          c.cpu_max = parse_cpu_max(*s, where);
        } else {
          throw InputError(where +
                           ": unknown key (scheduler, features, tunables, sysctls, cpu_weight, cpu_max)");
        }
      }
      finish(c);
      out.push_back(std::move(c));
    }
  }
  return out;
}

RuntimeConfiguration resolve_configuration(const std::string& spec,
                                           const std::vector<RuntimeConfiguration>& file) {
  for (const auto& c : file)
    if (c.name == spec) return c;
  const std::string where = "--configuration " + spec;
  RuntimeConfiguration c;
  c.defined_at = where;
  if (spec.find('=') == std::string::npos) {
    if (spec != "eevdf" && spec != "cfs" && spec.rfind("scx:", 0) != 0) {
      std::string known;
      for (const auto& f : file) known += (known.empty() ? "" : ", ") + f.name;
      throw InputError(where + ": not a configuration" +
                       (file.empty() ? std::string(" (no --configurations file is given)")
                                     : " of the --configurations file (it has: " + known + ")") +
                       "; give eevdf, cfs, scx:NAME or KEY=VALUE,...");
    }
    c.name = spec;
    c.scheduler = spec;
    check_scheduler(c.scheduler, where);
    finish(c);
    return c;
  }
  std::istringstream items(spec);
  for (std::string item; std::getline(items, item, ',');) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(where + ": '" + item + "': expected KEY=VALUE");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "name") {
      c.name = value;
    } else if (key == "scheduler") {
      check_scheduler(value, where);
      c.scheduler = value;
    } else if (key == "feature") {
      check_feature(value, where);
      c.features.push_back(value);
    } else if (key.rfind("tunable.", 0) == 0) {
      check_tunable(key.substr(8), where);
      c.tunables[key.substr(8)] = value;
    } else if (key.rfind("sysctl.", 0) == 0) {
      check_sysctl(key.substr(7), where);
      c.sysctls[key.substr(7)] = value;
    } else if (key == "cpu.weight") {
      c.cpu_weight = check_weight(parse_long(value, where + ": cpu.weight"), where);
    } else if (key == "cpu.max") {
      c.cpu_max = parse_cpu_max(value, where);
    } else {
      throw InputError(where + ": unknown key '" + key +
                       "' (name, scheduler, feature, tunable.NAME, sysctl.NAME, cpu.weight, cpu.max)");
    }
  }
  if (c.name.empty()) throw InputError(where + ": an inline configuration needs name=NAME");
  finish(c);
  return c;
}

}  // namespace schedlab::runtime
