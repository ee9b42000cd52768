#pragma once
// A host's class: which boxes of a lab are the same machine for a benchmark, so that a fleet's series are
// compared like with like. Derived from sysinfo's "host" facts (CPU model and topology shape), not from
// the hostname, which says nothing about the hardware; an optional label (one word, [campaign] host_label)
// names the class for people. The slug's spelling: collector/sysinfo/host_class.cpp.
#include <string>

#include <nlohmann/json.hpp>

#include "core/host_paths.hpp"

namespace schedlab {

struct HostClass {
  std::string label;  // "" when none was given
  std::string shape;  // e.g. "2s-32c-smt-2n-intel-xeon-gold-6230"; never empty
  // The label when given, else the shape: what the exporter's `class` label carries.
  std::string name() const;
  // fnmatch(3) glob against the label (when given) or the shape: "*" matches every host, "1s-*" every
  // one-socket box, "rack-?" labels rack-a and rack-b.
  bool matches(const std::string& pattern) const;
};

// The class of the machine `sysinfo_host` describes (SysinfoReport::host, or a bundle's "host"). A fact
// that is null there spells "unknown" in the shape. Throws InputError when `label` is not a plain word.
HostClass host_class(const nlohmann::json& sysinfo_host, const std::string& label);

// The class a bundle records: the shape of its host facts and their "label" (run --host-label), which a
// bundle from elsewhere may lack or spell as no plain word (then: no label).
HostClass recorded_host_class(const nlohmann::json& bundle_host);

// This machine's class, from sysinfo's host facts read through `paths`.
HostClass this_host_class(const HostPaths& paths, const std::string& label);

// Throws InputError ("'LABEL': why") unless `label` is one word of letters, digits, '.', '_' and '-'
// (it becomes a Prometheus label value and a dashboard's variable value, matched as a regex there too);
// "" is no label and passes.
void check_host_label(const std::string& label);

}  // namespace schedlab
