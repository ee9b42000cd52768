// The shape slug: "<sockets>s-<cores>c-<smt|nosmt>-<nodes>n-<cpu model>", each piece "unknown" when
// sysinfo could not read its fact. Counted from the online CPUs sysinfo lists (a box booted with some
// CPUs offline, or with nosmt, is another class: the scheduler sees another machine).
#include "collector/sysinfo/host_class.hpp"

#include <fnmatch.h>

#include <cctype>
#include <set>
#include <utility>

#include "collector/sysinfo/sysinfo.hpp"
#include "core/error.hpp"

namespace schedlab {
namespace {

using nlohmann::json;

constexpr const char* kUnknown = "unknown";

// How many packages (sockets) sysinfo's list of online CPUs spans; -1 when the list is empty or malformed.
int distinct_packages(const json& cpus) {
  std::set<long> seen;
  for (const auto& c : cpus) {
    if (!c.is_object() || !c.contains("package") || !c["package"].is_number_integer()) return -1;
    seen.insert(c["package"].get<long>());
  }
  return seen.empty() ? -1 : static_cast<int>(seen.size());
}
// How many physical cores: SMT siblings share one.
int distinct_cores(const json& cpus) {
  std::set<std::pair<long, long>> seen;  // core_id is per package: (package, core)
  for (const auto& c : cpus) {
    if (!c.is_object() || !c.contains("package") || !c.contains("core") ||
        !c["package"].is_number_integer() || !c["core"].is_number_integer())
      return -1;
    seen.emplace(c["package"].get<long>(), c["core"].get<long>());
  }
  return seen.empty() ? -1 : static_cast<int>(seen.size());
}

std::string counted(int n, const char* unit) {
  return n > 0 ? std::to_string(n) + unit : kUnknown;
}

// "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz" -> "intel-xeon-gold-6230": lowercase words, without the
// trademark marks, the nominal frequency (the model number already implies it) and the words "cpu" and
// "processor", which name no model.
std::string model_slug(const json& model) {
  if (!model.is_string()) return kUnknown;
  std::string text = model.get<std::string>();
  if (auto at = text.find('@'); at != std::string::npos) text.erase(at);
  for (auto& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const std::string mark : {"(r)", "(tm)", "(c)"})
    for (auto p = text.find(mark); p != std::string::npos; p = text.find(mark)) text.erase(p, mark.size());
  std::string slug, word;
  auto flush = [&] {
    if (!word.empty() && word != "cpu" && word != "processor") slug += (slug.empty() ? "" : "-") + word;
    word.clear();
  };
  for (char ch : text) {
    if (std::isalnum(static_cast<unsigned char>(ch)))
      word += ch;
    else
      flush();
  }
  flush();
  return slug.empty() ? kUnknown : slug;
}

}  // namespace

std::string HostClass::name() const {
  return label.empty() ? shape : label;
}

bool HostClass::matches(const std::string& pattern) const {
  return (!label.empty() && ::fnmatch(pattern.c_str(), label.c_str(), 0) == 0) ||
         ::fnmatch(pattern.c_str(), shape.c_str(), 0) == 0;
}

HostClass recorded_host_class(const json& bundle_host) {
  std::string label;
  if (bundle_host.is_object() && bundle_host.contains("label") && bundle_host["label"].is_string())
    label = bundle_host["label"].get<std::string>();
  try {
    return host_class(bundle_host, label);
  } catch (const InputError&) {
    return host_class(bundle_host, "");
  }
}

void check_host_label(const std::string& label) {
  for (unsigned char ch : label)
    if (!std::isalnum(ch) && ch != '.' && ch != '_' && ch != '-')
      throw InputError("'" + label + "': a host label is one word of letters, digits, '.', '_' or '-'");
}

HostClass host_class(const json& sysinfo_host, const std::string& label) {
  check_host_label(label);
  const json none;
  const json& topo =
      sysinfo_host.is_object() && sysinfo_host.contains("topology") ? sysinfo_host["topology"] : none;
  const json& cpus =
      topo.is_object() && topo.contains("cpus") && topo["cpus"].is_array() ? topo["cpus"] : none;
  const json& smt = topo.is_object() && topo.contains("smt_active") ? topo["smt_active"] : none;
  const json& nodes = topo.is_object() && topo.contains("numa_nodes") ? topo["numa_nodes"] : none;
  const json& model =
      sysinfo_host.is_object() && sysinfo_host.contains("cpu_model") ? sysinfo_host["cpu_model"] : none;
  HostClass c;
  c.label = label;
  c.shape = counted(cpus.is_array() ? distinct_packages(cpus) : -1, "s") + "-" +
            counted(cpus.is_array() ? distinct_cores(cpus) : -1, "c") + "-" +
            (smt.is_boolean() ? (smt.get<bool>() ? "smt" : "nosmt") : kUnknown) + "-" +
            counted(nodes.is_number_integer() ? nodes.get<int>() : -1, "n") + "-" + model_slug(model);
  return c;
}

HostClass this_host_class(const HostPaths& paths, const std::string& label) {
  check_host_label(label);  // before reading the machine: a bad label is the caller's mistake
  return host_class(host_facts(paths), label);
}

}  // namespace schedlab
