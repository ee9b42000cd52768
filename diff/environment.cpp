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
    // A kernel the user brought (kernels/): the commit it was built from, whether its tree had changes
    // the commit does not hold, or the hash of a prebuilt image. Two builds of one release differ here.
    {"kernel.commit", "/kernel/booted_by/commit", "configuration"},
    {"kernel.dirty", "/kernel/booted_by/dirty", "configuration"},
    {"kernel.image", "/kernel/booted_by/image_sha256", "configuration"},
    {"configuration.hash", "/configuration/hash", "configuration"},
    {"configuration.scheduler", "/configuration/scheduler", "configuration"},
    {"configuration.cmdline", "/configuration/cmdline", "configuration"},
    {"configuration.sched_features", "/configuration/sched_features", "configuration"},
    {"configuration.sched_tunables", "/configuration/sched_tunables", "configuration"},
    // A runtime configuration's settings as read back (runtime/): what told the sides of one boot apart.
    {"configuration.runtime", "/configuration/runtime/read_back", "configuration"},
    {"kernel.preempt", "/kernel/preempt", "configuration"},
    {"kernel.hz", "/kernel/hz", "configuration"},
    {"host.fingerprint", "/host/fingerprint", "environment"},
    {"host.cpu_model", "/host/cpu_model", "environment"},
    {"host.microcode", "/host/microcode", "environment"},
    {"host.virtualization", "/host/virtualization/hypervisor", "environment"},
    {"emulation", "/kernel/booted_by/accel", "environment"},
    {"host.online_cpus", "/host/topology/online_cpus", "environment"},
    {"kernel.clocksource", "/kernel/clocksource/current", "environment"},
    // The filesystem the suite ran from (issue #31.5): a qemu guest's 9p share or the overlay on its
    // ext4 image; workloads that exec or read files time the filesystem too.
    {"root_fs", "/environment/root_fs/type", "environment"},
    {"kernel.mitigations", "/kernel/mitigations", "environment"},
    {"governor", "/configuration/governor", "environment"},
    {"boost", "/configuration/boost", "environment"},
    {"thp", "/environment/thp/enabled", "environment"},
    {"numa_balancing", "/environment/numa_balancing", "environment"},
    {"autogroup", "/environment/autogroup", "environment"},
    {"smt", "/environment/smt/active", "environment"},
    {"suite", "/provenance/suite_git_sha", "environment"},
    {"compiler", "/provenance/compiler", "environment"},
    // How the timed repetitions were measured (issue #28.3): perf counters on the workload perturb it
    // and their scope decides what they attach to, so a side measured otherwise is not comparable.
    {"method.counters", "/measurement/counters", "method"},
    {"method.counter_scope", "/measurement/counter_scope", "method"},
    {"method.isolation", "/measurement/isolation", "method"},
    {"method.timed_profile", "/measurement/timed_profile", "method"},
    {"method.timed_trace", "/measurement/timed_trace", "method"},
};

std::string joined(const std::set<std::string>& words, const char* none) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " | ") + w;
  return out.empty() ? none : out;
}

// What the bundle records of how its timed (ok) repetitions were measured: perf counters attached or
// not (`--no-counters` leaves a repetition without any; a counter the host refused is still an entry),
// the scope they had, the isolation each repetition ran in, and whether a profile or
// trace ran on a timed repetition (they belong on diagnostic repetitions).
nlohmann::json measurement(const Bundle& b) {
  std::set<std::string> counters, scopes, isolation, profile, trace;
  // A bundle whose every repetition failed still says how they were measured.
  bool any_ok = false;
  for (const auto& in : b.instances)
    for (const auto& rep : in.repetitions) any_ok = any_ok || rep.ok();
  for (const auto& in : b.instances) {
    const bool profiled = in.instrumentation.is_object() && in.instrumentation.contains("timed") &&
                          in.instrumentation["timed"].value("profile", false);
    for (const auto& rep : in.repetitions) {
      if (any_ok && !rep.ok()) continue;
      // System-wide readings (/proc deltas, schedstat: scope "system") are taken with or without
      // --no-counters; perf counters on the workload carry their scope, or none when the host refused.
      bool perf = false;
      for (const auto& [name, c] : rep.counters) {
        if (c.scope == "system") continue;
        perf = true;
        if (!c.scope.empty()) scopes.insert(c.scope);
      }
      counters.insert(perf ? "on" : "off");
      isolation.insert(rep.isolation.is_object() && rep.isolation.contains("mode") &&
                               rep.isolation["mode"].is_string()
                           ? rep.isolation["mode"].get<std::string>()
                           : "(unrecorded)");
      profile.insert(profiled || (rep.profile.is_object() && !rep.profile.empty()) ? "on" : "off");
      trace.insert(rep.trace.is_object() && !rep.trace.empty() ? "on" : "off");
    }
  }
  return {{"counters", joined(counters, "(no repetition)")},
          {"counter_scope", joined(scopes, "(none)")},
          {"isolation", joined(isolation, "(no repetition)")},
          {"timed_profile", joined(profile, "(no repetition)")},
          {"timed_trace", joined(trace, "(no repetition)")}};
}

std::string as_text(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "(unknown)";
  return j.dump();
}

// The values of one field across a side's trials (their environment heads), as text ("a" or "a | b").
std::string side_value(const std::vector<nlohmann::json>& heads, const nlohmann::json::json_pointer& ptr,
                       std::set<std::string>& raw) {
  std::set<std::string> values;
  for (const auto& j : heads) values.insert(j.contains(ptr) ? as_text(j.at(ptr)) : "(absent)");
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
          {"provenance", b.provenance},
          {"measurement", measurement(b)}};
}

std::vector<EnvironmentDifference> environment_differences(const std::vector<Side>& sides) {
  std::vector<EnvironmentDifference> out;
  std::vector<std::vector<nlohmann::json>> heads(sides.size());  // built once: a head copies the bundle's
  for (std::size_t i = 0; i < sides.size(); ++i)
    for (const auto& b : sides[i].bundles) heads[i].push_back(environment_head(b.bundle));
  for (const auto& f : kFields) {
    nlohmann::json::json_pointer ptr(f.pointer);
    EnvironmentDifference d{f.name, f.category, {}};
    std::set<std::string> all;
    for (std::size_t i = 0; i < sides.size(); ++i)
      d.values.emplace_back(sides[i].name, side_value(heads[i], ptr, all));
    if (all.size() <= 1) continue;
    narrow_objects(sides, ptr, d);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::string> trial_kernel_warnings(const Side& side) {
  std::vector<std::string> out;
  std::string tainted, clock_changed, pin_missed;
  std::set<std::string> new_flags;
  for (const auto& b : side.bundles) {
    const auto& k = b.bundle.kernel;
    if (!k.is_object()) continue;
    const std::string trial = std::to_string(b.bundle.trial + 1);
    auto object_at = [&](const char* key) {
      auto it = k.find(key);
      return it != k.end() && it->is_object() ? *it : nlohmann::json::object();
    };
    const auto during = object_at("during_trial");
    if (during.contains("tainted") && during["tainted"] == true) {
      tainted += (tainted.empty() ? "" : ", ") + trial;
      new_flags.insert(during.contains("new_taint_flags") ? as_text(during["new_taint_flags"]) : "?");
    }
    if (during.contains("clocksource_changed") && during["clocksource_changed"] == true) {
      std::string seen;
      const auto seen_list = during.value("clocksources", nlohmann::json::array());
      for (const auto& c : seen_list) seen += (seen.empty() ? "" : " -> ") + as_text(c);
      clock_changed += (clock_changed.empty() ? "" : ", ") + trial + " (" + seen + ")";
    }
    const auto clock = object_at("clocksource");
    const auto pinned = clock.value("pinned", nlohmann::json()),
               current = clock.value("current", nlohmann::json());
    if (pinned.is_string() && current.is_string() && pinned != current)
      pin_missed += (pin_missed.empty() ? "" : ", ") + trial + " (clocksource=" + as_text(pinned) +
                    " on the cmdline, " + as_text(current) + " in use)";
  }
  if (!tainted.empty())
    out.push_back(fmt::format(
        "{}: the kernel was tainted during trial {} (new taint flags {}; W: a WARN, D: an Oops it survived): "
        "its results come from a kernel in trouble; see the guest's console log",
        side.name, tainted, joined(new_flags, "?")));
  if (!clock_changed.empty())
    out.push_back(
        fmt::format("{}: the clocksource changed during trial {}: timings before and after the "
                    "switch read different clocks (pin it with clocksource= in the recipe's cmdline)",
                    side.name, clock_changed));
  if (!pin_missed.empty())
    out.push_back(
        fmt::format("{}: the pinned clocksource was not the one in use in trial {} (the kernel's "
                    "watchdog found it unstable?)",
                    side.name, pin_missed));
  return out;
}

void check_setup(const std::vector<Side>& sides, const std::vector<EnvironmentDifference>& differences,
                 std::vector<std::string>& warnings) {
  for (const auto& d : differences) {
    if (d.field != "root_fs" && d.field != "kernel.clocksource") continue;
    std::string listing;
    bool unrecorded = false;  // a bundle from before the field was recorded: listed, not warned about
    for (const auto& [side, value] : d.values) {
      listing += (listing.empty() ? "" : ", ") + side + " " + value;
      unrecorded = unrecorded || value.find("(absent)") != std::string::npos;
    }
    if (unrecorded) continue;
    if (d.field == "root_fs")
      warnings.push_back(
          "different root filesystems (" + listing +
          "): workloads that exec or read files time the filesystem as well as the kernel; boot "
          "both sides with the same `kernel boot --root`");
    else
      warnings.push_back("different clocksources (" + listing +
                         "): clock reads and timers cost differently on each (6.1 under qemu64 falls back to "
                         "hpet); pin it with clocksource= in the recipes' [boot] cmdline");
  }
  for (const auto& s : sides)
    for (auto& w : trial_kernel_warnings(s)) warnings.push_back(std::move(w));
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

void check_method(const std::vector<EnvironmentDifference>& differences, bool force,
                  std::vector<std::string>& warnings) {
  std::string listing;
  for (const auto& d : differences) {
    if (d.category != "method") continue;
    listing += (listing.empty() ? "" : "; ") + d.field + ":";
    for (const auto& [side, value] : d.values) listing += " " + side + " " + value;
  }
  if (listing.empty()) return;
  auto what = "different measuring methods (" + listing + ")";
  if (!force)
    throw InputError(what +
                     "; a shift between them may be the method's, not the configuration's (--force to "
                     "compare anyway)");
  warnings.insert(warnings.begin(), "FORCED: " + what);
}

}  // namespace schedlab
