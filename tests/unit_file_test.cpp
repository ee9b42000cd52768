// The systemd unit against daemon/unit-needs.toml, the list of what each feature needs from its
// sandbox; and against systemd itself (`systemd-analyze verify`).
#include <gtest/gtest.h>

#include <toml++/toml.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "cli_util.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;

const fs::path kUnit = SCHEDLAB_UNIT_FILE;
const fs::path kNeeds = fs::path(SCHEDLAB_SOURCE_DIR) / "daemon/unit-needs.toml";

// A unit's assignments, last one winning as systemd reads single-valued settings; list settings add
// up line by line until an empty assignment resets them.
struct Unit {
  std::map<std::string, std::vector<std::string>> values;  // "Service.Delegate" -> {"yes"}

  static Unit parse(const std::string& text) {
    Unit u;
    std::istringstream in(text);
    std::string section;
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#' || line[0] == ';') continue;
      if (line.front() == '[') {
        section = line.substr(1, line.find(']') - 1);
        continue;
      }
      const auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      u.values[section + "." + line.substr(0, eq)].push_back(line.substr(eq + 1));
    }
    return u;
  }
  std::string get(const std::string& key) const {  // [Service] key
    auto it = values.find("Service." + key);
    return it == values.end() ? "" : it->second.back();
  }
  std::vector<std::string> words(const std::string& key) const {
    std::vector<std::string> out;
    auto it = values.find("Service." + key);
    if (it == values.end()) return out;
    for (const auto& line : it->second) {
      if (line.empty()) out.clear();  // an empty assignment resets a list setting
      std::istringstream w(line);
      for (std::string word; w >> word;) out.push_back(word);
    }
    return out;
  }
};

bool yes(const std::string& v) {
  return v == "yes" || v == "true" || v == "1" || v == "on";
}

bool under(const std::string& path, const std::string& dir) {
  return path == dir || (path.rfind(dir, 0) == 0 && (dir.back() == '/' || path[dir.size()] == '/'));
}

// Why `path` would not be writable for the service, per systemd.exec(5); "" when it is.
std::string why_not_writable(const Unit& u, const std::string& path) {
  for (const auto& p : u.words("InaccessiblePaths"))
    if (under(path, p)) return "InaccessiblePaths=" + p;
  for (const auto& p : u.words("ReadOnlyPaths"))
    if (under(path, p)) return "ReadOnlyPaths=" + p;
  bool listed_rw = false;
  for (const auto& p : u.words("ReadWritePaths")) listed_rw = listed_rw || under(path, p);
  for (const auto& [key, base] : {std::pair<std::string, std::string>{"StateDirectory", "/var/lib/"},
                                  {"CacheDirectory", "/var/cache/"},
                                  {"LogsDirectory", "/var/log/"}})
    for (const auto& d : u.words(key)) listed_rw = listed_rw || under(path, base + d);
  const std::string system = u.get("ProtectSystem");
  if (!listed_rw) {
    if (system == "strict" && !under(path, "/dev") && !under(path, "/proc") && !under(path, "/sys"))
      return "ProtectSystem=strict";
    for (const char* ro : {"/usr", "/boot", "/efi"})
      if ((yes(system) || system == "full") && under(path, ro)) return "ProtectSystem=" + system;
    if (system == "full" && under(path, "/etc")) return "ProtectSystem=full";
  }
  if (yes(u.get("ProtectKernelTunables")) && (under(path, "/proc/sys") || under(path, "/sys")))
    return "ProtectKernelTunables=yes";
  if (yes(u.get("ProtectControlGroups")) && under(path, "/sys/fs/cgroup")) return "ProtectControlGroups=yes";
  const std::string home = u.get("ProtectHome");
  if ((yes(home) || home == "read-only" || home == "tmpfs") &&
      (under(path, "/home") || under(path, "/root") || under(path, "/run/user")))
    return "ProtectHome=" + home;
  if (under(path, "/dev") && !under(path, "/dev/null") && !under(path, "/dev/zero") &&
      !under(path, "/dev/urandom")) {
    if (yes(u.get("PrivateDevices"))) return "PrivateDevices=yes";
    // Any DeviceAllow= (ProtectClock adds char-rtc) closes the device policy to the pseudo devices.
    if (yes(u.get("ProtectClock"))) return "ProtectClock=yes (DeviceAllow=char-rtc closes the rest)";
    if (!u.get("DeviceAllow").empty()) return "DeviceAllow=" + u.get("DeviceAllow");
    const std::string policy = u.get("DevicePolicy");
    if (policy == "closed" || policy == "strict") return "DevicePolicy=" + policy;
  }
  return "";
}

// Why `cap` would not be in the bounding set; "" when it is.
std::string why_capability_lost(const Unit& u, const std::string& cap) {
  if (!u.get("User").empty() && u.get("User") != "root") return "User=" + u.get("User");
  if (yes(u.get("DynamicUser"))) return "DynamicUser=yes";
  const auto bounding = u.words("CapabilityBoundingSet");
  if (!bounding.empty()) {
    const bool deny = bounding.front().front() == '~';
    bool listed = false;
    for (auto c : bounding) listed = listed || (c.front() == '~' ? c.substr(1) : c) == cap;
    if (deny == listed) return "CapabilityBoundingSet";
  }
  const std::map<std::string, std::vector<std::string>> drops = {
      {"ProtectKernelLogs", {"CAP_SYSLOG"}},
      {"ProtectKernelModules", {"CAP_SYS_MODULE"}},
      {"ProtectClock", {"CAP_SYS_TIME", "CAP_WAKE_ALARM"}},
      {"PrivateDevices", {"CAP_MKNOD", "CAP_SYS_RAWIO"}}};
  for (const auto& [setting, caps] : drops)
    if (yes(u.get(setting)) && std::find(caps.begin(), caps.end(), cap) != caps.end())
      return setting + "=yes";
  return "";
}

std::string why_family_refused(const Unit& u, const std::string& family) {
  const auto families = u.words("RestrictAddressFamilies");
  if (families.empty()) return "";
  const bool deny = families.front().front() == '~';
  bool listed = false;
  for (auto f : families) listed = listed || (f.front() == '~' ? f.substr(1) : f) == family;
  return deny == listed ? "RestrictAddressFamilies" : "";
}

std::vector<std::string> strings(const toml::table& t, const char* key) {
  std::vector<std::string> out;
  if (const auto* a = t[key].as_array())
    for (const auto& e : *a) out.push_back(e.value_or(std::string()));
  return out;
}

// Every unmet need, as "feature: what takes it away".
std::vector<std::string> unmet_needs(const Unit& u, const toml::table& needs) {
  std::vector<std::string> out;
  const auto* list = needs["need"].as_array();
  if (!list) return {"unit-needs.toml has no [[need]]"};
  for (const auto& node : *list) {
    const auto& n = *node.as_table();
    const std::string feature = n["feature"].value_or(std::string("?"));
    auto miss = [&](const std::string& why) { out.push_back(feature + ": " + why); };
    for (const auto& kv : strings(n, "set")) {
      const auto eq = kv.find('=');
      if (u.get(kv.substr(0, eq)) != kv.substr(eq + 1))
        miss("needs " + kv + ", the unit has '" + u.get(kv.substr(0, eq)) + "'");
    }
    for (const auto& kv : strings(n, "forbid")) {
      const auto eq = kv.find('=');
      const std::string value = u.get(kv.substr(0, eq));
      if (value == kv.substr(eq + 1) || (yes(value) && yes(kv.substr(eq + 1)))) miss("the unit says " + kv);
    }
    for (const auto& p : strings(n, "writable"))
      if (auto why = why_not_writable(u, p); !why.empty()) miss(p + " is read-only or hidden by " + why);
    for (const auto& c : strings(n, "capabilities"))
      if (auto why = why_capability_lost(u, c); !why.empty()) miss(c + " is dropped by " + why);
    for (const auto& f : strings(n, "families"))
      if (auto why = why_family_refused(u, f); !why.empty()) miss(f + " is refused by " + why);
  }
  return out;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "  " + l + "\n";
  return out;
}

TEST(UnitFile, GivesEveryFeatureWhatItNeeds) {
  const auto unit = Unit::parse(testing::slurp(kUnit));
  const auto needs = toml::parse_file(kNeeds.string());
  ASSERT_GE(needs["need"].as_array()->size(), 10u);
  const auto unmet = unmet_needs(unit, needs);
  EXPECT_TRUE(unmet.empty()) << kUnit << " against " << kNeeds << ":\n" << join(unmet);
}

TEST(UnitFile, TheCheckCatchesEachHardeningThatWouldBreakAFeature) {
  const auto needs = toml::parse_file(kNeeds.string());
  const std::string text = testing::slurp(kUnit);
  auto unmet_with = [&](const std::string& extra) {
    return join(unmet_needs(Unit::parse(text + "[Service]\n" + extra + "\n"), needs));
  };
  EXPECT_NE(unmet_with("ProtectKernelTunables=yes").find("/proc/sys/kernel/sched_schedstats is read-only"),
            std::string::npos);
  EXPECT_NE(unmet_with("RestrictRealtime=yes").find("wakeup.policy=fifo"), std::string::npos);
  EXPECT_NE(unmet_with("ProtectKernelLogs=yes").find("CAP_SYSLOG is dropped by ProtectKernelLogs=yes"),
            std::string::npos);
  EXPECT_NE(unmet_with("ProtectClock=yes").find("/dev/cpu_dma_latency"), std::string::npos);
  EXPECT_NE(unmet_with("ProtectSystem=full").find("/boot/grub"), std::string::npos);
  const auto strict = unmet_with("ProtectSystem=strict");
  EXPECT_NE(strict.find("/boot/grub"), std::string::npos) << strict;
  EXPECT_EQ(strict.find("/var/lib/schedlab"), std::string::npos) << "StateDirectory= stays writable:\n"
                                                                 << strict;
  EXPECT_NE(unmet_with("ProtectControlGroups=yes").find("/sys/fs/cgroup is read-only"), std::string::npos);
  EXPECT_NE(unmet_with("CapabilityBoundingSet=CAP_SYS_NICE").find("CAP_PERFMON is dropped"),
            std::string::npos);
  EXPECT_NE(
      unmet_with("RestrictAddressFamilies=\nRestrictAddressFamilies=AF_UNIX").find("AF_INET is refused"),
      std::string::npos);
  EXPECT_NE(unmet_with("User=schedlab").find("dropped by User=schedlab"), std::string::npos);
}

TEST(UnitFile, RunsTheCampaignDaemonAndStopsCleanly) {
  const auto unit = Unit::parse(testing::slurp(kUnit));
  const std::string exec = unit.get("ExecStart");
  EXPECT_EQ(exec.substr(exec.find(' ') + 1), "daemon --config /etc/schedlab/campaign.toml") << exec;
  EXPECT_EQ(fs::path(exec.substr(0, exec.find(' '))).filename(), "schedlab") << exec;
  EXPECT_EQ(unit.get("KillMode"), "mixed");
  EXPECT_EQ(unit.values.count("Install.WantedBy"), 1u);
}

// #30.2: systemd restarts the daemon when it failed (a signal, or the exit status of the daemon's
// own failure, here a store it cannot open), and never when a once run is final: exit 1 (finished
// with failed steps) or 2 (bad input, or the campaign run by another daemon already), nor when it stopped
// on a full disk as its campaign said (73: a restart would find the disk full again).
TEST(UnitFile, RestartsTheDaemonOnItsOwnFailureAndNeverOnAFinishedRun) {
  const auto unit = Unit::parse(testing::slurp(kUnit));
  EXPECT_EQ(unit.get("Restart"), "on-failure");
  std::set<std::string> prevented;
  std::istringstream words(unit.get("RestartPreventExitStatus"));
  for (std::string w; words >> w;) prevented.insert(w);
  EXPECT_EQ(prevented, (std::set<std::string>{"1", "2", "73"}));
  testing::TempDir dir;
  testing::spit(dir.path() / "not-a-directory", "");
  testing::spit(dir.path() / "c.toml", "[campaign]\nname = \"x\"\nschedule = \"once\"\nstore = \"sqlite://" +
                                           (dir.path() / "not-a-directory" / "store.db").string() +
                                           "\"\noutput = \"" + (dir.path() / "out").string() +
                                           "\"\nconfigurations = [\"running\"]\n[exporter]\nlisten = \"\"\n"
                                           "[[workload]]\nname = \"yield\"\n");
  const auto o = testing::schedlab("daemon --config " + (dir.path() / "c.toml").string());
  EXPECT_NE(o.out.find("cannot open the store"), std::string::npos) << o.out;
  EXPECT_NE(o.code, 0) << o.out;
  EXPECT_EQ(prevented.count(std::to_string(o.code)), 0u) << "exit " << o.code << " is not restarted:\n"
                                                         << o.out;
}

TEST(UnitFile, SystemdAnalyzeVerifyAcceptsIt) {
  if (testing::sh("command -v systemd-analyze").code != 0)
    GTEST_SKIP() << "systemd-analyze is not installed (Debian package systemd)";
  // verify checks that ExecStart's binary exists: point it at the one just built.
  std::string text = testing::slurp(kUnit);
  const auto at = text.find("ExecStart=") + std::string("ExecStart=").size();
  text.replace(at, text.find(' ', at) - at, SCHEDLAB_BINARY);
  testing::TempDir dir;
  const auto copy = dir.path() / "schedlab.service";
  testing::spit(copy, text);
  const auto o = testing::sh("systemd-analyze verify " + copy.string());
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(o.out, "") << "systemd-analyze verify warns (an unknown key is only a warning):\n" << o.out;
}

}  // namespace
}  // namespace schedlab
