#pragma once
// A value carried as one word of a kernel command line (schedlab.repo=/home/me/my linux): the kernel
// splits its command line at whitespace and /proc/cmdline shows it as written, so a space, a '%' or a
// byte outside printable ASCII is written as %XX and read back from it.
#include <optional>
#include <string>
#include <string_view>

namespace schedlab {

std::string encode_cmdline_word(std::string_view value);

// nullopt for a '%' not followed by two hex digits (a word nobody encoded).
std::optional<std::string> decode_cmdline_word(std::string_view word);

}  // namespace schedlab
