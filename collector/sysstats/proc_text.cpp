#include "collector/sysstats/proc_text.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/error.hpp"

namespace schedlab {

bool parse_count(const std::string& word, std::uint64_t& out) {
  const char* end = word.data() + word.size();
  auto [ptr, ec] = std::from_chars(word.data(), end, out);
  return !word.empty() && ec == std::errc() && ptr == end;
}

int numbered(const std::string& word, const std::string& prefix) {
  if (word.size() <= prefix.size() || word.compare(0, prefix.size(), prefix) != 0) return -1;
  int n = -1;
  auto [ptr, ec] = std::from_chars(word.data() + prefix.size(), word.data() + word.size(), n);
  return ec == std::errc() && ptr == word.data() + word.size() && n >= 0 ? n : -1;
}

void malformed_line(const std::string& origin, std::size_t line, const std::string& what) {
  throw InputError(fmt::format("{}:{}: {}", origin, line, what));
}

}  // namespace schedlab
