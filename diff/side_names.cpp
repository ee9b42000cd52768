// Short names for the sides of a diff, as people name what they compare: its label, else its kernel
// release and configuration, else the shortest part of its path that no other side has.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "diff/sides.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;

using Names = std::vector<std::string>;

// Names that tell every side apart, or nullopt (one empty, or two alike).
std::optional<Names> distinct(Names names) {
  std::set<std::string> seen;
  for (const auto& n : names)
    if (n.empty() || !seen.insert(n).second) return std::nullopt;
  return names;
}

// The one value `read` gives for every bundle of the side, or empty.
template <typename Read>
std::string shared(const Side& side, Read read) {
  std::set<std::string> values;
  for (const auto& b : side.bundles) values.insert(read(b.bundle));
  return values.size() == 1 ? *values.begin() : "";
}

std::string text_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return "";
    at = &(*at)[key];
  }
  return at->is_string() ? at->get<std::string>() : "";
}

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> out;
  for (std::size_t start = 0;;) {
    const auto at = text.find(by, start);
    out.push_back(text.substr(start, at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string join(const std::vector<std::string>& parts, std::size_t n, char by) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += (i ? std::string(1, by) : "") + parts[i];
  return out;
}

// "6.1.0-50-amd64" and "6.12.100+deb12-amd64" -> "6.1.0-50" and "6.12.100+deb12": the part every side
// shares says nothing about which is which.
Names without_common_suffix(const Names& releases) {
  std::vector<std::vector<std::string>> tokens;
  std::size_t shortest = SIZE_MAX;
  for (const auto& r : releases) {
    tokens.push_back(split(r, '-'));
    shortest = std::min(shortest, tokens.back().size());
  }
  std::size_t common = 0;
  while (common + 1 < shortest) {
    const auto& last = tokens[0][tokens[0].size() - 1 - common];
    if (!std::all_of(tokens.begin(), tokens.end(),
                     [&](const auto& t) { return t[t.size() - 1 - common] == last; }))
      break;
    ++common;
  }
  Names out;
  for (const auto& t : tokens) out.push_back(join(t, t.size() - common, '-'));
  return out;
}

// Release where the releases differ, configuration (a runtime configuration's name, else the scheduler)
// where those differ, both joined by "/".
std::optional<Names> kernel_names(const std::vector<Side>& sides) {
  Names releases, configurations;
  for (const auto& s : sides) {
    releases.push_back(shared(s, [](const Bundle& b) {
      auto r = text_at(b.configuration, {"kernel_release"});
      return r.empty() ? text_at(b.kernel, {"release"}) : r;
    }));
    configurations.push_back(shared(s, [](const Bundle& b) {
      auto name = text_at(b.configuration, {"runtime", "name"});
      return name.empty() ? text_at(b.configuration, {"scheduler"}) : name;
    }));
  }
  const bool by_release = std::set<std::string>(releases.begin(), releases.end()).size() > 1;
  const bool by_configuration =
      std::set<std::string>(configurations.begin(), configurations.end()).size() > 1;
  if (!by_release && !by_configuration) return std::nullopt;
  if (by_release) releases = without_common_suffix(releases);
  Names names;
  for (std::size_t i = 0; i < sides.size(); ++i) {
    if (releases[i].empty() || configurations[i].empty()) return std::nullopt;
    names.push_back(by_release && by_configuration ? releases[i] + "/" + configurations[i]
                    : by_release                   ? releases[i]
                                                   : configurations[i]);
  }
  return distinct(names);
}

// A component longer than this is also tried in its "-" separated parts: the trials of one run differ in
// "trial1", two runs in their id's hash ("20261201T201347Z-bf13e6-trial0" is no name for a column).
constexpr std::size_t kLongComponent = 24;

// Path components of each side's spec (a file's without ".json"), long ones also in parts.
std::vector<std::set<std::string>> path_parts(const std::vector<Side>& sides, bool split_long) {
  std::vector<std::set<std::string>> out;
  for (const auto& s : sides) {
    std::set<std::string> parts;
    for (const auto& component : fs::path(s.spec)) {
      auto text = component.string();
      if (text.ends_with(".json")) text.resize(text.size() - 5);
      if (text.empty() || text == "/" || text == "." || text == "..") continue;
      parts.insert(text);
      if (split_long && text.size() > kLongComponent)
        for (const auto& piece : split(text, '-'))
          if (!piece.empty()) parts.insert(piece);
    }
    out.push_back(std::move(parts));
  }
  return out;
}

// Each side's shortest part that no other side's path has.
std::optional<Names> shortest_unique(const std::vector<std::set<std::string>>& parts) {
  Names names;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::string best;
    for (const auto& p : parts[i]) {
      bool unique = true;
      for (std::size_t j = 0; j < parts.size() && unique; ++j) unique = j == i || !parts[j].count(p);
      if (unique && (best.empty() || p.size() < best.size())) best = p;
    }
    names.push_back(best);
  }
  return distinct(names);
}

std::optional<Names> path_names(const std::vector<Side>& sides) {
  auto whole = shortest_unique(path_parts(sides, false));
  if (whole &&
      std::all_of(whole->begin(), whole->end(), [](const auto& n) { return n.size() <= kLongComponent; }))
    return whole;
  auto pieces = shortest_unique(path_parts(sides, true));
  return pieces ? pieces : whole;
}

std::optional<Names> label_names(const std::vector<Side>& sides) {
  Names names;
  for (const auto& s : sides) names.push_back(shared(s, [](const Bundle& b) { return b.label; }));
  return distinct(names);
}

}  // namespace

void name_sides(std::vector<Side>& sides) {
  auto names = label_names(sides);
  if (!names) names = kernel_names(sides);
  if (!names) names = path_names(sides);
  if (names) {
    for (std::size_t i = 0; i < sides.size(); ++i) sides[i].name = (*names)[i];
    return;
  }
  // The same side given twice: its spec, then "#2", "#3".
  std::map<std::string, int> seen;
  for (auto& s : sides) {
    s.name = s.spec;
    if (int n = ++seen[s.name]; n > 1) s.name += "#" + std::to_string(n);
  }
}

}  // namespace schedlab
