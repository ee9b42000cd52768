#include "core/cmdline_word.hpp"

namespace schedlab {

std::string encode_cmdline_word(std::string_view value) {
  constexpr const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    // '"' too: the kernel treats a quoted stretch as one word and drops the quotes.
    if (c <= 0x20 || c >= 0x7f || c == '%' || c == '"') {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

std::optional<std::string> decode_cmdline_word(std::string_view word) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (word[i] != '%') {
      out += word[i];
      continue;
    }
    const int hi = i + 1 < word.size() ? digit(word[i + 1]) : -1,
              lo = i + 2 < word.size() ? digit(word[i + 2]) : -1;
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace schedlab
