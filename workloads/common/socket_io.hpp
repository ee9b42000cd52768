#pragma once
// TCP on loopback for the socket workloads (tbench, chat): listening, connecting, and reading or
// writing an exact number of bytes. Every failure throws SystemError naming the call.
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace schedlab {

// A file descriptor closed at scope exit.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

 private:
  int fd_ = -1;
};

// A listening TCP socket on 127.0.0.1:port (0: any free port). `what` names the socket in errors.
Fd listen_on_loopback(int port, int backlog, const std::string& what);
int local_port(int fd);
// Throws InputError "WHAT: 127.0.0.1:PORT is in use" when the port cannot be bound; port 0 passes.
void check_port_free(int port, const std::string& what);

Fd connect_to_loopback(int port);
void set_tcp_nodelay(int fd);  // tbench sets it: every request leaves at once, no Nagle delay

// Reads exactly n bytes. Returns false on end of file before the first byte (the peer closed
// between messages); throws on an error or on end of file inside the message.
bool read_exact(int fd, void* buf, std::size_t n);
// Reads and discards n bytes without copying them out of the kernel (recv MSG_TRUNC, as tbench's
// client does for a reply's body); false on end of file.
bool skip_exact(int fd, std::size_t n);
void write_exact(int fd, const void* buf, std::size_t n);

}  // namespace schedlab
