#include "daemon/exporter/listen.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "core/error.hpp"

namespace schedlab {

namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw InputError("exporter listen \"" + text + "\": " + why +
                   "; expected a numeric IPV4:PORT or [IPV6]:PORT such as 127.0.0.1:9464 (write 0.0.0.0:9464 "
                   "to listen on every interface), or \"\" for no exposer");
}

}  // namespace

std::string ListenAddress::civetweb() const {
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ListenAddress parse_listen(const std::string& text) {
  ListenAddress a;
  a.text = text;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      bad(text, "an IPv6 address needs the form [ADDRESS]:PORT");
    a.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    a.ipv6 = true;
    in6_addr v6{};
    if (::inet_pton(AF_INET6, a.host.c_str(), &v6) != 1)
      bad(text, "\"" + a.host + "\" is not an IPv6 address");
    a.wildcard = IN6_IS_ADDR_UNSPECIFIED(&v6);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) bad(text, "no address before the port");
    a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    in_addr v4{};
    if (::inet_pton(AF_INET, a.host.c_str(), &v4) != 1)
      bad(text, "\"" + a.host + "\" is not a numeric IPv4 address");
    a.wildcard = v4.s_addr == htonl(INADDR_ANY);
  }
  const auto* end = port.data() + port.size();
  auto [p, ec] = std::from_chars(port.data(), end, a.port);
  if (port.empty() || ec != std::errc() || p != end || a.port < 0 || a.port > 65535)
    bad(text, "\"" + port + "\" is not a port number (0-65535)");
  return a;
}

void probe_bind(const ListenAddress& a) {
  const int fd = ::socket(a.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw SystemError("exporter: socket for " + a.text, errno);
  // As civetweb does: a port in TIME_WAIT from a previous daemon is free to take.
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc = 0;
  if (a.ipv6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(static_cast<std::uint16_t>(a.port));
    ::inet_pton(AF_INET6, a.host.c_str(), &sa.sin6_addr);
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(a.port));
    ::inet_pton(AF_INET, a.host.c_str(), &sa.sin_addr);
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  }
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw SystemError("exporter: cannot listen on " + a.text, err);
}

void poke(const ListenAddress& a, int port) {
  const int fd = ::socket(a.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  if (a.ipv6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(static_cast<std::uint16_t>(port));
    sa.sin6_addr = in6addr_loopback;
    if (!a.wildcard) ::inet_pton(AF_INET6, a.host.c_str(), &sa.sin6_addr);
    ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!a.wildcard) ::inet_pton(AF_INET, a.host.c_str(), &sa.sin_addr);
    ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  }
  ::close(fd);
}

}  // namespace schedlab
