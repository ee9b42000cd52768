#pragma once
#include <filesystem>

#include "core/result.hpp"

namespace schedlab {

// The text of the file write_bundle writes: schedlab.result/2 in its file form (bundle_encoding.hpp).
std::string bundle_file_text(const Bundle& bundle);

// Serialises, checks that the text reads back as a valid bundle, then writes it atomically.
// Never overwrites an existing file.
void write_bundle(const std::filesystem::path& path, const Bundle& bundle);

// Reads and validates; throws BundleError (an InputError) naming the file and JSON path.
Bundle load_bundle(const std::filesystem::path& path);
Bundle parse_bundle(const std::string& text, const std::string& source);

}  // namespace schedlab
