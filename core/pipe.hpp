#pragma once
// An O_CLOEXEC pipe that closes its ends when it goes out of scope; either end can be closed early
// (a parent closing the end its child uses).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.hpp"

namespace schedlab {

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("pipe2", errno);
    read = fds[0];
    write = fds[1];
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (read >= 0) ::close(read);
    read = -1;
  }
  void close_write() {
    if (write >= 0) ::close(write);
    write = -1;
  }
};

}  // namespace schedlab
