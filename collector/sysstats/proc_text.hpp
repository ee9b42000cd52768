#pragma once
// The lexical pieces every /proc table parser needs: lines as words, counts, numbered names, and errors
// that name the file and line.
#include <cstdint>
#include <string>
#include <vector>

#include "core/host_paths.hpp"

namespace schedlab {

// Calls fn(line_number, words) for every line that has words; lines are numbered from 1.
template <typename Fn>
void for_each_line(const std::string& text, Fn fn) {
  std::size_t line_no = 0, start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    auto words = split_ws(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (!words.empty()) fn(line_no, words);
  }
}

bool parse_count(const std::string& word, std::uint64_t& out);     // a whole decimal word
int numbered(const std::string& word, const std::string& prefix);  // "cpu12", "cpu" -> 12; else -1
[[noreturn]] void malformed_line(const std::string& origin, std::size_t line, const std::string& what);

}  // namespace schedlab
