#pragma once
// An attempt directory's files, as the daemon and the queue worker handle them: the step's bundle found
// in it, made durable before the store points at it, and set aside when the attempt is discarded.
#include <filesystem>
#include <optional>

namespace schedlab {

// The step's bundle: the one file under the attempt directory that loads as a bundle.
std::optional<std::filesystem::path> find_bundle(const std::filesystem::path& dir);
// fsyncs a directory, so that what was created or renamed in it survives a power cut: the store
// commits a step only once the disk holds what it refers to.
void sync_directory(const std::filesystem::path& dir);
// Creates `dir` and whatever is missing above it, each new directory's entry made durable in its parent.
void create_durable_directories(const std::filesystem::path& dir);
// Every directory under `dir` and `dir` itself, deepest first: the bundle's entries made durable.
void sync_tree(const std::filesystem::path& dir);
// Moves an attempt directory out of the way as ATTEMPT.discarded (ATTEMPT-2.discarded, ... when that
// is taken: an earlier store's attempt of the same name), durably. Returns where it went.
std::filesystem::path set_aside(const std::filesystem::path& attempt_dir);

}  // namespace schedlab
