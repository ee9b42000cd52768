// What a daemon nobody configured exposes to the network (RELIABILITY.md, security): its exporter listens
// on loopback only, and no other address of this machine accepts a connection on its port. The
// daemon's listening sockets are read from its own /proc/PID/fd and its network namespace's
// /proc/PID/net/tcp{,6}, so the test sees every socket it holds, not only the one it means to open.
// A daemon told to listen on every interface shows the check can fail.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "daemon_process.hpp"
#include "prometheus_server.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::DaemonProcess;

constexpr int kDefaultExporterPort = 9464;  // daemon/campaign/campaign.hpp's default listen

struct ListeningSocket {
  std::string address;  // as the kernel prints it: hex, network byte order per 32-bit word
  int port = 0;
  bool ipv6 = false;
};

std::set<std::string> socket_inodes(pid_t pid) {
  std::set<std::string> inodes;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    std::error_code ec;
    const auto target = fs::read_symlink(e.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  return inodes;
}

// The TCP sockets in LISTEN (state 0A) that `pid` holds.
std::vector<ListeningSocket> listening_sockets(pid_t pid) {
  const auto inodes = socket_inodes(pid);
  std::vector<ListeningSocket> out;
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state != "0A" || !inodes.count(inode)) continue;
      const auto colon = local.find(':');
      out.push_back({local.substr(0, colon), std::stoi(local.substr(colon + 1), nullptr, 16),
                     std::string(table) == "tcp6"});
    }
  }
  return out;
}

bool loopback(const ListeningSocket& s) {
  // 127.0.0.0/8 is printed little-endian on x86 ("0100007F"); ::1 is "00000000000000000000000001000000".
  if (!s.ipv6) return s.address.size() == 8 && s.address.substr(6, 2) == "7F";
  return s.address == "00000000000000000000000001000000";
}

// This machine's addresses other than loopback, numeric.
std::vector<sockaddr_storage> other_addresses() {
  std::vector<sockaddr_storage> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (auto* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || (a->ifa_flags & IFF_LOOPBACK) || !(a->ifa_flags & IFF_UP)) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    sockaddr_storage s{};
    std::memcpy(&s, a->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    out.push_back(s);
  }
  ::freeifaddrs(list);
  return out;
}

std::string describe(const sockaddr_storage& s) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (s.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(s).sin_addr, text, sizeof text);
  else
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(s).sin6_addr, text, sizeof text);
  return text;
}

// Whether a TCP connection to `address`:`port` is accepted (2 s at most).
bool accepts(sockaddr_storage address, int port) {
  socklen_t len = sizeof(sockaddr_in);
  if (address.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(address).sin_port = htons(static_cast<std::uint16_t>(port));
  } else {
    reinterpret_cast<sockaddr_in6&>(address).sin6_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof(sockaddr_in6);
  }
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), len) == 0;
  ::close(fd);
  return connected;
}

// A daemon waiting for its next (daily) elapse, its exporter as `exporter` configures it.
std::string idle_campaign(const fs::path& dir, const std::string& exporter) {
  return testing::campaign_header("exposure", "daily", dir) + "counters = false\nsettle_timeout_s = 0\n" +
         exporter + "[[workload]]\nname = \"yield\"\nrepetitions = 1\nparams = { yields = 20000 }\n";
}

TEST(NetworkExposure, AnUnconfiguredDaemonListensOnLoopbackOnly) {
  if (testing::http_get(kDefaultExporterPort, "/metrics", 1s).status != 0)
    GTEST_SKIP() << "something already serves 127.0.0.1:" << kDefaultExporterPort
                 << "; the default cannot be tried";
  testing::TempDir dir;
  std::ofstream(dir.path() / "exposure.toml") << idle_campaign(dir.path(), "");  // no [exporter] table
  DaemonProcess daemon(dir.path() / "exposure.toml", dir.path() / "daemon.log");
  ASSERT_TRUE(testing::wait_until(
      [&] { return daemon.exited() || testing::http_get(kDefaultExporterPort, "/metrics").status == 200; },
      30s));
  ASSERT_FALSE(daemon.exited()) << daemon.log_text();

  const auto sockets = listening_sockets(daemon.pid());
  ASSERT_FALSE(sockets.empty()) << "the daemon serves /metrics, yet no listening socket of it was found";
  for (const auto& s : sockets)
    EXPECT_TRUE(loopback(s)) << "the daemon listens on " << s.address << ":" << s.port
                             << (s.ipv6 ? " (tcp6)" : "");

  const auto others = other_addresses();
  for (const auto& a : others)
    EXPECT_FALSE(accepts(a, kDefaultExporterPort))
        << describe(a) << " accepts a connection on the exporter's port";
  std::cout << "listening sockets: " << sockets.size() << ", non-loopback addresses tried: " << others.size()
            << "\n";
}

TEST(NetworkExposure, EveryInterfaceIsListenedOnOnlyWhenTheCampaignSaysSo) {
  testing::TempDir dir;
  const int port = testing::free_port();
  std::ofstream(dir.path() / "exposure.toml")
      << idle_campaign(dir.path(), "[exporter]\nlisten = \"0.0.0.0:" + std::to_string(port) + "\"\n");
  DaemonProcess daemon(dir.path() / "exposure.toml", dir.path() / "daemon.log");
  ASSERT_TRUE(testing::wait_until(
      [&] { return daemon.exited() || testing::http_get(port, "/metrics").status == 200; }, 30s));
  ASSERT_FALSE(daemon.exited()) << daemon.log_text();
  const auto sockets = listening_sockets(daemon.pid());
  ASSERT_EQ(sockets.size(), 1u);
  EXPECT_EQ(sockets[0].port, port);
  EXPECT_FALSE(loopback(sockets[0])) << sockets[0].address;
  for (const auto& a : other_addresses()) {
    if (a.ss_family == AF_INET) {
      EXPECT_TRUE(accepts(a, port)) << describe(a);
    }
  }
}

}  // namespace
}  // namespace schedlab
