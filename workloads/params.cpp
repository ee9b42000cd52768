#include "workloads/params.hpp"

#include <charconv>
#include <cmath>

#include "core/error.hpp"

namespace schedlab {
namespace {

std::string format_bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return std::to_string(v);
}

void check_range(const std::string& name, const ParamSpec& spec, double v, const std::string& text) {
  if ((spec.min && v < *spec.min) || (spec.max && v > *spec.max)) {
    std::string range =
        spec.max ? "between " + format_bound(spec.min.value_or(0)) + " and " + format_bound(*spec.max)
                 : ">= " + format_bound(*spec.min);
    throw InputError(name + ": must be " + range + ", got '" + text + "'");
  }
}

// "fifo:PRIO" -> "fifo:"; "" for a plain choice. The placeholder is in capitals, as in usage texts.
std::string value_prefix(const std::string& choice) {
  const auto colon = choice.find(':');
  if (colon == std::string::npos || colon + 1 == choice.size()) return "";
  for (std::size_t i = colon + 1; i < choice.size(); ++i)
    if (choice[i] < 'A' || choice[i] > 'Z') return "";
  return choice.substr(0, colon + 1);
}

bool choice_matches(const std::string& choice, const std::string& text) {
  const std::string prefix = value_prefix(choice);
  if (!prefix.empty()) return text.size() > prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
  return text == choice;
}

std::string choice_list(const ParamSpec& spec) {
  std::string out;
  for (const auto& c : spec.choices) out += (out.empty() ? "" : ", ") + c;
  return out;
}

}  // namespace

std::string ParamSpec::kind_name() const {
  switch (kind) {
    case ParamKind::kInteger:
      return "integer";
    case ParamKind::kNumber:
      return "number";
    case ParamKind::kChoice:
      return "choice";
    case ParamKind::kText:
      return "text";
  }
  return "?";
}

nlohmann::json parse_param_value(const std::string& workload, const ParamSpec& spec,
                                 const std::string& text) {
  const std::string name = workload + "." + spec.key;
  switch (spec.kind) {
    case ParamKind::kInteger: {
      long long v = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || p != text.data() + text.size() || text.empty())
        throw InputError(name + ": expected an integer, got '" + text + "'");
      check_range(name, spec, static_cast<double>(v), text);
      return v;
    }
    case ParamKind::kNumber: {
      double v = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || p != text.data() + text.size() || text.empty() || !std::isfinite(v))
        throw InputError(name + ": expected a number, got '" + text + "'");
      check_range(name, spec, v, text);
      return v;
    }
    case ParamKind::kChoice:
      for (const auto& c : spec.choices)
        if (choice_matches(c, text)) return text;
      throw InputError(name + ": '" + text + "' is not one of " + choice_list(spec));
    case ParamKind::kText:
      if (text.empty()) throw InputError(name + ": must not be empty");
      return text;
  }
  throw InputError(name + ": unknown parameter kind");
}

ParamValues resolve_params(const std::string& workload, const std::vector<ParamSpec>& specs,
                           const std::map<std::string, std::string>& given) {
  ParamValues out = nlohmann::json::object();
  for (const auto& spec : specs) out[spec.key] = spec.default_value;
  for (const auto& [key, text] : given) {
    const ParamSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.key == key) spec = &s;
    if (!spec) {
      std::string known;
      for (const auto& s : specs) known += (known.empty() ? "" : ", ") + workload + "." + s.key;
      throw InputError(workload + "." + key + ": unknown parameter (known: " + known + ")");
    }
    out[key] = parse_param_value(workload, *spec, text);
  }
  for (const auto& spec : specs)
    if (spec.omitted_at_default && out[spec.key] == spec.default_value) out.erase(spec.key);
  return out;
}

}  // namespace schedlab
