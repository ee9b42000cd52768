// The environment table: the diff's fields (diff/environment.cpp), each side's value, differences marked.
#include <map>
#include <set>

#include "diff/environment.hpp"
#include "report/report_parts.hpp"

namespace schedlab::report {
namespace {

std::string as_text(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "(unknown)";
  return j.dump();
}

// sched_features is a list of words, NO_X meaning X is off: one row per feature reads better.
bool is_word_list(const nlohmann::json& j) {
  if (!j.is_array()) return false;
  for (const auto& w : j)
    if (!w.is_string()) return false;
  return true;
}

// A field's value in one bundle, split into (key suffix, text) rows.
std::map<std::string, std::string> rows_of(const nlohmann::json& value) {
  std::map<std::string, std::string> rows;
  if (value.is_object() && !value.empty()) {
    for (const auto& [k, v] : value.items()) rows["." + k] = as_text(v);
  } else if (is_word_list(value) && !value.empty()) {
    for (const auto& w : value) {
      auto word = w.get<std::string>();
      bool off = word.rfind("NO_", 0) == 0;
      rows["." + (off ? word.substr(3) : word)] = off ? "off" : "on";
    }
  } else {
    rows[""] = as_text(value);
  }
  return rows;
}

}  // namespace

nlohmann::json environment_rows(const std::vector<Side>& sides) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& field : environment_fields()) {
    nlohmann::json::json_pointer ptr(field.pointer);
    // row key -> per side, the set of values across the side's bundles
    std::map<std::string, std::vector<std::set<std::string>>> table;
    for (std::size_t i = 0; i < sides.size(); ++i) {
      for (const auto& b : sides[i].bundles) {
        auto head = environment_head(b.bundle);
        auto rows =
            head.contains(ptr) ? rows_of(head.at(ptr)) : std::map<std::string, std::string>{{"", "(absent)"}};
        for (const auto& [key, text] : rows) {
          auto& per_side = table[key];
          per_side.resize(sides.size());
          per_side[i].insert(text);
        }
      }
    }
    for (auto& [key, per_side] : table) {
      nlohmann::json values = nlohmann::json::array();
      std::set<std::string> distinct;
      for (auto& side_values : per_side) {
        if (side_values.empty()) side_values.insert("(absent)");
        std::string text;
        for (const auto& v : side_values) text += (text.empty() ? "" : " | ") + v;
        values.push_back(text);
        distinct.insert(text);
      }
      out.push_back({{"field", std::string(field.name) + key},
                     {"category", field.category},
                     {"values", values},
                     {"differs", distinct.size() > 1}});
    }
  }
  return out;
}

}  // namespace schedlab::report
