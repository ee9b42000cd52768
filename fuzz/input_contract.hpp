#pragma once
// The contract every parser of untrusted input keeps, which each fuzz target checks: it returns, or it
// throws InputError whose message names the input (the file, or the source it was told), so that the
// CLI can exit 2 with a message a person can act on. Anything else escaping the parser (std::out_of_range
// from a std::stoul, a JSON type_error, a bad_alloc from a length read off the input) is a defect: the
// user would see an exit 1 with a message naming nothing. libFuzzer reports an escaping exception and
// the abort below as crashes, and keeps the input.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace schedlab::fuzz {

template <class Parse>
void parsed_or_input_error(const std::string& source, Parse&& parse) {
  try {
    parse();
  } catch (const InputError& e) {
    if (std::string_view(e.what()).find(source) == std::string_view::npos) {
      std::fprintf(stderr, "InputError does not name its input %s: %s\n", source.c_str(), e.what());
      std::abort();
    }
  }
}

inline std::string as_text(const unsigned char* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A directory of this process's own under TMPDIR, made once, for the loaders that read files.
std::filesystem::path scratch_dir();

// Replaces `file` with `bytes` (the loaders read files, not strings).
void write_file(const std::filesystem::path& file, std::string_view bytes);

}  // namespace schedlab::fuzz
