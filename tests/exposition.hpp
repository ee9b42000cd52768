#pragma once
// Reads a Prometheus text exposition into samples, for tests to look series up by name and labels.
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace schedlab::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

inline std::vector<Sample> parse_exposition(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') s.name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string key, value;
        while (i < line.size() && line[i] != '=') key += line[i++];
        i += 2;  // ="
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) ++i;
          value += line[i++];
        }
        ++i;  // closing quote
        if (i < line.size() && line[i] == ',') ++i;
        s.labels[key] = value;
      }
      ++i;  // }
    }
    std::istringstream rest(line.substr(i));
    std::string v;
    rest >> v;
    s.value = std::stod(v);  // strtod reads "+Inf" and "NaN" too
    out.push_back(std::move(s));
  }
  return out;
}

// Samples named `name` whose labels include every pair of `match`.
inline std::vector<Sample> find_samples(const std::vector<Sample>& all, const std::string& name,
                                        const std::map<std::string, std::string>& match = {}) {
  std::vector<Sample> out;
  for (const auto& s : all) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      ok = ok && it != s.labels.end() && it->second == v;
    }
    if (ok) out.push_back(s);
  }
  return out;
}

}  // namespace schedlab::testing
