#pragma once
// A write refused because its file system is full (ENOSPC, or EDQUOT: a quota is a full disk to the
// writer). `schedlab` exits kExitDiskFull on it, whatever the command, so that the daemon can tell a step
// that could not write its bundle from a step that failed; the daemon waits for space or stops on it
// (`[campaign] on_disk_full`).
#include <cerrno>
#include <filesystem>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace schedlab {

// EX_CANTCREAT (sysexits.h): "a (user specified) output file cannot be created". Neither a failure of
// the work (1) nor bad input (2), nor the daemon's own failure (75, which the unit restarts on): the
// disk needs a person or time.
inline constexpr int kExitDiskFull = 73;

inline bool is_disk_full(int err) {
  return err == ENOSPC || err == EDQUOT;
}

// A disk-full error that knows the file whose write was refused (the store's database, say), so that
// the daemon can name it and read its file system's free space.
class DiskFullError : public SystemError {
 public:
  DiskFullError(const std::string& what, int err, std::filesystem::path file)
      : SystemError(what, err), file_(std::move(file)) {}
  const std::filesystem::path& file() const noexcept { return file_; }

 private:
  std::filesystem::path file_;
};

}  // namespace schedlab
