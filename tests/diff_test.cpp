// schedlab diff on real bundles: verdicts, exit codes, and refusals of inputs that do not compare.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

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

// Twelve real trials of one invocation, back to back; sides are made of chosen trials, the other side's
// headline scaled. Where a verdict is asserted, the other side is a scaled copy of the base's own trials
// (restamped to run just before each, or in 2099): a loaded machine makes yield's trials differ by
// far more than 3x, and the verdict must not depend on that.
class Diff : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    auto o = schedlab(
        "run --workload yield --param yield.yields=20000 --repetitions 3 --trials 12 --no-counters "
        "--seed 1 --settle-timeout 0 --out " +
        (dir_->path() / "base").string());
    ASSERT_EQ(o.code, 0) << o.out;
    for (const auto& f : files_in(dir_->path() / "base")) {
      auto trial = nlohmann::json::parse(slurp(f))["trial"].get<std::size_t>();
      if (trials_.size() <= trial) trials_.resize(trial + 1);
      trials_[trial] = f.string();
    }
    ASSERT_EQ(trials_.size(), 12u);
    base_ = trials_[0];
  }
  static void TearDownTestSuite() { delete dir_; }

  // A copy of the base trial changed by `edit`, written beside it.
  static std::string variant(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    auto j = nlohmann::json::parse(slurp(base_));
    edit(j);
    auto path = (dir_->path() / (name + ".json")).string();
    spit(path, j.dump());
    return path;
  }

  // A directory holding copies of the given trials, headline scaled by `factor`, start time restamped.
  static std::string side(const std::string& name, const std::vector<std::size_t>& which, double factor,
                          const std::function<std::string(std::string)>& restamp = {}) {
    auto dir = dir_->path() / name;
    std::filesystem::create_directories(dir);
    for (auto t : which) {
      auto j = nlohmann::json::parse(slurp(trials_.at(t)));
      scale_headline(j, factor);
      if (restamp) j["started_at"] = restamp(j["started_at"].get<std::string>());
      spit(dir / std::filesystem::path(trials_.at(t)).filename(), j.dump());
    }
    return dir.string();
  }

  static void scale_headline(nlohmann::json& j, double factor) {
    for (auto& rep : j["instances"][0]["repetitions"])
      rep["metrics"]["ns_per_yield"]["value"] =
          rep["metrics"]["ns_per_yield"]["value"].get<double>() * factor;
  }

  // "...44.050Z" -> "...44.0501Z", which sorts just before it: the copy alternates with its original.
  static std::string just_before(std::string t) { return t.insert(t.size() - 1, "1"); }
  static std::string in_2099(const std::string& t) { return "2099" + t.substr(4); }

  static nlohmann::json headline(const std::string& out) {
    return nlohmann::json::parse(out)["instances"][0]["metrics"][0];
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::vector<std::string> trials_;
  static inline std::string base_;
};

TEST_F(Diff, AnInterleavedSlowdownIsWorseByThePairedTestAndFailsTheScript) {
  auto even = side("even", {0, 2, 4, 6, 8, 10}, 1.0);
  auto odd_slower = side("odd-slower", {0, 2, 4, 6, 8, 10}, 3.0, just_before);
  auto o = schedlab("diff --json " + even + " " + odd_slower);
  ASSERT_EQ(o.code, 0) << o.out;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["schema"], "schedlab.diff/1");
  EXPECT_TRUE(j["sides"][1]["interleaved_with_base"].get<bool>());
  auto m = headline(o.out);
  EXPECT_EQ(m["name"], "ns_per_yield");
  EXPECT_TRUE(m["headline"].get<bool>());
  const auto& c = m["comparisons"][0];
  EXPECT_EQ(c["test"], "wilcoxon-paired/trials");
  EXPECT_EQ(c["n_base"], 6);
  EXPECT_EQ(c["verdict"], "worse");
  EXPECT_TRUE(c["verdict_reason"].is_null());
  EXPECT_GT(c["shift_pct"].get<double>(), 100.0);  // 3x: robust to a noisy machine
  EXPECT_LT(c["p_adjusted"].get<double>(), 0.05);
  EXPECT_TRUE(j["regression"].get<bool>());
  EXPECT_EQ(schedlab("diff --fail-on worse " + even + " " + odd_slower).code, 3);
  // The other way round it is an improvement, and not a failure.
  auto back = schedlab("diff --json --fail-on worse " + odd_slower + " " + even);
  ASSERT_EQ(back.code, 0) << back.out;
  EXPECT_EQ(headline(back.out)["comparisons"][0]["verdict"], "better");
}

TEST_F(Diff, ABlockedSlowdownIsTestedOnTrialMediansAndWarnsOfDrift) {
  auto first = side("first", {0, 1, 2, 3, 4, 5}, 1.0);
  auto last_slower = side("last-slower", {0, 1, 2, 3, 4, 5}, 3.0, in_2099);
  auto o = schedlab("diff --json " + first + " " + last_slower);
  ASSERT_EQ(o.code, 0) << o.out;
  auto c = headline(o.out)["comparisons"][0];
  EXPECT_EQ(c["test"], "mann-whitney/trials");
  EXPECT_GT(c["shift_pct"].get<double>(), 0.0);
  auto text = schedlab("diff " + first + " " + last_slower).out;
  EXPECT_NE(text.find("did not run interleaved"), std::string::npos) << text;
}

TEST_F(Diff, OneTrialASideGivesNoVerdict) {
  auto slower = variant("slower", [](auto& j) { scale_headline(j, 3.0); });
  auto o = schedlab("diff --json --fail-on worse " + base_ + " " + slower);
  ASSERT_EQ(o.code, 0) << o.out;
  auto c = headline(o.out)["comparisons"][0];
  EXPECT_EQ(c["test"], "mann-whitney/repetitions");
  EXPECT_GT(c["shift_pct"].get<double>(), 0.0);  // the effect is shown ...
  EXPECT_EQ(c["verdict"], "too few runs");       // ... but not judged
  EXPECT_NE(c["verdict_reason"].get<std::string>().find("one trial"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(o.out)["regression"].get<bool>());
  auto text = schedlab("diff " + base_ + " " + slower).out;
  EXPECT_NE(text.find("Mann-Whitney U on repetitions"), std::string::npos) << text;
  EXPECT_NE(text.find("too few runs (one trial)"), std::string::npos) << text;
  EXPECT_NE(text.find("WARNING: a side has one trial"), std::string::npos) << text;
  EXPECT_EQ(text.find("\033["), std::string::npos) << "colour only on a terminal";
}

TEST_F(Diff, ThreePairsCannotReachAlpha) {
  auto o =
      schedlab("diff --json " + side("three-even", {0, 2, 4}, 1.0) + " " + side("three-odd", {1, 3, 5}, 3.0));
  ASSERT_EQ(o.code, 0) << o.out;
  auto c = headline(o.out)["comparisons"][0];
  EXPECT_EQ(c["test"], "wilcoxon-paired/trials");
  EXPECT_EQ(c["verdict"], "too few runs");
  EXPECT_DOUBLE_EQ(c["min_p"].get<double>(), 0.25);  // 2 / 2^3: all three signs alike
  EXPECT_EQ(c["verdict_reason"], "3 vs 3 pairs reach p = 0.25 at best");
}

TEST_F(Diff, ASideAgainstItselfIsNeverBetterOrWorse) {
  auto even = side("even-self", {0, 2, 4, 6, 8, 10}, 1.0);
  auto o = schedlab("diff --json " + even + " " + even);
  ASSERT_EQ(o.code, 0) << o.out;
  auto c = headline(o.out)["comparisons"][0];
  EXPECT_EQ(c["p_value"].get<double>(), 1.0);
  EXPECT_EQ(c["shift_pct"].get<double>(), 0.0);
  EXPECT_NE(c["verdict"], "better");
  EXPECT_NE(c["verdict"], "worse");
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
