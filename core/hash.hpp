#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace schedlab {

// FNV-1a, 64 bit: a content key for parameters and configurations, not a security hash.
std::uint64_t fnv1a64(std::string_view data);
std::string hex64(std::uint64_t v);

// Hash of a JSON value in canonical form (object keys sorted, no whitespace).
std::string canonical_hash(const nlohmann::json& value);

}  // namespace schedlab
