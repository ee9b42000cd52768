#pragma once
// sdet's scratch directory: a fresh directory under the system's temporary directory ($TMPDIR, else
// /tmp), removed with everything in it when the object goes.
#include <filesystem>
#include <string>

namespace schedlab::sdet {

class Scratch {
 public:
  // Creates TMPDIR/schedlab-sdet-XXXXXX; throws SystemError naming it.
  Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // Retries for up to 2 s: after a failed run, a command of a killed user's shell may still be
  // writing into its directory for a moment.
  ~Scratch();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The kind of file system `path` is on ("tmpfs", "ext4", ..., else statfs's magic number in hex):
// file creation and removal cost what that file system makes them cost.
std::string filesystem_type(const std::filesystem::path& path);

}  // namespace schedlab::sdet
