// The daemon with recipe configurations: each step boots its kernel under qemu (TCG) through
// `schedlab kernel boot`, runs the step inside the guest, and indexes the guest's bundle, so that one
// campaign collects from two kernels, as a lab box's nightly run does between reboots. One of them is a
// scheduler-feature variant (debian-6.1-no-gentle): its guest runs with the feature the recipe sets.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "core/bundle_io.hpp"
#include "daemon/store/store.hpp"
#include "kernels/recipe.hpp"
#include "tests/daemon_process.hpp"
#include "tests/test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::campaign_header;
using testing::DaemonProcess;
using testing::short_yield_campaign;

TEST(DaemonBoot, ACampaignOfTwoRecipesBootsEachKernelAndIndexesItsBundle) {
  for (const char* tool :
       {"/usr/bin/qemu-system-x86_64", "/bin/busybox", "/usr/bin/cpio", "/usr/sbin/depmod"})
    if (!fs::exists(tool)) GTEST_SKIP() << tool << " missing (ci/setup installs it)";
  testing::TempDir dir;
  const auto config = dir.path() / "campaign.toml";
  std::ofstream(config) << campaign_header("kernels", "once", dir.path()) << "kernel_cache = \""
                        << SCHEDLAB_KERNEL_CACHE << "\"\n"
                        << short_yield_campaign(R"(["debian-6.1-no-gentle", "debian-6.12"])", 2);
  DaemonProcess d(config, dir.path() / "daemon.log");
  ASSERT_TRUE(d.wait_for_log("finished:", 1, 600)) << d.log_text();
  ASSERT_EQ(d.wait(), 0) << d.log_text();

  auto store = open_store("sqlite://" + (dir.path() / "store.db").string());
  auto run = store->last_run("kernels");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, "finished");
  const auto steps = store->steps(run->id);
  ASSERT_EQ(steps.size(), 2u);
  std::set<std::string> releases;
  for (const auto& [key, step] : steps) {
    SCOPED_TRACE(key);
    ASSERT_EQ(step.status, StepStatus::kFinished) << step.reason;
    const auto bundle = load_bundle(step.bundle_path);
    const auto recipe = kernels::load_recipe(SCHEDLAB_SOURCE_DIR "/kernels/recipes", bundle.label);
    EXPECT_NE(key.find(recipe.name), std::string::npos) << "the step's bundle is labelled " << bundle.label;
    // The guest's kernel, not this host's.
    EXPECT_EQ(bundle.kernel["release"], recipe.package.release);
    EXPECT_EQ(bundle.kernel["booted_by"]["recipe"], recipe.name);
    ASSERT_EQ(bundle.instances.size(), 1u);
    ASSERT_EQ(bundle.instances[0].repetitions.size(), 2u);
    for (const auto& rep : bundle.instances[0].repetitions) EXPECT_EQ(rep.status, "ok");
    releases.insert(bundle.kernel["release"].get<std::string>());
    EXPECT_EQ(bundle.kernel["booted_by"]["label"], recipe.label);
    const auto features = bundle.configuration["sched_features"].dump();
    if (recipe.name == "debian-6.1-no-gentle")
      EXPECT_NE(features.find("\"NO_GENTLE_FAIR_SLEEPERS\""), std::string::npos) << features;
    else
      EXPECT_EQ(features.find("GENTLE_FAIR_SLEEPERS"), std::string::npos)
          << "6.12 has no such feature: " << features;
  }
  EXPECT_EQ(releases.size(), 2u);
  EXPECT_EQ(store->bundle_count(), 2);
  EXPECT_EQ(store->repetition_count(), 4);
}

}  // namespace
}  // namespace schedlab
