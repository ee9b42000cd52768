// Change points confirmed by a paired rerun (#24): real runs of the yield loop indexed in a real store,
// `schedlab changes --confirm` reruns the configurations either side of each change as a sequential
// experiment and stores the status it decides.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "changes/confirmation.hpp"
#include "cli_util.hpp"
#include "core/sanitizers.hpp"
#include "pinned_hogs.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using ::schedlab::testing::schedlab;

TEST(ChangeConfirmation, AVerdictConfirmsOnlyAChangeTheSameWay) {
  EXPECT_EQ(status_from_verdict("worse", "worse"), kConfirmed);
  EXPECT_EQ(status_from_verdict("worse (not beyond ±3%)", "worse"), kConfirmed);  // real, if smaller
  EXPECT_EQ(status_from_verdict("better", "better"), kConfirmed);
  EXPECT_EQ(status_from_verdict("better", "worse"), kNotReproduced);
  EXPECT_EQ(status_from_verdict("equivalent (±5%)", "worse"), kNotReproduced);
  EXPECT_EQ(status_from_verdict("inconclusive (MDE 4.1%)", "better"), kNotReproduced);
}

// The planted level shift (idle-policy hogs) is sized against the uninstrumented loop: under ASan the
// loop's own cost hides it (CI's sanitizer build found no change at all). The rerun and the store run
// there all the same, in ARuntimeSwitchIsConfirmedByItsRerunAndTheStatusIsStored.
#if defined(SCHEDLAB_ASAN)
constexpr bool kInstrumented = true;
#else
constexpr bool kInstrumented = false;
#endif

// The planted level shift of the machine (another tenant arriving): an idle-policy hog on every CPU.
using Hogs = testing::PinnedHogs;

class ChangeConfirmationCli : public ::testing::Test {
 protected:
  // 8 runs of `before`, then 8 of `after` (a --configuration spec each; "" the machine as found), the
  // after runs beside a hog on every CPU when `hogs_after`; indexed in a store.
  void series(const std::string& before, const std::string& after, bool hogs_after) {
    for (int i = 0; i < 16; ++i) {
      const std::string& side = i < 8 ? before : after;
      std::unique_ptr<Hogs> hogs;
      if (i >= 8 && hogs_after) hogs = std::make_unique<Hogs>(/*idle_policy=*/true);
      const auto o = schedlab(
          "run --workload yield --repetitions 3 --settle-timeout 0 --no-counters --param "
          "yield.yields=20000 " +
          (side.empty() ? "" : "--configuration " + side + " ") + "--cache-dir " +
          (dir_.path() / "cache").string() + " --out " + bundles_);
      ASSERT_EQ(o.code, 0) << o.out;
    }
    ASSERT_EQ(schedlab("store rebuild " + bundles_ + " --store " + store_).code, 0);
  }

  // The change at the switch (run 8), or a run or two beside it. A drifting machine may show another one
  // within a side; that one is not this test's subject.
  nlohmann::json change_at_switch(const std::string& args) {
    const auto o =
        schedlab("changes --store " + store_ + " --workload yield --metric ns_per_yield --json " + args);
    EXPECT_EQ(o.code, 0) << o.out;
    // Progress lines (a rerun begun) go to standard error, which the helper merges before the JSON.
    const auto brace = o.out.find('{');
    const auto j =
        nlohmann::json::parse(o.out.substr(brace == std::string::npos ? 0 : brace), nullptr, false);
    if (!j.is_discarded())
      for (const auto& c : j.at("changes"))
        if (std::abs(c.at("index").get<int>() - 8) <= 2) return c;  // the split may sit a run beside it
    last_output_ = o.out;
    return nullptr;
  }

  int reruns() const {
    int n = 0;
    if (fs::exists(dir_.path() / "reruns"))
      for (const auto& e : fs::recursive_directory_iterator(dir_.path() / "reruns"))
        n += e.path().filename() == "experiment.json";
    return n;
  }

  std::string last_output_;  // of the last `changes` that found no change at the switch
  ::schedlab::testing::TempDir dir_;
  const std::string bundles_ = (dir_.path() / "bundles").string(),
                    store_ = (dir_.path() / "store.db").string();
};

TEST_F(ChangeConfirmationCli, ARuntimeSwitchIsConfirmedByItsRerunAndTheStatusIsStored) {
  series("name=full", "name=half,cpu.max=5000/10000", false);
  const auto c = change_at_switch("--confirm --confirm-budget 60s");
  ASSERT_FALSE(c.is_null()) << "no change at run 8: " << last_output_;
  EXPECT_EQ(c.at("status"), "confirmed") << c.dump(1);
  EXPECT_EQ(c.at("direction"), "worse");
  ASSERT_TRUE(c.at("rerun").is_string()) << c.dump(1);
  std::ifstream in(c.at("rerun").get<std::string>());
  const auto record = nlohmann::json::parse(in);
  EXPECT_EQ(record.at("stop").at("verdict").get<std::string>().rfind("worse", 0), 0u) << record.at("stop");
  EXPECT_GT(record.at("stop").at("estimate_pct").get<double>(), 20);  // half the CPU: far slower yields
  EXPECT_EQ(record.at("configurations").at("b").at("cpu_max").at("quota_us"), 5000)
      << record.at("configurations");
  const int reruns_made = reruns();
  EXPECT_GE(reruns_made, 1);
  // The next reader sees the stored status, and nothing is rerun.
  const auto again = change_at_switch("--confirm");
  ASSERT_FALSE(again.is_null()) << last_output_;
  EXPECT_EQ(again.at("status"), "confirmed");
  EXPECT_EQ(change_at_switch("").at("status"), "confirmed");
  EXPECT_EQ(reruns(), reruns_made);
}

TEST_F(ChangeConfirmationCli, AMachineShiftBesideAConfigurationSwitchIsNotReproduced) {
  if (kInstrumented) GTEST_SKIP() << "a planted shift sized for the uninstrumented loop";
  // The switch (the default CPU weight written out: no effect) and a tenant arriving on every CPU at the
  // same run: the series steps, the identities say the configuration changed, the rerun (without the
  // tenant) finds the configurations alike. A weight other than the default was an effect of its own
  // wherever something else shared the CPU: beside a CPU hog, weight 50 was confirmed as worse.
  series("name=plain", "name=weighted,cpu.weight=100", true);
  const auto c = change_at_switch("--confirm --confirm-budget 60s");
  // The tenant's step competes with this shared VM's own drift (a +38% level shift at run 4 once hid it
  // in CI): without a change at the switch there is nothing for a rerun to decide.
  if (c.is_null()) GTEST_SKIP() << "the planted shift did not show at run 8: " << last_output_;
  // The tenant slows the loop (~9x here, +13% once on CI's machine); its size is not this test's subject.
  EXPECT_EQ(c.at("direction"), "worse") << c.dump(1);
  EXPECT_EQ(c.at("status"), "not reproduced") << c.dump(1);
  EXPECT_NE(c.at("status_reason").get<std::string>().find("rerun: "), std::string::npos) << c.dump(1);
  EXPECT_GE(reruns(), 1);
}

TEST_F(ChangeConfirmationCli, ALevelShiftWithNothingSwitchedIsUnconfirmableAndSaysWhy) {
  if (kInstrumented) GTEST_SKIP() << "a planted shift sized for the uninstrumented loop";
  series("", "", true);
  const auto c = change_at_switch("--confirm");
  if (c.is_null()) GTEST_SKIP() << "the planted shift did not show at run 8: " << last_output_;
  EXPECT_EQ(c.at("status"), "unconfirmable") << c.dump(1);
  EXPECT_NE(c.at("status_reason").get<std::string>().find("the same kernel and runtime configuration"),
            std::string::npos)
      << c.dump(1);
  EXPECT_EQ(reruns(), 0);
  // Without --confirm nothing is written, and a missing store is not created.
  const auto missing = schedlab("changes --confirm --store " + (dir_.path() / "none.db").string());
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_FALSE(fs::exists(dir_.path() / "none.db"));
}

}  // namespace
}  // namespace schedlab
