#include "diff/environment.hpp"

#include <set>

#include <fmt/format.h>

#include "core/error.hpp"

namespace schedlab {
namespace {

// The bundle fields that change what a scheduler measurement means.
constexpr EnvironmentField kFields[] = {
    {"kernel.release", "/kernel/release", "configuration"},
    {"kernel.version", "/kernel/version", "configuration"},
    {"kernel.build_id", "/kernel/build_id", "configuration"},
    {"kernel.recipe", "/kernel/booted_by/recipe", "configuration"},
    {"configuration.hash", "/configuration/hash", "configuration"},
    {"configuration.scheduler", "/configuration/scheduler", "configuration"},
    {"configuration.cmdline", "/configuration/cmdline", "configuration"},
    {"configuration.sched_features", "/configuration/sched_features", "configuration"},
    {"configuration.sched_tunables", "/configuration/sched_tunables", "configuration"},
    {"kernel.preempt", "/kernel/preempt", "configuration"},
    {"kernel.hz", "/kernel/hz", "configuration"},
    {"host.fingerprint", "/host/fingerprint", "environment"},
    {"host.cpu_model", "/host/cpu_model", "environment"},
    {"host.microcode", "/host/microcode", "environment"},
    {"host.virtualization", "/host/virtualization/hypervisor", "environment"},
    {"emulation", "/kernel/booted_by/accel", "environment"},
    {"host.online_cpus", "/host/topology/online_cpus", "environment"},
    {"kernel.clocksource", "/kernel/clocksource/current", "environment"},
    {"kernel.mitigations", "/kernel/mitigations", "environment"},
    {"governor", "/configuration/governor", "environment"},
    {"boost", "/configuration/boost", "environment"},
    {"thp", "/environment/thp/enabled", "environment"},
    {"numa_balancing", "/environment/numa_balancing", "environment"},
    {"autogroup", "/environment/autogroup", "environment"},
    {"smt", "/environment/smt/active", "environment"},
    {"suite", "/provenance/suite_git_sha", "environment"},
    {"compiler", "/provenance/compiler", "environment"},
};

std::string as_text(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "(unknown)";
  return j.dump();
}

// The values of one field across a side's trials, as text ("a" or "a | b").
std::string side_value(const Side& side, const nlohmann::json::json_pointer& ptr,
                       std::set<std::string>& raw) {
  std::set<std::string> values;
  for (const auto& b : side.bundles) {
    auto j = environment_head(b.bundle);
    values.insert(j.contains(ptr) ? as_text(j.at(ptr)) : "(absent)");
  }
  raw.insert(values.begin(), values.end());
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : " | ") + v;
  return out;
}

// Objects such as the mitigations list differ in a few keys; show those keys only.
void narrow_objects(const std::vector<Side>& sides, const nlohmann::json::json_pointer& ptr,
                    EnvironmentDifference& d) {
  std::vector<nlohmann::json> objects;
  for (const auto& s : sides) {
    if (s.bundles.empty()) return;
    auto j = environment_head(s.bundles.front().bundle);
    if (!j.contains(ptr) || !j.at(ptr).is_object()) return;
    objects.push_back(j.at(ptr));
  }
  std::set<std::string> keys;
  for (const auto& o : objects) {
    for (const auto& [k, v] : o.items()) keys.insert(k);
  }
  for (std::size_t i = 0; i < sides.size(); ++i) {
    std::string text;
    for (const auto& k : keys) {
      bool differs = false;
      for (const auto& o : objects)
        differs = differs || o.value(k, nlohmann::json()) != objects[0].value(k, nlohmann::json());
      if (differs)
        text += (text.empty() ? "" : "; ") + k + "=" + as_text(objects[i].value(k, nlohmann::json()));
    }
    d.values[i].second = text;
  }
}

}  // namespace

std::span<const EnvironmentField> environment_fields() {
  return kFields;
}

nlohmann::json environment_head(const Bundle& b) {
  return {{"host", b.host},
          {"kernel", b.kernel},
          {"configuration", b.configuration},
          {"environment", b.environment},
          {"provenance", b.provenance}};
}

std::vector<EnvironmentDifference> environment_differences(const std::vector<Side>& sides) {
  std::vector<EnvironmentDifference> out;
  for (const auto& f : kFields) {
    nlohmann::json::json_pointer ptr(f.pointer);
    EnvironmentDifference d{f.name, f.category, {}};
    std::set<std::string> all;
    for (const auto& s : sides) d.values.emplace_back(s.name, side_value(s, ptr, all));
    if (all.size() <= 1) continue;
    narrow_objects(sides, ptr, d);
    out.push_back(std::move(d));
  }
  return out;
}

void check_hardware(const std::vector<Side>& sides, bool force, std::vector<std::string>& warnings) {
  std::set<std::string> fingerprints;
  std::string listing;
  for (const auto& s : sides) {
    for (const auto& b : s.bundles) {
      auto fp = b.bundle.host.value("fingerprint", std::string("(none)"));
      if (fingerprints.insert(fp).second) {
        listing += fmt::format("{}{} on {} ({})", listing.empty() ? "" : ", ", fp, s.name,
                               b.bundle.host.value("cpu_model", std::string("?")));
      }
    }
  }
  if (fingerprints.size() <= 1) return;
  auto what = "different hardware: fingerprints " + listing;
  if (!force)
    throw InputError(what +
                     "; a scheduler diff across machines measures the machines (--force to compare anyway)");
  warnings.insert(warnings.begin(), "FORCED: " + what);
}

}  // namespace schedlab
