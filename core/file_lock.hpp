#pragma once
// An exclusive flock() on a lock file, held for the life of the object. The kernel drops it when the
// process dies, so a killed holder never leaves it held. A second holder is refused at once with an
// error naming what the first one is doing (`busy_with`), rather than both writing one directory.
#include <filesystem>
#include <string>

namespace schedlab {

class FileLock {
 public:
  // Throws Error "another schedlab is BUSY_WITH (it holds LOCK_FILE)" when another process holds it.
  FileLock(const std::filesystem::path& lock_file, const std::string& busy_with);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace schedlab
