// Runtime configurations (runtime/): what a configurations file and an inline --configuration may say,
// and the errors that name the file, line and key.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.hpp"
#include "runtime/configuration.hpp"
#include "test_util.hpp"

namespace schedlab::runtime {
namespace {

using schedlab::testing::TempDir;

std::filesystem::path write(const TempDir& dir, const std::string& text) {
  auto p = dir.path() / "configurations.toml";
  std::ofstream(p) << text;
  return p;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RuntimeConfiguration, AFileDefinesNamedConfigurationsWithEveryKind) {
  TempDir dir;
  auto file = write(
      dir,
      "[configuration.fifo]\nscheduler = \"scx:fifo\"\n"
      "[configuration.tuned]\nfeatures = [\"NO_PLACE_LAG\"]\ntunables = { base_slice_ns = 1000000 }\n"
      "sysctls = { \"kernel.sched_rr_timeslice_ms\" = 50 }\ncpu_weight = 50\ncpu_max = \"50000 100000\"\n");
  auto all = load_configurations(file);
  ASSERT_EQ(all.size(), 2u);
  auto fifo = resolve_configuration("fifo", all);
  EXPECT_TRUE(fifo.scx());
  EXPECT_EQ(fifo.scx_name(), "fifo");
  auto tuned = resolve_configuration("tuned", all);
  EXPECT_EQ(tuned.features, std::vector<std::string>{"NO_PLACE_LAG"});
  EXPECT_EQ(tuned.tunables.at("base_slice_ns"), "1000000");
  EXPECT_EQ(tuned.sysctls.at("kernel.sched_rr_timeslice_ms"), "50");
  EXPECT_EQ(tuned.cpu_weight, 50);
  ASSERT_TRUE(tuned.cpu_max && tuned.cpu_max->quota_us);
  EXPECT_EQ(*tuned.cpu_max->quota_us, 50000);
  EXPECT_EQ(tuned.cpu_max->period_us, 100000);
  EXPECT_NE(tuned.defined_at.find("configurations.toml:"), std::string::npos) << tuned.defined_at;
}

// A change point's rerun applies the configurations its bundles recorded (configuration.runtime.given)
// again, through the inline spec: both ways must give back every setting.
TEST(RuntimeConfiguration, WhatABundleRecordsResolvesToTheSameConfigurationAgain) {
  TempDir dir;
  auto all = load_configurations(write(
      dir,
      "[configuration.fifo]\nscheduler = \"scx:fifo\"\n[configuration.found]\n"
      "[configuration.tuned]\nfeatures = [\"NO_PLACE_LAG\"]\ntunables = { base_slice_ns = 1000000 }\n"
      "sysctls = { \"kernel.sched_rr_timeslice_ms\" = 50 }\ncpu_weight = 50\ncpu_max = \"50000 100000\"\n"
      "[configuration.unlimited]\ncpu_max = \"max 10000\"\n"));
  ASSERT_EQ(all.size(), 4u);
  for (const auto& c : all) {
    const auto from_bundle = configuration_from_json(c.to_json(), "bundle");
    EXPECT_EQ(from_bundle.to_json(), c.to_json()) << c.name;
    const auto again = resolve_configuration(from_bundle.to_spec(), {});
    EXPECT_EQ(again.to_json(), c.to_json()) << c.name << ": " << from_bundle.to_spec();
  }
  EXPECT_EQ(
      resolve_configuration("tuned", all).to_spec(),
      "name=tuned,feature=NO_PLACE_LAG,tunable.base_slice_ns=1000000,sysctl.kernel.sched_rr_timeslice_ms=50,"
      "cpu.weight=50,cpu.max=50000/100000");
  const auto bad = error_of([] {
    configuration_from_json({{"name", "x"}, {"cpu_max", "half"}}, "bundle b.json");
  });
  EXPECT_NE(bad.find("bundle b.json: cpu_max"), std::string::npos) << bad;
}

TEST(RuntimeConfiguration, InlineAndShortFormsResolve) {
  auto c = resolve_configuration("name=half,cpu.max=50000/100000,sysctl.kernel.sched_rr_timeslice_ms=50", {});
  EXPECT_EQ(c.name, "half");
  ASSERT_TRUE(c.cpu_max);
  EXPECT_EQ(*c.cpu_max->quota_us, 50000);
  auto e = resolve_configuration("eevdf", {});
  EXPECT_EQ(e.name, "eevdf");
  EXPECT_EQ(e.scheduler, "eevdf");
  auto s = resolve_configuration("scx:vtime", {});
  EXPECT_EQ(s.name, "scx:vtime");
  EXPECT_EQ(s.scx_name(), "vtime");
  auto unlimited = resolve_configuration("name=max,cpu.max=max", {});
  EXPECT_FALSE(unlimited.cpu_max->quota_us.has_value());
}

TEST(RuntimeConfiguration, FileErrorsNameTheFileLineAndKey) {
  TempDir dir;
  const std::string at = (dir.path() / "configurations.toml").string();
  auto err = [&](const std::string& text) {
    return error_of([&] { load_configurations(write(dir, text)); });
  };
  EXPECT_NE(err("[configuration.a]\nschedular = \"eevdf\"\n")
                .find(at + ":2: configuration.a.schedular: unknown key"),
            std::string::npos)
      << err("[configuration.a]\nschedular = \"eevdf\"\n");
  EXPECT_NE(err("[configuration.a]\n\ncpu_max = \"half\"\n").find(at + ":3: configuration.a.cpu_max"),
            std::string::npos);
  EXPECT_NE(err("[configuration.a]\nscheduler = \"bfs\"\n").find("scheduler 'bfs'"), std::string::npos);
  EXPECT_NE(err("[configuration.a]\nsysctls = { \"vm.swappiness\" = 1 }\n").find("only scheduler sysctls"),
            std::string::npos);
  EXPECT_NE(err("[configuration.a]\ncpu_weight = 0\n").find("1..10000"), std::string::npos);
  EXPECT_NE(err("[configuration.a]\ncpu_max = \"500 100000\"\n").find("at least 1000"), std::string::npos);
  EXPECT_NE(err("[configuration.a]\nfeatures = [\"place_lag\"]\n").find("sched feature 'place_lag'"),
            std::string::npos);
  EXPECT_NE(err("[configurations.a]\n").find("expected [configuration.NAME] tables only"), std::string::npos);
  EXPECT_NE(err("[configuration.a]\nx = \n").find(at + ":2"), std::string::npos);
  EXPECT_NE(
      error_of([&] { load_configurations(dir.path() / "nosuch.toml"); }).find("nosuch.toml: cannot read"),
      std::string::npos);
}

TEST(RuntimeConfiguration, InlineErrorsNameTheSpec) {
  EXPECT_NE(
      error_of([] { resolve_configuration("fifo", {}); }).find("--configuration fifo: not a configuration"),
      std::string::npos);
  EXPECT_NE(error_of([] { resolve_configuration("cpu.max=50000/100000", {}); }).find("needs name=NAME"),
            std::string::npos);
  EXPECT_NE(error_of([] { resolve_configuration("name=a,cpu.quota=5", {}); }).find("unknown key 'cpu.quota'"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { resolve_configuration("name=a/b,cpu.weight=5", {}); }).find("configuration name 'a/b'"),
      std::string::npos);
  EXPECT_NE(error_of([] { resolve_configuration("name=a,cpu.max=50000/100", {}); }).find("period 100 us"),
            std::string::npos);
}

}  // namespace
}  // namespace schedlab::runtime
