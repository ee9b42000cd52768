#include "core/hash.hpp"

#include <cstdio>

namespace schedlab {

std::uint64_t fnv1a64(std::string_view data) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string canonical_hash(const nlohmann::json& value) {
  // nlohmann::json objects are std::map-backed, so dump() already sorts keys.
  return hex64(fnv1a64(value.dump()));
}

}  // namespace schedlab
