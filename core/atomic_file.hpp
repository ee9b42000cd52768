#pragma once
#include <filesystem>
#include <string_view>

namespace schedlab {

// Writes `content` to `path` so that a reader sees either nothing or the whole file:
// a temporary in the same directory, fsync, then rename; the directory is fsynced too.
// With `replace` false an existing file is never overwritten (InputError instead).
void write_file_atomic(const std::filesystem::path& path, std::string_view content, bool replace = false);

}  // namespace schedlab
