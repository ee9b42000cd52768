// schedlab diff on real bundles: verdicts, exit codes, and refusals of inputs that do not compare.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

using testing::files_in;
using testing::schedlab;
using testing::slurp;
using testing::spit;
using testing::TempDir;

class Diff : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    auto o = schedlab(
        "run --workload yield --param yield.yields=20000 --repetitions 9 --no-counters --seed 1 "
        "--settle-timeout 1 --out " +
        (dir_->path() / "base").string());
    ASSERT_EQ(o.code, 0) << o.out;
    auto files = files_in(dir_->path() / "base");
    ASSERT_EQ(files.size(), 1u);
    base_ = files.front().string();
  }
  static void TearDownTestSuite() { delete dir_; }

  // A copy of the base bundle changed by `edit`, written beside it.
  static std::string variant(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    auto j = nlohmann::json::parse(slurp(base_));
    edit(j);
    auto path = (dir_->path() / (name + ".json")).string();
    spit(path, j.dump());
    return path;
  }

  static void scale_headline(nlohmann::json& j, double factor) {
    for (auto& rep : j["instances"][0]["repetitions"])
      rep["metrics"]["ns_per_yield"]["value"] =
          rep["metrics"]["ns_per_yield"]["value"].get<double>() * factor;
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::string base_;
};

TEST_F(Diff, AnInjectedSlowdownIsWorseAndFailsTheScript) {
  auto slower = variant("slower", [](auto& j) { scale_headline(j, 3.0); });
  auto o = schedlab("diff --json " + base_ + " " + slower);
  ASSERT_EQ(o.code, 0) << o.out;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["schema"], "schedlab.diff/1");
  const auto& m = j["instances"][0]["metrics"][0];
  EXPECT_EQ(m["name"], "ns_per_yield");
  EXPECT_TRUE(m["headline"].get<bool>());
  const auto& c = m["comparisons"][0];
  EXPECT_EQ(c["verdict"], "worse");
  EXPECT_EQ(c["test"], "mann-whitney/repetitions");
  EXPECT_GT(c["shift_pct"].get<double>(), 100.0);  // 3x: robust to a noisy base
  EXPECT_LT(c["p_adjusted"].get<double>(), 0.05);
  EXPECT_TRUE(j["regression"].get<bool>());
  EXPECT_EQ(schedlab("diff --fail-on worse " + base_ + " " + slower).code, 3);
  // The other way round it is an improvement, and not a failure.
  auto back = schedlab("diff --json --fail-on worse " + slower + " " + base_);
  ASSERT_EQ(back.code, 0) << back.out;
  EXPECT_EQ(nlohmann::json::parse(back.out)["instances"][0]["metrics"][0]["comparisons"][0]["verdict"],
            "better");
}

TEST_F(Diff, ASideAgainstItselfIsNeverBetterOrWorse) {
  auto o = schedlab("diff --json " + base_ + " " + base_);
  ASSERT_EQ(o.code, 0) << o.out;
  auto c = nlohmann::json::parse(o.out)["instances"][0]["metrics"][0]["comparisons"][0];
  EXPECT_EQ(c["p_value"].get<double>(), 1.0);
  EXPECT_EQ(c["shift_pct"].get<double>(), 0.0);
  // Equivalence needs the interval inside ±2%, which 9 noisy repetitions may not give: never a verdict.
  EXPECT_TRUE(c["verdict"] == "equivalent (±2%)" || c["verdict"] == "inconclusive") << c.dump();
}

TEST_F(Diff, TextNamesTheTestTheVerdictAndTheSingleTrialWarning) {
  auto slower = variant("slower-text", [](auto& j) { scale_headline(j, 3.0); });
  auto o = schedlab("diff " + base_ + " " + slower);
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("Mann-Whitney U on repetitions"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("worse"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("WARNING: a side has one trial"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("\033["), std::string::npos) << "colour only on a terminal";
}

TEST_F(Diff, BadInputIsOneClearErrorExitTwo) {
  auto truncated = (dir_->path() / "truncated.json").string();
  spit(truncated, slurp(base_).substr(0, 200));
  auto o = schedlab("diff " + base_ + " " + truncated);
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("truncated.json"), std::string::npos) << o.out;

  o = schedlab("diff " + base_ + " no-such-label --store " + (dir_->path() / "base").string());
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("no-such-label"), std::string::npos) << o.out;

  auto other_params = variant("other-params", [](auto& j) { j["instances"][0]["params_hash"] = "0000"; });
  o = schedlab("diff " + base_ + " " + other_params);
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("no workload instance in common"), std::string::npos) << o.out;

  EXPECT_EQ(schedlab("diff " + base_).code, 2);
  EXPECT_EQ(schedlab("diff --alpha 0.7 " + base_ + " " + base_).code, 2);
}

TEST_F(Diff, DifferentHardwareOrVersionsAreRefusedUnlessForced) {
  auto elsewhere = variant("elsewhere", [](auto& j) { j["host"]["fingerprint"] = "another-machine"; });
  auto o = schedlab("diff " + base_ + " " + elsewhere);
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("different hardware"), std::string::npos) << o.out;
  o = schedlab("diff --force " + base_ + " " + elsewhere);
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(o.out.rfind("WARNING: FORCED: different hardware", 0), 0u) << o.out;

  auto newer = variant("newer", [](auto& j) { j["instances"][0]["workload_version"] = "9.0.0"; });
  o = schedlab("diff " + base_ + " " + newer);
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("version"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace schedlab
