#pragma once
// What the /proc sources share: one file read and parsed, or why not; and a system-scope counter that
// is either a value or `unsupported` with the reason and errno.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/result.hpp"

namespace schedlab {

template <typename T>
struct ProcReading {
  std::optional<T> value;
  int error_number = 0;
  std::string reason;
};

// `parse(text, path)` throws InputError on malformed content; that becomes the reason.
template <typename T, typename Parse>
ProcReading<T> read_proc(const std::filesystem::path& path, Parse parse) {
  ProcReading<T> r;
  errno = 0;
  std::ifstream in(path);
  if (!in) {
    r.error_number = errno != 0 ? errno : ENOENT;
    r.reason = fmt::format("cannot read {}: {}", path.string(), std::strerror(r.error_number));
    return r;
  }
  std::ostringstream text;
  text << in.rdbuf();
  try {
    r.value = parse(text.str(), path.string());
  } catch (const InputError& e) {
    r.reason = e.what();
  }
  return r;
}

// Why a pair of readings has no delta: the first failure's reason and errno.
template <typename T>
std::pair<std::string, int> why_not(const ProcReading<T>& before, const ProcReading<T>& after) {
  return before.value ? std::pair{after.reason, after.error_number}
                      : std::pair{before.reason, before.error_number};
}

inline CounterReading system_counter(const std::string& unit, std::optional<double> value,
                                     const std::pair<std::string, int>& why) {
  CounterReading c;
  c.unit = unit;
  c.scope = "system";
  if (value) {
    c.value = *value;
  } else {
    c.status = status::kUnsupported;
    c.error_number = why.second;
    c.reason =
        why.first.empty() ? "the counter went backwards (reset, or a CPU came back online)" : why.first;
  }
  return c;
}

}  // namespace schedlab
