#include "workloads/common/socket_io.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.hpp"

namespace schedlab {
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

}  // namespace

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Fd listen_on_loopback(int port, int backlog, const std::string& what) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw SystemError(what + ": socket", errno);
  const int one = 1;
  // A port of an earlier run still in TIME_WAIT is free for a new listener.
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  auto addr = loopback(port);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw SystemError(what + ": bind 127.0.0.1:" + std::to_string(port), errno);
  if (::listen(fd.get(), backlog) != 0) throw SystemError(what + ": listen", errno);
  return fd;
}

int local_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) throw SystemError("getsockname", errno);
  return ntohs(a.sin_port);
}

void check_port_free(int port, const std::string& what) {
  if (port == 0) return;
  try {
    listen_on_loopback(port, 1, what);
  } catch (const SystemError& e) {
    if (e.code() == EADDRINUSE || e.code() == EACCES)
      throw InputError(what + ": 127.0.0.1:" + std::to_string(port) + " cannot be used (" +
                       errno_text(e.code()) + "); choose another port, or 0 for any free one");
    throw;
  }
}

Fd connect_to_loopback(int port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw SystemError("socket", errno);
  auto addr = loopback(port);
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) throw SystemError("connect 127.0.0.1:" + std::to_string(port), errno);
  return fd;
}

void set_tcp_nodelay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    throw SystemError("setsockopt(TCP_NODELAY)", errno);
}

bool read_exact(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw SystemError("read", errno);
    if (r == 0) {
      if (got == 0) return false;
      throw Error("connection closed inside a message (" + std::to_string(got) + " of " + std::to_string(n) +
                  " bytes)");
    }
    got += static_cast<std::size_t>(r);
  }
  return true;
}

bool skip_exact(int fd, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    // With MSG_TRUNC a TCP socket drops the bytes instead of copying them; the buffer is unused.
    ssize_t r = ::recv(fd, nullptr, n - got, MSG_WAITALL | MSG_TRUNC);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw SystemError("recv", errno);
    if (r == 0) {
      if (got == 0) return false;
      throw Error("connection closed inside a message");
    }
    got += static_cast<std::size_t>(r);
  }
  return true;
}

void write_exact(int fd, const void* buf, std::size_t n) {
  const auto* p = static_cast<const char*>(buf);
  std::size_t sent = 0;
  while (sent < n) {
    // MSG_NOSIGNAL: a peer that went away is an error to report, not a SIGPIPE that kills us.
    ssize_t r = ::send(fd, p + sent, n - sent, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw SystemError("send", errno);
    sent += static_cast<std::size_t>(r);
  }
}

}  // namespace schedlab
