#pragma once
// The exporter's listen address: numeric "IPV4:PORT" or "[IPV6]:PORT" only, so that every interface is
// listened on only when the text says so ("0.0.0.0:9464", "[::]:9464"); civetweb would read a bare
// "9464" or ":9464" as every interface.
#include <string>

namespace schedlab {

struct ListenAddress {
  std::string text;  // as configured
  std::string host;  // without brackets
  int port = 0;      // 0: any free port
  bool ipv6 = false;
  bool wildcard = false;         // 0.0.0.0 or ::, written so
  std::string civetweb() const;  // civetweb's listening_ports spelling
};

// Throws InputError naming the text and the expected form.
ListenAddress parse_listen(const std::string& text);

// Binds a probe socket to the address and closes it, so that a failure is reported with its errno
// (civetweb only says that it could not start). Throws SystemError naming the address.
void probe_bind(const ListenAddress& address);

// Opens and closes one connection to the address on `port` (a wildcard address through its loopback),
// ignoring failures: it wakes a listener blocked in poll().
void poke(const ListenAddress& address, int port);

}  // namespace schedlab
