// A change point between two kernel recipes confirmed by booting both again (#24): a series of real qemu
// boots of debian-6.12 then debian-6.12-short-slice (base_slice_ns 1 ms set after boot) running the
// contended yield loop, whose time per yield is the slice the competitor gets (-28% here), and
// `schedlab changes --confirm` rerunning it as a nested target campaign of the two recipes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_util.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using ::schedlab::testing::schedlab;

constexpr int kRunsEach = 4;  // 4 + 4: the fewest a permutation test at 0.05 can split

TEST(KernelChanges, ARecipeSwitchIsConfirmedByBootingBothRecipesAgain) {
  for (const char* tool :
       {"/usr/bin/qemu-system-x86_64", "/bin/busybox", "/usr/bin/cpio", "/usr/sbin/depmod"})
    if (!fs::exists(tool)) GTEST_SKIP() << tool << " missing (ci/setup installs it)";
  ::schedlab::testing::TempDir dir;
  const std::string bundles = (dir.path() / "bundles").string(), store = (dir.path() / "store.db").string();
  for (int i = 0; i < 2 * kRunsEach; ++i) {
    const std::string recipe = i < kRunsEach ? "debian-6.12" : "debian-6.12-short-slice";
    const auto o = schedlab(
        std::string("kernel --cache-dir ") + SCHEDLAB_KERNEL_CACHE + " boot " + recipe + " --out " + bundles +
        " --timeout 300 -- run --workload yield --repetitions 3 --param yield.competitors=1 "
        "--param yield.placement=same-cpu --param yield.duration_s=0.3 --settle-timeout 0 "
        "--no-counters --label " +
        recipe);
    ASSERT_EQ(o.code, 0) << recipe << ": " << o.out;
  }
  // The boot records beside the bundles are skipped (exit 1 says so); every bundle is indexed.
  const auto rebuilt = schedlab("store rebuild " + bundles + " --store " + store);
  ASSERT_NE(rebuilt.out.find("indexed " + std::to_string(2 * kRunsEach) + " bundle(s)"), std::string::npos)
      << rebuilt.out;
  const auto o = schedlab("changes --store " + store +
                          " --json --confirm --confirm-budget 4m --kernel-cache " + SCHEDLAB_KERNEL_CACHE);
  ASSERT_EQ(o.code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out.substr(o.out.find('{')));
  ASSERT_EQ(j.at("changes").size(), 1u) << o.out;
  const auto& c = j.at("changes")[0];
  EXPECT_EQ(c.at("index"), kRunsEach) << c.dump(1);
  EXPECT_EQ(c.at("direction"), "better") << c.dump(1);  // a shorter slice: the competitor yields back sooner
  EXPECT_LT(c.at("change_pct").get<double>(), -10) << c.dump(1);
  EXPECT_EQ(c.at("status"), "confirmed") << c.dump(1);
  ASSERT_TRUE(c.at("rerun").is_string()) << c.dump(1);
  std::ifstream in(c.at("rerun").get<std::string>());
  const auto record = nlohmann::json::parse(in);
  EXPECT_EQ(record.at("stop").at("verdict").get<std::string>().rfind("better", 0), 0u) << record.at("stop");
  // The rerun booted both recipes again: its campaign names them, and its bundles are their guests'.
  fs::path campaign_file;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() / "reruns"))
    if (e.path().filename() == "rerun.toml") campaign_file = e.path();
  std::ifstream campaign(campaign_file);
  std::stringstream text;
  text << campaign.rdbuf();
  EXPECT_NE(text.str().find(R"(configurations = ["debian-6.12", "debian-6.12-short-slice"])"),
            std::string::npos)
      << text.str();
  int guests = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() / "reruns"))
    if (e.path().extension() == ".json" && e.path().filename().string().find("-trial") != std::string::npos)
      guests += nlohmann::json::parse(std::ifstream(e.path())).at("kernel").contains("booted_by");
  EXPECT_GE(guests, 6) << "the pilot's 3 pairs";
}

}  // namespace
}  // namespace schedlab
