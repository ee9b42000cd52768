#pragma once
// Path-aware access to a JSON document being validated: every error names the file and
// the JSON pointer of the offending field.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace schedlab {

class BundleError : public InputError {
 public:
  using InputError::InputError;
};

class JsonCursor {
 public:
  JsonCursor(const nlohmann::json& value, std::string source, std::string path = "")
      : value_(value), source_(std::move(source)), path_(std::move(path)) {}

  const nlohmann::json& value() const { return value_; }
  const std::string& path() const { return path_; }
  bool has(const std::string& key) const { return value_.is_object() && value_.contains(key); }

  JsonCursor field(const std::string& key) const;  // required
  JsonCursor element(std::size_t i) const;

  std::string string(const std::string& key) const;
  std::string optional_string(const std::string& key, const std::string& fallback = "") const;
  double number(const std::string& key) const;    // finite
  double duration(const std::string& key) const;  // finite and >= 0
  std::int64_t integer(const std::string& key, std::int64_t min = INT64_MIN) const;
  bool boolean(const std::string& key, bool fallback) const;
  JsonCursor object(const std::string& key) const;
  JsonCursor array(const std::string& key) const;
  std::size_t size() const { return value_.size(); }

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  void expect_object() const;

 private:
  std::string child_path(const std::string& key) const;
  const nlohmann::json& value_;
  std::string source_;
  std::string path_;
};

}  // namespace schedlab
