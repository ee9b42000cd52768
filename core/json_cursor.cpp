#include "core/json_cursor.hpp"

#include <cmath>

namespace schedlab {
namespace {

std::string describe(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// JSON pointer escaping (RFC 6901).
std::string escape_key(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string JsonCursor::child_path(const std::string& key) const {
  return path_ + "/" + escape_key(key);
}

void JsonCursor::fail(const std::string& key, const std::string& message) const {
  std::string where = key.empty() ? path_ : child_path(key);
  if (where.empty()) where = "/";
  throw BundleError(source_ + ": " + where + ": " + message);
}

void JsonCursor::expect_object() const {
  if (!value_.is_object()) fail("", "expected an object, got " + describe(value_));
}

JsonCursor JsonCursor::field(const std::string& key) const {
  expect_object();
  auto it = value_.find(key);
  if (it == value_.end()) fail(key, "missing required field");
  return JsonCursor(*it, source_, child_path(key));
}

JsonCursor JsonCursor::element(std::size_t i) const {
  return JsonCursor(value_.at(i), source_, path_ + "/" + std::to_string(i));
}

std::string JsonCursor::string(const std::string& key) const {
  auto f = field(key);
  if (!f.value_.is_string()) fail(key, "expected a string, got " + describe(f.value_));
  return f.value_.get<std::string>();
}

std::string JsonCursor::optional_string(const std::string& key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

double JsonCursor::number(const std::string& key) const {
  auto f = field(key);
  if (!f.value_.is_number()) fail(key, "expected a number, got " + describe(f.value_));
  double v = f.value_.get<double>();
  if (!std::isfinite(v)) fail(key, "expected a finite number");
  return v;
}

double JsonCursor::duration(const std::string& key) const {
  double v = number(key);
  if (v < 0) fail(key, "a duration cannot be negative, got " + describe(value_.at(key)));
  return v;
}

std::int64_t JsonCursor::integer(const std::string& key, std::int64_t min) const {
  auto f = field(key);
  if (!f.value_.is_number_integer()) fail(key, "expected an integer, got " + describe(f.value_));
  auto v = f.value_.get<std::int64_t>();
  if (v < min) fail(key, "expected an integer >= " + std::to_string(min) + ", got " + std::to_string(v));
  return v;
}

bool JsonCursor::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  auto f = field(key);
  if (!f.value_.is_boolean()) fail(key, "expected true or false, got " + describe(f.value_));
  return f.value_.get<bool>();
}

JsonCursor JsonCursor::object(const std::string& key) const {
  auto f = field(key);
  if (!f.value_.is_object()) fail(key, "expected an object, got " + describe(f.value_));
  return f;
}

JsonCursor JsonCursor::array(const std::string& key) const {
  auto f = field(key);
  if (!f.value_.is_array()) fail(key, "expected an array, got " + describe(f.value_));
  return f;
}

}  // namespace schedlab
