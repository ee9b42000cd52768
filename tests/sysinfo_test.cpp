// sysinfo against a real capture (tests/fixtures/vm-6.18, see its README) and derived copies of it.
#include "collector/sysinfo/sysinfo.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/hash.hpp"
#include "schedlab/build_info.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixture = fs::path(SCHEDLAB_FIXTURES_DIR) / "vm-6.18";

using testing::TempDir;

// A copy of the capture in which one file is replaced: a derived root, not a new fixture.
class DerivedRoot {
 public:
  explicit DerivedRoot(const fs::path& capture = kFixture) {
    fs::copy(capture, dir_.path(), fs::copy_options::recursive);
  }
  void write(const std::string& relative, const std::string& content) {
    std::ofstream(dir_.path() / relative, std::ios::trunc) << content;
  }
  std::string read(const std::string& relative) const {
    return read_text(dir_.path() / relative).value_or("");
  }
  HostPaths paths() const { return HostPaths::under(dir_.path()); }

 private:
  TempDir dir_;
};

class SysinfoFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(fs::exists(kFixture / "proc/cpuinfo")) << "fixture missing at " << kFixture;
    report_ = new SysinfoReport(collect_sysinfo(HostPaths::under(kFixture)));
  }
  static void TearDownTestSuite() {
    delete report_;
    report_ = nullptr;
  }
  static const SysinfoReport& r() { return *report_; }

 private:
  static SysinfoReport* report_;
};
SysinfoReport* SysinfoFixture::report_ = nullptr;

TEST_F(SysinfoFixture, BootId) {
  // proc/sys/kernel/random/boot_id: "1afc297f-a422-4a97-86a4-d1a89098b046"
  EXPECT_EQ(r().boot_id, "1afc297f-a422-4a97-86a4-d1a89098b046");
}

TEST_F(SysinfoFixture, HostFromCpuinfoAndMeminfo) {
  const json& h = r().host;
  EXPECT_EQ(h["hostname"], "vm");          // proc/sys/kernel/hostname: "vm"
  EXPECT_EQ(h["cpu_model"], "AMD EPYC");   // proc/cpuinfo: "model name	: AMD EPYC"
  EXPECT_EQ(h["microcode"], "0x1000065");  // proc/cpuinfo: "microcode	: 0x1000065"
  EXPECT_EQ(h["vendor"], "AuthenticAMD");  // proc/cpuinfo: "vendor_id	: AuthenticAMD"
  EXPECT_EQ(h["memory_kib"], 24684096);    // proc/meminfo: "MemTotal:       24684096 kB"
  ASSERT_TRUE(h["fingerprint"].is_string());
  EXPECT_EQ(h["fingerprint"].get<std::string>().size(), 16u);
}

TEST_F(SysinfoFixture, Topology) {
  const json& t = r().host["topology"];
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["online_cpus"], 2);  // sys/devices/system/cpu/online: "0-1"
  // cpu{0,1}/topology/thread_siblings_list: "0" and "1" -> no SMT siblings
  EXPECT_EQ(t["smt_active"], false);
  EXPECT_EQ(t["llc_groups"], 1);  // cpu{0,1}/cache/index3: level "3", type "Unified", shared_cpu_list "0-1"
  EXPECT_EQ(t["numa_nodes"], 1);  // sys/devices/system/node/node0/cpulist: "0-1"
}

TEST_F(SysinfoFixture, VirtualizationFromCpuFlagAndClocksource) {
  const json& v = r().host["virtualization"];
  // proc/cpuinfo flags: "... rdrand hypervisor lahf_lm ..."
  EXPECT_EQ(v["virtualized"], true);
  // clocksource0/available_clocksource: "tsc kvm-clock " (no /sys/hypervisor, no DMI on Firecracker)
  EXPECT_EQ(v["hypervisor"], "KVM");
  const auto evidence = v["evidence"].get<std::string>();
  EXPECT_NE(evidence.find("cpuinfo flags: hypervisor"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("clocksource: kvm-clock"), std::string::npos) << evidence;
}

TEST_F(SysinfoFixture, KernelIdentity) {
  const json& k = r().kernel;
  EXPECT_EQ(k["release"], "6.18.44-fc-v595");            // proc/sys/kernel/osrelease
  EXPECT_EQ(k["version"], "#1 SMP PREEMPT_DYNAMIC @0");  // proc/sys/kernel/version
  // proc/cmdline: "mitigations=auto,no_guest_host,no_guest_guest console=ttyS0 quiet ..."
  EXPECT_EQ(
      k["cmdline"].get<std::string>().rfind("mitigations=auto,no_guest_host,no_guest_guest console=ttyS0", 0),
      0u);
  // /boot is empty on this VM; proc/config.gz (captured as is) holds "CONFIG_HZ=250".
  EXPECT_EQ(k["hz"], 250);
  EXPECT_EQ(k["hz_source"], "config");
  EXPECT_EQ(k["config_source"], "proc/config.gz");
  EXPECT_TRUE(k["config_hash"].is_string());
  // "CONFIG_PREEMPT_DYNAMIC=y" with "CONFIG_PREEMPT_NONE=y" built in; no debugfs, no preempt= on the cmdline.
  EXPECT_EQ(k["preempt"], "dynamic:none");
  EXPECT_EQ(k["preempt_source"], "config");
}

TEST_F(SysinfoFixture, ClocksourceAndMitigations) {
  const json& k = r().kernel;
  EXPECT_EQ(k["clocksource"]["current"], "tsc");  // current_clocksource: "tsc"
  EXPECT_EQ(k["clocksource"]["available"], json({"tsc", "kvm-clock"}));
  const json& m = k["mitigations"];
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m.size(), 19u);                         // 19 files in sys/devices/system/cpu/vulnerabilities/
  EXPECT_EQ(m["spec_store_bypass"], "Vulnerable");  // spec_store_bypass: "Vulnerable"
  EXPECT_EQ(m["meltdown"], "Not affected");         // meltdown: "Not affected"
  // spectre_v2: "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not
  // affected"
  EXPECT_EQ(
      m["spectre_v2"],
      "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected");
}

TEST_F(SysinfoFixture, Environment) {
  const json& e = r().environment;
  EXPECT_EQ(e["load_avg"], json({0.60, 0.19, 0.10}));  // proc/loadavg: "0.60 0.19 0.10 3/90 3618"
  EXPECT_EQ(e["procs_running"], 3);
  EXPECT_EQ(e["procs_total"], 90);
  EXPECT_EQ(e["governor"], "none");                 // no cpu*/cpufreq/scaling_governor on this VM
  EXPECT_EQ(e["boost"], "unknown");                 // no cpufreq/boost, intel_pstate or policy*/boost
  EXPECT_EQ(e["smt"]["control"], "notsupported");   // smt/control: "notsupported"
  EXPECT_EQ(e["smt"]["active"], false);             // smt/active: "0"
  EXPECT_EQ(e["thp"]["enabled"], "madvise");        // enabled: "always [madvise] never"
  EXPECT_EQ(e["thp"]["defrag"], "madvise");         // defrag: "always defer defer+madvise [madvise] never"
  EXPECT_EQ(e["numa_balancing"], 0);                // proc/sys/kernel/numa_balancing: "0"
  EXPECT_EQ(e["autogroup"], true);                  // proc/sys/kernel/sched_autogroup_enabled: "1"
  EXPECT_TRUE(e["isolcpus"]["cmdline"].is_null());  // no isolcpus= in proc/cmdline
  EXPECT_EQ(e["isolcpus"]["sysfs"], "");            // sys/devices/system/cpu/isolated: "" (empty line)
  EXPECT_TRUE(e["nohz_full"]["sysfs"].is_null());   // no sys/devices/system/cpu/nohz_full
  // proc/stat: "cpu0 1771 0 1009 56580 60 0 5 75 0 0" and "cpu1 3367 0 1741 53047 1137 0 40 113 0 0"
  EXPECT_EQ(e["steal_ticks"], json({{"cpu0", 75}, {"cpu1", 113}}));
}

TEST_F(SysinfoFixture, Configuration) {
  const json& c = r().configuration;
  EXPECT_EQ(c["kernel_release"], "6.18.44-fc-v595");
  EXPECT_EQ(c["scheduler"], "eevdf");  // release 6.18 >= 6.6, no sys/kernel/sched_ext
  EXPECT_EQ(c["sched_debugfs"], false);
  EXPECT_TRUE(c["sched_features"].is_null());
  const json& t = c["sched_tunables"];
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t.size(), 7u);                        // the 7 proc/sys/kernel/sched_* files
  EXPECT_EQ(t["sched_rr_timeslice_ms"], "100");   // sched_rr_timeslice_ms: "100"
  EXPECT_EQ(t["sched_rt_runtime_us"], "950000");  // sched_rt_runtime_us: "950000"
  EXPECT_EQ(t["sched_cfs_bandwidth_slice_us"], "5000");
  EXPECT_EQ(c["governor"], "none");
  EXPECT_EQ(c["boost"], "unknown");
  ASSERT_TRUE(c["hash"].is_string());
  json rest = c;
  rest.erase("hash");
  EXPECT_EQ(c["hash"], canonical_hash(rest));
}

TEST_F(SysinfoFixture, Provenance) {
  const json& p = r().provenance;
  EXPECT_EQ(p["suite_version"], build_info::kVersion);
  EXPECT_EQ(p["suite_git_sha"], build_info::kGitSha);
  EXPECT_EQ(p["suite_git_dirty"], build_info::kGitDirty);
  EXPECT_EQ(p["build_type"], build_info::kBuildType);
  ASSERT_TRUE(p["glibc"].is_string());
  EXPECT_FALSE(p["glibc"].get<std::string>().empty());
}

TEST_F(SysinfoFixture, FixtureWarnsOnlyAboutTheVirtualMachine) {
  // Load 0.60 on 2 CPUs is quiet, no cpufreq, SMT off, boost unknown: only the VM is worth a warning.
  EXPECT_EQ(
      noise_warnings(r().environment, r().host),
      std::vector<std::string>{"running in a virtual machine (KVM): expect ±25% drift between batches"});
}

TEST(Sysinfo, MissingFilesGiveNullOrUnknown) {
  TempDir empty;
  SysinfoReport r;
  ASSERT_NO_THROW(r = collect_sysinfo(HostPaths::under(empty.path())));
  EXPECT_EQ(r.boot_id, "unknown");
  for (const char* key :
       {"hostname", "cpu_model", "microcode", "vendor", "memory_kib", "topology", "fingerprint"})
    EXPECT_TRUE(r.host[key].is_null()) << key;
  EXPECT_TRUE(r.host["virtualization"]["virtualized"].is_null());
  EXPECT_EQ(r.host["virtualization"]["hypervisor"], "");
  for (const char* key : {"release", "version", "cmdline", "hz", "config_hash", "mitigations"})
    EXPECT_TRUE(r.kernel[key].is_null()) << key;
  EXPECT_EQ(r.kernel["preempt"], "unknown");
  EXPECT_TRUE(r.kernel["clocksource"]["current"].is_null());
  for (const char* key :
       {"load_avg", "procs_running", "procs_total", "numa_balancing", "autogroup", "steal_ticks"})
    EXPECT_TRUE(r.environment[key].is_null()) << key;
  EXPECT_EQ(r.environment["governor"], "unknown");
  EXPECT_EQ(r.environment["boost"], "unknown");
  EXPECT_TRUE(r.environment["smt"]["active"].is_null());
  EXPECT_TRUE(r.environment["thp"]["enabled"].is_null());
  EXPECT_EQ(r.configuration["scheduler"], "unknown");
  EXPECT_TRUE(r.configuration["sched_tunables"].is_null());
  EXPECT_TRUE(r.configuration["hash"].is_string());
  EXPECT_TRUE(noise_warnings(r.environment, r.host).empty());
}

TEST(Sysinfo, LoadAverageWarning) {
  const auto r = collect_sysinfo(HostPaths::under(kFixture));
  json busy = r.environment;
  busy["load_avg"] = {1.73, 0.9, 0.4};
  auto warnings = noise_warnings(busy, r.host);
  EXPECT_NE(
      std::find(warnings.begin(), warnings.end(), "load average 1.73 at start is above 0.5 per CPU (2 CPUs)"),
      warnings.end());
  json quiet = r.environment;
  quiet["load_avg"] = {0.05, 0.02, 0.0};
  for (const auto& w : noise_warnings(quiet, r.host))
    EXPECT_EQ(w.find("load average"), std::string::npos) << w;
}

TEST(Sysinfo, GovernorSmtAndBoostWarnings) {
  const json host = {{"topology", {{"online_cpus", 4}}}, {"virtualization", {{"virtualized", false}}}};
  const json env = {{"load_avg", {0.1, 0.1, 0.1}},
                    {"governor", "powersave"},
                    {"boost", "on"},
                    {"smt", {{"control", "on"}, {"active", true}}}};
  EXPECT_EQ(noise_warnings(env, host),
            (std::vector<std::string>{"cpufreq governor is 'powersave', not 'performance'", "SMT is on",
                                      "boost is on"}));
}

TEST(Sysinfo, FingerprintIgnoresHostnameButNotMicrocode) {
  const auto original = collect_sysinfo(HostPaths::under(kFixture));
  DerivedRoot renamed;
  renamed.write("proc/sys/kernel/hostname", "another-name\n");
  const auto other = collect_sysinfo(renamed.paths());
  EXPECT_EQ(other.host["hostname"], "another-name");
  EXPECT_EQ(other.host["fingerprint"], original.host["fingerprint"]);

  DerivedRoot updated;
  std::string cpuinfo = updated.read("proc/cpuinfo");
  for (auto pos = cpuinfo.find("0x1000065"); pos != std::string::npos; pos = cpuinfo.find("0x1000065"))
    cpuinfo.replace(pos, 9, "0x1000066");
  updated.write("proc/cpuinfo", cpuinfo);
  EXPECT_NE(collect_sysinfo(updated.paths()).host["fingerprint"], original.host["fingerprint"]);
}

TEST(Sysinfo, ConfigurationHashFollowsSchedTunables) {
  const auto original = collect_sysinfo(HostPaths::under(kFixture));
  DerivedRoot same;
  EXPECT_EQ(collect_sysinfo(same.paths()).configuration["hash"], original.configuration["hash"]);
  DerivedRoot tuned;
  tuned.write("proc/sys/kernel/sched_rr_timeslice_ms", "90\n");
  const auto changed = collect_sysinfo(tuned.paths());
  EXPECT_EQ(changed.configuration["sched_tunables"]["sched_rr_timeslice_ms"], "90");
  EXPECT_NE(changed.configuration["hash"], original.configuration["hash"]);
}

TEST(Sysinfo, ConfigurationHashIgnoresInitArguments) {
  DerivedRoot root;
  const auto original = collect_sysinfo(root.paths());
  // Everything after " -- " on proc/cmdline goes to init (on this VM: ports and flags of its agent).
  root.write("proc/cmdline", trim(root.read("proc/cmdline")) + " --another-init-flag\n");
  const auto changed = collect_sysinfo(root.paths());
  EXPECT_NE(changed.kernel["cmdline"], original.kernel["cmdline"]);
  EXPECT_EQ(changed.configuration["hash"], original.configuration["hash"]);
}

TEST(Sysinfo, PreemptModeFromCmdline) {
  DerivedRoot root;
  // A PREEMPT_DYNAMIC kernel booted with preempt=full; parameters after "--" belong to init.
  std::string cmdline = trim(root.read("proc/cmdline"));
  cmdline.insert(cmdline.find(" -- "), " preempt=full");
  root.write("proc/cmdline", cmdline + " preempt=none\n");
  EXPECT_EQ(collect_sysinfo(root.paths()).kernel["preempt"], "dynamic:full");
}

// ---- the identity of a kernel the user brought (kernels/: git, tree, image), from its boot words

// vm-6.18's cmdline with `words` where a `schedlab kernel boot` guest has them, before " -- ".
json booted_by_with(const std::string& words) {
  DerivedRoot root;
  std::string cmdline = trim(root.read("proc/cmdline"));
  cmdline.insert(cmdline.find(" -- "), " " + words);
  root.write("proc/cmdline", cmdline + "\n");
  return collect_sysinfo(root.paths()).kernel["booted_by"];
}

const std::string kCommit = "3f9c1e0b7a2d4c6e8f0123456789abcdef012345";

TEST(SysinfoBootedBy, APackageRecipeKeepsItsThreeKeys) {
  const auto b = booted_by_with("schedlab.recipe=debian-6.12 schedlab.label=6.12 schedlab.accel=kvm");
  EXPECT_EQ(b, json({{"recipe", "debian-6.12"}, {"label", "6.12"}, {"accel", "kvm"}}));
}

TEST(SysinfoBootedBy, AGitKernelRecordsItsCommitAndRepository) {
  const auto b = booted_by_with(
      "schedlab.recipe=mine schedlab.label=tip schedlab.accel=kvm schedlab.source=git "
      "schedlab.commit=" +
      kCommit + " schedlab.repo=/home/dev/my%20linux");
  EXPECT_EQ(b["source"], "git");
  EXPECT_EQ(b["commit"], kCommit);
  EXPECT_EQ(b["repository"], "/home/dev/my linux");  // decoded: the kernel split its cmdline at spaces
  for (const char* absent : {"describe", "dirty", "image_sha256"}) EXPECT_FALSE(b.contains(absent)) << b;
}

TEST(SysinfoBootedBy, ATreeRecordsItsDescribeAndWhetherItWasDirty) {
  const auto b = booted_by_with("schedlab.recipe=mine schedlab.source=tree schedlab.commit=" + kCommit +
                                " schedlab.repo=/srv/linux schedlab.describe=v6.12-rc1-3-g3f9c1e0b7a2d-dirty "
                                "schedlab.dirty=1");
  EXPECT_EQ(b["source"], "tree");
  EXPECT_EQ(b["describe"], "v6.12-rc1-3-g3f9c1e0b7a2d-dirty");
  EXPECT_EQ(b["dirty"], true);
  EXPECT_EQ(booted_by_with("schedlab.recipe=mine schedlab.source=tree schedlab.dirty=0")["dirty"], false);
}

TEST(SysinfoBootedBy, AnImageRecordsItsHash) {
  const std::string sha = "9b2e" + std::string(60, 'a');
  const auto b = booted_by_with("schedlab.recipe=mine schedlab.source=image schedlab.image=" + sha);
  EXPECT_EQ(b["source"], "image");
  EXPECT_EQ(b["image_sha256"], sha);
  EXPECT_FALSE(b.contains("commit")) << b;
}

TEST(SysinfoBootedBy, AWordThatDoesNotDecodeOrIsNotOfItsFormIsLeftOut) {
  // A truncated escape, a commit that is not an object id (diff hands it to git), a dirty that is not 0/1.
  const auto b = booted_by_with(
      "schedlab.recipe=mine schedlab.source=git schedlab.repo=/srv/a%2 schedlab.commit=--output=/tmp/x "
      "schedlab.dirty=yes schedlab.image=abc");
  EXPECT_EQ(b["source"], "git");
  for (const char* absent : {"repository", "commit", "dirty", "image_sha256"})
    EXPECT_FALSE(b.contains(absent)) << b;
}

// ---- setup facts of issue #31: root filesystem, taint, clocksource (tests/fixtures/vm-6.18-provenance)

const fs::path kProvenance = fs::path(SCHEDLAB_FIXTURES_DIR) / "vm-6.18-provenance";

TEST(SysinfoSetup, RootFilesystemIsTheTopmostRootMount) {
  // proc/mounts: "/dev/vda / ext4 rw,relatime,discard,..."
  EXPECT_EQ(collect_sysinfo(HostPaths::under(kProvenance)).environment["root_fs"],
            (json{{"type", "ext4"}, {"source", "/dev/vda"}}));
  // The guest of `kernel boot --root 9p` runs chrooted on the 9p share mounted as guest_init.cpp does
  // (`mount -t 9p ... hostroot /host`): a chrooted process's proc/mounts shows it as "/". The line
  // below is that mount's source, mountpoint and type (its options are shortened).
  DerivedRoot ninep{kProvenance};
  std::string mounts = ninep.read("proc/mounts");
  const auto root_line = mounts.find("/dev/vda / ext4");
  ASSERT_NE(root_line, std::string::npos);
  mounts.replace(root_line, mounts.find('\n', root_line) - root_line, "hostroot / 9p ro,relatime 0 0");
  ninep.write("proc/mounts", mounts);
  EXPECT_EQ(collect_sysinfo(ninep.paths()).environment["root_fs"],
            (json{{"type", "9p"}, {"source", "hostroot"}}));
  // --root image: an overlay on the ext4 image, mounted over an earlier root; the last "/" is on top.
  DerivedRoot image{kProvenance};
  image.write("proc/mounts",
              image.read("proc/mounts") +
                  "overlay / overlay rw,relatime,lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work 0 0\n");
  EXPECT_EQ(collect_sysinfo(image.paths()).environment["root_fs"]["type"], "overlay");
  // Unreadable: null, not a guess.
  TempDir empty;
  EXPECT_TRUE(collect_sysinfo(HostPaths::under(empty.path())).environment["root_fs"].is_null());
}

TEST(SysinfoSetup, TaintLettersFollowTheKernelsTable) {
  // kernel/panic.c taint_flags, by bit: TAINT_PROPRIETARY_MODULE 0 'P', TAINT_DIE 7 'D', TAINT_WARN 9 'W',
  // TAINT_OOT_MODULE 12 'O', TAINT_UNSIGNED_MODULE 13 'E', TAINT_TEST 18 'N'.
  EXPECT_EQ(taint_letters(0), "");
  EXPECT_EQ(taint_letters(1UL << 9), "W");
  EXPECT_EQ(taint_letters((1UL << 7) | (1UL << 9)), "DW");
  EXPECT_EQ(taint_letters(1UL | (1UL << 12) | (1UL << 13)), "POE");
  EXPECT_EQ(taint_letters(1UL << 18), "N");
  EXPECT_EQ(taint_letters(1UL << 30), "?30");
}

TEST(SysinfoSetup, TaintIsRecordedWithItsLetters) {
  // proc/sys/kernel/tainted: "0"
  EXPECT_EQ(collect_sysinfo(HostPaths::under(kProvenance)).kernel["taint"],
            (json{{"value", 0}, {"flags", ""}}));
  DerivedRoot warned{kProvenance};
  warned.write("proc/sys/kernel/tainted", "512\n");
  EXPECT_EQ(collect_sysinfo(warned.paths()).kernel["taint"], (json{{"value", 512}, {"flags", "W"}}));
  TempDir empty;
  EXPECT_TRUE(collect_sysinfo(HostPaths::under(empty.path())).kernel["taint"].is_null());
}

TEST(SysinfoSetup, KernelStateChangeNamesNewTaintAndAClocksourceSwitch) {
  DerivedRoot root{kProvenance};
  const auto before = kernel_state(root.paths());
  EXPECT_EQ(before, (json{{"taint", {{"value", 0}, {"flags", ""}}}, {"clocksource", "tsc"}}));
  auto same = kernel_state_change(before, kernel_state(root.paths()));
  EXPECT_FALSE(same["tainted"]);
  EXPECT_FALSE(same["clocksource_changed"]);
  // A WARN during the repetition sets bit 9; the watchdog switches to another available clocksource.
  root.write("proc/sys/kernel/tainted", "512\n");
  root.write("sys/devices/system/clocksource/clocksource0/current_clocksource", "kvm-clock\n");
  auto changed = kernel_state_change(before, kernel_state(root.paths()));
  EXPECT_TRUE(changed["tainted"]);
  EXPECT_EQ(changed["new_taint_flags"], "W");
  EXPECT_TRUE(changed["clocksource_changed"]);
  EXPECT_EQ(changed["after"]["clocksource"], "kvm-clock");
  // Already tainted before: nothing new.
  auto again = kernel_state_change(kernel_state(root.paths()), kernel_state(root.paths()));
  EXPECT_FALSE(again["tainted"]);
}

TEST(SysinfoSetup, ClocksourcePinnedOnTheCmdlineIsRecorded) {
  // vm-6.18's proc/cmdline has no clocksource=: nothing pinned; its current one is "tsc".
  const auto plain = collect_sysinfo(HostPaths::under(kFixture)).kernel["clocksource"];
  EXPECT_TRUE(plain["pinned"].is_null());
  EXPECT_EQ(plain["current"], "tsc");
  DerivedRoot pinned;
  std::string cmdline = trim(pinned.read("proc/cmdline"));
  cmdline.insert(cmdline.find(" -- "), " clocksource=kvm-clock");
  pinned.write("proc/cmdline", cmdline + "\n");
  EXPECT_EQ(collect_sysinfo(pinned.paths()).kernel["clocksource"]["pinned"], "kvm-clock");
}

}  // namespace
}  // namespace schedlab
