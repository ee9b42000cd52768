#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace schedlab {

// Writes `content` to `path` so that a reader sees either nothing or the whole file:
// a temporary in the same directory, fsync, then rename; the directory is fsynced too.
// With `replace` false an existing file is never overwritten (InputError instead).
// The file is 0644 whatever the umask: bundles, records, reports and recipes are read by the lab's
// people and tools under other users, and none of them holds a secret (RELIABILITY.md, file modes).
void write_file_atomic(const std::filesystem::path& path, std::string_view content, bool replace = false);

// "" when `word`, taken from a file schedlab did not write (a recipe, a kernel image), can be one component
// of a path it writes: not empty, no '/', no control character, not starting with '.' (so not "..").
// Otherwise why not, e.g. "contains '/'".
std::string why_not_a_file_name_word(std::string_view word);

}  // namespace schedlab
