#include "core/error.hpp"

#include <cstring>
#include <string>

namespace schedlab {

SystemError::SystemError(const std::string& what, int err)
    : Error(what + ": " + errno_text(err)), code_(err) {}

std::string errno_name(int err) {
  if (const char* name = strerrorname_np(err)) return name;
  std::string fallback = "errno ";
  fallback += std::to_string(err);
  return fallback;
}

std::string errno_text(int err) {
  std::string text = errno_name(err);
  text += " (";
  text += std::strerror(err);
  text += ")";
  return text;
}

}  // namespace schedlab
