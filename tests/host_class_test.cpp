// Host classes on recorded machines (tests/fixtures: the development VM's capture, a two-socket qemu
// guest captured under two kernels, bundles recorded on both, and an A/A pool whose host lacks its
// topology): the shape each gets, that a kernel does not change it, labels, and glob matching.
#include "collector/sysinfo/host_class.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "collector/sysinfo/sysinfo.hpp"
#include "core/error.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = SCHEDLAB_FIXTURES_DIR;

json host_of(const fs::path& bundle) {
  std::ifstream in(bundle);
  return json::parse(in).at("host");
}

// The development VM (2 vCPUs of an "AMD EPYC", one node, no SMT), live capture and a bundle it recorded.
TEST(HostClass, ShapeOfTheDevelopmentVm) {
  const auto live = this_host_class(HostPaths::under(kFixtures / "vm-6.18"), "");
  EXPECT_EQ(live.shape, "1s-2c-nosmt-1n-amd-epyc");
  EXPECT_EQ(live.label, "");
  EXPECT_EQ(live.name(), live.shape);
  // The exporter fixture was recorded on that VM: its bundle's host facts give the same class.
  EXPECT_EQ(host_class(host_of(kFixtures / "exporter" / "yield-wakeup.json"), "").shape, live.shape);
}

// qemu -smp 8,sockets=2,cores=2,threads=2 with two NUMA nodes (the capture's README): 4 cores, not 8 CPUs.
TEST(HostClass, TwoSocketsSmtAndNumaFromTheQemuCaptures) {
  const std::string shape = "2s-4c-smt-2n-intel-core-i7-9xx-nehalem-class-core-i7";
  EXPECT_EQ(this_host_class(HostPaths::under(kFixtures / "debian-6.12-qemu-smp8"), "").shape, shape);
  // The same guest under another kernel is the same class: the kernel is the configuration, not the host.
  EXPECT_EQ(this_host_class(HostPaths::under(kFixtures / "debian-6.1-qemu-smp8"), "").shape, shape);
}

TEST(HostClass, BundlesOfTwoKernelsShareTheirHostsClass) {
  const fs::path dir = kFixtures / "qemu-6.1-vs-6.12";
  const auto cfs = host_class(host_of(dir / "6.1-cfs" / "20261204T170921Z-c56789-trial1.json"), "");
  const auto eevdf = host_class(host_of(dir / "6.12-eevdf" / "20261204T171323Z-24a958-trial1.json"), "");
  // "QEMU Virtual CPU version 2.5+": the word "cpu" names no model, and '+' is no slug character.
  EXPECT_EQ(cfs.shape, "1s-2c-nosmt-1n-qemu-virtual-version-2-5");
  EXPECT_EQ(eevdf.shape, cfs.shape);
}

// A fact sysinfo could not read is "unknown" in its place, never a guess: the A/A pool's host carries no
// topology at all; a null host nothing.
TEST(HostClass, UnknownFactsAreSpeltUnknown) {
  std::ifstream in(kFixtures / "aa-pool-yield" / "pairs.json");
  const auto pool = json::parse(in).at("host");
  ASSERT_FALSE(pool.contains("topology")) << pool.dump();
  EXPECT_EQ(host_class(pool, "").shape, "unknown-unknown-unknown-unknown-amd-epyc");
  EXPECT_EQ(host_class(json(nullptr), "").shape, "unknown-unknown-unknown-unknown-unknown");
}

// The slug's rules on the model string Intel ships ("Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz"): a copy of
// the VM's capture with only its cpuinfo model names replaced, not a machine of its own.
TEST(HostClass, ModelSlugDropsMarksFrequencyAndCpu) {
  testing::TempDir dir;
  fs::copy(kFixtures / "vm-6.18", dir.path(), fs::copy_options::recursive);
  const fs::path cpuinfo = dir.path() / "proc" / "cpuinfo";
  std::string text = read_text(cpuinfo).value();
  for (auto p = text.find("AMD EPYC"); p != std::string::npos; p = text.find("AMD EPYC", p + 1))
    text.replace(p, 8, "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz");
  std::ofstream(cpuinfo, std::ios::trunc) << text;
  EXPECT_EQ(this_host_class(HostPaths::under(dir.path()), "").shape, "1s-2c-nosmt-1n-intel-xeon-gold-6230");
}

TEST(HostClass, ALabelNamesTheClassAndMustBeOneWord) {
  const auto vm = this_host_class(HostPaths::under(kFixtures / "vm-6.18"), "epyc-vm_2.a");
  EXPECT_EQ(vm.name(), "epyc-vm_2.a");
  EXPECT_EQ(vm.shape, "1s-2c-nosmt-1n-amd-epyc") << "a label does not change the shape";
  for (const std::string bad : {"lab 1", "lab/1", "a,b", "x\"y", "caf\xc3\xa9", "tab\t", "line\n", "a{b}"}) {
    try {
      host_class(json(nullptr), bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                "'" + bad + "': a host label is one word of letters, digits, '.', '_' or '-'");
    }
    // Refused before the machine is read: an unreadable root does not hide the bad label.
    EXPECT_THROW(this_host_class(HostPaths::under("/nonexistent"), bad), InputError) << bad;
  }
}

TEST(HostClass, MatchesGlobsOnLabelOrShape) {
  const auto two = this_host_class(HostPaths::under(kFixtures / "debian-6.12-qemu-smp8"), "rack-b");
  const auto vm = this_host_class(HostPaths::under(kFixtures / "vm-6.18"), "");
  for (const auto& c : {two, vm}) EXPECT_TRUE(c.matches("*")) << c.name();
  EXPECT_TRUE(two.matches("rack-?"));
  EXPECT_TRUE(two.matches("2s-*-smt-*")) << "the shape still matches when a label is given";
  EXPECT_FALSE(vm.matches("2s-*"));
  EXPECT_TRUE(vm.matches("1s-*-amd-epyc"));
  EXPECT_FALSE(vm.matches("rack-*"));
  EXPECT_FALSE(vm.matches("")) << "an empty pattern matches no host, though the VM has no label";
  EXPECT_FALSE(two.matches("RACK-B")) << "case matters, as in the label";
}

}  // namespace
}  // namespace schedlab
