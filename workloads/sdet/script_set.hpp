#pragma once
// What sdet's users run: the scripts (bundled, plus any from sdet.script_dir), the data files they
// read, and the order in which each user runs them.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace schedlab::sdet {

struct Script {
  std::string name;  // a file name: [A-Za-z0-9._-], not starting with '.'
  std::string text;  // run as `/bin/sh FILE`
};

const std::vector<Script>& bundled_scripts();

// The bundled scripts followed by every regular file of `extra_dir` (sorted by name) when it is not
// empty. Throws InputError "sdet.script_dir: ..." for an unreadable directory, a bad or clashing name.
std::vector<Script> script_set(const std::filesystem::path& extra_dir);

// A content key of the set (names and texts, in order): the provenance of a result.
std::string script_set_hash(const std::vector<Script>& scripts);

// Indexes into a set of `set_size` scripts: user `user` runs `count` of them, going through one
// shuffle of the whole set after another, so that each user runs every script once per `set_size`
// scripts, in its own order. The shuffles are Fisher-Yates over splitmix64 seeded with (seed, user):
// the same on every standard library (std::shuffle's algorithm is not specified).
std::vector<std::size_t> user_order(std::uint64_t seed, int user, std::size_t set_size, std::size_t count);

// The data files the scripts read ($SDET_DATA): text chapters, a small C-like source tree and two
// tables (about 300 kB), the same bytes every time (a fixed generator seed, unrelated to sdet.seed).
struct DataFile {
  std::filesystem::path path;  // relative to $SDET_DATA
  std::string text;
};
std::vector<DataFile> data_files();
// A content key of the files: the name of their directory in the cache.
std::string data_hash(const std::vector<DataFile>& files);
void write_data(const std::filesystem::path& dir, const std::vector<DataFile>& files);

// Writes each script as dir/NAME.
void write_scripts(const std::filesystem::path& dir, const std::vector<Script>& scripts);

}  // namespace schedlab::sdet
