#include "core/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.hpp"

namespace schedlab {

FileLock::FileLock(const std::filesystem::path& lock_file, const std::string& busy_with) {
  fd_ = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw SystemError("open " + lock_file.string(), errno);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    if (err == EWOULDBLOCK)
      throw Error("another schedlab is " + busy_with + " (it holds " + lock_file.string() + ")");
    throw SystemError("flock " + lock_file.string(), err);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the lock
}

}  // namespace schedlab
