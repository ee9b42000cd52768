// The daemon with recipe configurations: each step boots its kernel under qemu (TCG) through
// `schedlab kernel boot`, runs the step inside the guest, and indexes the guest's bundle, so that one
// campaign collects from two kernels, as a lab box's nightly run does between reboots. One of them is a
// scheduler-feature variant (debian-6.1-no-gentle): its guest runs with the feature the recipe sets.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/bundle_io.hpp"
#include "core/host_paths.hpp"
#include "daemon/campaign/campaign.hpp"
#include "daemon/store/store.hpp"
#include "kernels/recipe.hpp"
#include "tests/cli_util.hpp"
#include "tests/daemon_process.hpp"
#include "tests/test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::campaign_header;
using testing::DaemonProcess;
using testing::short_yield_campaign;

// What a qemu boot of a recipe needs that this machine lacks, if anything.
std::optional<std::string> missing_boot_tool() {
  for (const char* tool :
       {"/usr/bin/qemu-system-x86_64", "/bin/busybox", "/usr/bin/cpio", "/usr/sbin/depmod"})
    if (!fs::exists(tool)) return tool;
  return std::nullopt;
}

TEST(DaemonBoot, ACampaignOfTwoRecipesBootsEachKernelAndIndexesItsBundle) {
  if (auto missing = missing_boot_tool()) GTEST_SKIP() << *missing << " missing (ci/setup installs it)";
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

// The record stopped on an answer its last look gives: the guest slower (the interval above 0) or the
// two equivalent within the ±90% target (the interval inside it). The guest faster would be news.
void expect_decided_at_its_last_look(const nlohmann::json& record) {
  SCOPED_TRACE(record["stop"].dump());
  ASSERT_FALSE(record["looks"].empty());
  const auto& look = record["looks"].back();
  const double lower = look["interval_pct"][0].get<double>(), upper = look["interval_pct"][1].get<double>();
  if (look["state"] == "increase") {
    EXPECT_GT(lower, 0);
    EXPECT_TRUE(record["stop"]["verdict"].get<std::string>().starts_with("worse"));
    EXPECT_EQ(record["stop"]["reason"], "the sequence excludes 0");
  } else {
    EXPECT_EQ(look["state"], "equivalent");
    EXPECT_GT(lower, -90);
    EXPECT_LT(upper, 90);
    EXPECT_EQ(record["stop"]["verdict"], "equivalent (±90%)");
    EXPECT_EQ(record["stop"]["reason"], "the sequence lies inside ±90%");
  }
}

// A target campaign (issue #19): the running kernel against a guest under TCG. The first look (after
// the pilot's 4 pairs) answers, and the plan's pairs 5 and 6 are never run. Which answer depends on the
// host: a guest's yield costs several times a host's on most (`worse`), but CI's paravirtual 6.18 host
// once measured +9.6% [+4.1%, +15.4%] and once +12.4% [-14.3%, +47.5%]; a ±90% target decides on all
// three. The daemon is stopped after its first step and started again, as a kexec would: the comparison
// is derived again from the store and comes out the same.
TEST(DaemonBoot, ATargetCampaignStopsOnceItsComparisonAnswers) {
  if (auto missing = missing_boot_tool()) GTEST_SKIP() << *missing << " missing (ci/setup installs it)";
  testing::TempDir dir;
  const auto config = dir.path() / "campaign.toml";
  std::ofstream(config) << campaign_header("target", "once", dir.path()) << "kernel_cache = \""
                        << SCHEDLAB_KERNEL_CACHE << "\"\n"
                        << "target_mde = \"90%\"\nmax_trials = 6\npilot = 4\nseed = 3\n"
                        << short_yield_campaign(R"(["running", "debian-6.12"])", 2);
  {
    DaemonProcess first(config, dir.path() / "daemon1.log", "between-steps");
    ASSERT_TRUE(first.wait_for_log("paused at between-steps", 1, 120)) << first.log_text();
    first.terminate();
    EXPECT_EQ(first.wait(), 0) << first.log_text();
  }
  DaemonProcess d(config, dir.path() / "daemon2.log");
  ASSERT_TRUE(d.wait_for_log("finished:", 1, 600)) << d.log_text();
  ASSERT_EQ(d.wait(), 0) << d.log_text();
  const auto log = d.log_text();
  EXPECT_NE(log.find("resuming run 1"), std::string::npos) << log;
  EXPECT_NE(log.find("yield: look at 4 pairs: "), std::string::npos) << log;
  EXPECT_NE(log.find("yield: verdict: "), std::string::npos) << log;
  EXPECT_NE(log.find("run 1 finished: 8 step(s), 0 failed, 4 not needed once the comparisons stopped"),
            std::string::npos)
      << log;

  const auto campaign = load_campaign(config);
  auto store = open_store("sqlite://" + (dir.path() / "store.db").string());
  const auto run = store->last_run("target");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, "finished");
  const auto steps = store->steps(run->id);
  ASSERT_EQ(steps.size(), 8u);
  for (const auto& [key, step] : steps) {
    EXPECT_EQ(step.status, StepStatus::kFinished) << key << ": " << step.reason;
    EXPECT_TRUE(key.rfind("t5/", 0) != 0 && key.rfind("t6/", 0) != 0) << key << " ran after the verdict";
  }

  std::vector<fs::path> records;
  for (const auto& f : fs::recursive_directory_iterator(dir.path() / "bundles"))
    if (f.path().filename() == "experiment-yield.json") records.push_back(f.path());
  ASSERT_EQ(records.size(), 1u);
  const auto record = nlohmann::json::parse(read_text(records[0]).value_or("{}"));
  EXPECT_EQ(record["schema"], "schedlab.experiment/1");
  EXPECT_EQ(record["design"]["kind"], "sequential");
  EXPECT_EQ(record["design"]["target_mde_pct"], 90);
  EXPECT_EQ(record["sides"]["a"]["configuration"], "running");
  EXPECT_EQ(record["sides"]["b"]["configuration"], "debian-6.12");
  EXPECT_EQ(record["plan"]["sd_source"], "pilot of 4 pairs");
  ASSERT_EQ(record["looks"].size(), 1u);
  EXPECT_EQ(record["looks"][0]["n"], 4);
  expect_decided_at_its_last_look(record);
  EXPECT_NE(log.find("yield: verdict: " + record["stop"]["verdict"].get<std::string>() + ": "),
            std::string::npos)
      << log;
  ASSERT_EQ(record["pairs"].size(), 4u);
  for (const auto& pair : record["pairs"]) {
    SCOPED_TRACE(pair.dump());
    const int trial = pair["trial"].get<int>();
    const auto& a = steps.at("t" + std::to_string(trial) + "/running/yield");
    const auto& b = steps.at("t" + std::to_string(trial) + "/debian-6.12/yield");
    // The order the record states is the order the steps ran in, and the seeded coin's.
    EXPECT_EQ(pair["order"], pair_b_first(campaign, trial) ? "ba" : "ab");
    EXPECT_EQ(pair["order"] == "ba", b.index < a.index);
    // Each side's value is the median of its bundle's ok repetitions, the guest's from the guest's kernel.
    for (const auto& [side, step] : {std::pair{"a", &a}, std::pair{"b", &b}}) {
      const auto bundle = load_bundle(step->bundle_path);
      EXPECT_EQ(pair[std::string(side) + "_bundle"], step->bundle_path);
      std::vector<double> values;
      for (const auto& rep : bundle.instances.at(0).repetitions)
        if (rep.ok()) values.push_back(rep.metrics.at("ns_per_yield").value);
      ASSERT_EQ(values.size(), 2u);
      EXPECT_DOUBLE_EQ(pair[side].get<double>(), (values[0] + values[1]) / 2);
      if (std::string(side) == "b") {
        EXPECT_EQ(bundle.kernel["booted_by"]["recipe"], "debian-6.12");
      }
    }
  }

  // The next run of the comparison (a changed file plans a new run) is planned from this one's spread,
  // which `campaign check` shows before it starts.
  std::ofstream(config, std::ios::app) << "# the second run\n";
  auto check = testing::sh(std::string(SCHEDLAB_BINARY) + " campaign check " + config.string());
  ASSERT_EQ(check.code, 0) << check.out;
  const std::string planned_from = "yield: plan: sd of ln(b/a) ";
  EXPECT_NE(check.out.find(planned_from), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("(4 pairs of " + records[0].string() + ")"), std::string::npos) << check.out;
  DaemonProcess again(config, dir.path() / "daemon3.log");
  ASSERT_TRUE(again.wait_for_log("finished:", 1, 600)) << again.log_text();
  ASSERT_EQ(again.wait(), 0) << again.log_text();
  const auto second = store->last_run("target");
  ASSERT_TRUE(second);
  EXPECT_NE(second->id, run->id);
  fs::path second_record;
  for (const auto& f : fs::recursive_directory_iterator(dir.path() / "bundles"))
    if (f.path().filename() == "experiment-yield.json" && f.path() != records[0]) second_record = f.path();
  ASSERT_FALSE(second_record.empty());
  const auto planned = nlohmann::json::parse(read_text(second_record).value_or("{}"));
  EXPECT_EQ(planned["plan"]["sd_source"], "4 pairs of " + records[0].string());
  // The same 4 pairs, summed in another order by the planner: equal to a few ulps (CI saw 1 ulp apart).
  EXPECT_DOUBLE_EQ(planned["plan"]["sd_log_ratio"].get<double>(),
                   record["observed"]["sd_log_ratio"].get<double>());
  expect_decided_at_its_last_look(planned);
  EXPECT_NE(again.log_text().find(planned_from), std::string::npos) << again.log_text();
}

}  // namespace
}  // namespace schedlab
