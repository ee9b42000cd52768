#include "workloads/common/placement.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <utility>

#include "core/error.hpp"

namespace schedlab {
namespace {

constexpr std::array<std::pair<Placement, const char*>, 8> kNames{{{Placement::kSameThread, "same-thread"},
                                                                   {Placement::kSameCpu, "same-cpu"},
                                                                   {Placement::kSmtSibling, "smt-sibling"},
                                                                   {Placement::kOtherCore, "other-core"},
                                                                   {Placement::kOtherLlc, "other-llc"},
                                                                   {Placement::kOtherNode, "other-node"},
                                                                   {Placement::kSpread, "spread"},
                                                                   {Placement::kUnpinned, "unpinned"}}};

using Relation = std::function<bool(int anchor, int other)>;

// First allowed (anchor, partner) pair satisfying `rel`, preferring partners that also satisfy `prefer`.
std::pair<int, int> find_pair(const std::vector<int>& allowed, const Relation& rel, const Relation& prefer) {
  std::pair<int, int> fallback{-1, -1};
  for (int a : allowed)
    for (int b : allowed) {
      if (a == b || !rel(a, b)) continue;
      if (!prefer || prefer(a, b)) return {a, b};
      if (fallback.first < 0) fallback = {a, b};
    }
  return fallback;
}

}  // namespace

std::vector<std::string> placement_choices() {
  std::vector<std::string> out;
  for (const auto& [p, name] : kNames) out.emplace_back(name);
  return out;
}

ParamSpec placement_param(const std::string& help) {
  return {"placement", ParamKind::kChoice, "unpinned",   "",
          help,        std::nullopt,       std::nullopt, placement_choices()};
}

std::string to_string(Placement p) {
  for (const auto& [q, name] : kNames)
    if (p == q) return name;
  return "?";
}

Placement parse_placement(const std::string& text) {
  for (const auto& [p, name] : kNames)
    if (text == name) return p;
  std::string known;
  for (const auto& n : placement_choices()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("unknown placement '" + text + "' (known: " + known + ")");
}

std::vector<int> assign_cpus(Placement p, int tasks, const Topology& topo, const std::vector<int>& allowed) {
  std::vector<int> cpus(static_cast<std::size_t>(tasks), -1);
  if (p == Placement::kUnpinned) return cpus;
  if (allowed.empty()) throw InputError("placement " + to_string(p) + ": no CPU is allowed to this process");
  if (p == Placement::kSameCpu || p == Placement::kSameThread) {
    for (auto& c : cpus) c = allowed.front();
    return cpus;
  }
  if (p == Placement::kSpread) {
    for (std::size_t i = 0; i < cpus.size(); ++i) cpus[i] = allowed[i % allowed.size()];
    return cpus;
  }
  Relation rel, prefer;
  std::string missing;
  switch (p) {
    case Placement::kSmtSibling:
      rel = [&](int a, int b) { return topo.same_core(a, b); };
      missing = "no two allowed CPUs are SMT siblings (SMT off or absent)";
      break;
    case Placement::kOtherCore:
      rel = [&](int a, int b) { return !topo.same_core(a, b); };
      prefer = [&](int a, int b) { return topo.same_llc(a, b); };
      missing = "all allowed CPUs are on one core";
      break;
    case Placement::kOtherLlc:
      rel = [&](int a, int b) { return topo.find(a) && topo.find(b) && !topo.same_llc(a, b); };
      missing = "all allowed CPUs share one last-level cache";
      break;
    case Placement::kOtherNode:
      rel = [&](int a, int b) { return topo.find(a) && topo.find(b) && !topo.same_node(a, b); };
      missing = "all allowed CPUs are on one NUMA node";
      break;
    default:
      break;
  }
  auto [anchor, partner] = find_pair(allowed, rel, prefer);
  if (anchor < 0) throw InputError("placement " + to_string(p) + " is not possible here: " + missing);
  for (std::size_t i = 0; i < cpus.size(); ++i) cpus[i] = i % 2 == 0 ? anchor : partner;
  return cpus;
}

}  // namespace schedlab

namespace schedlab {

std::vector<int> cpus_in_use(const std::vector<int>& assigned, const std::vector<int>& allowed) {
  std::vector<int> out;
  for (int cpu : assigned) {
    if (cpu < 0) return allowed;
    if (std::find(out.begin(), out.end(), cpu) == out.end()) out.push_back(cpu);
  }
  std::sort(out.begin(), out.end());
  return out.empty() ? allowed : out;
}

}  // namespace schedlab
