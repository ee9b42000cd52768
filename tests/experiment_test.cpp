// Experiments through the binary (`run --versus`, experiment/README.md): bad input, the record a live
// sequential experiment leaves, and the diff of its two sides as pairs. Structure only: how often the
// experiments answer right is measured by bench/sequential_experiments.py, never here.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

using testing::files_in;
using testing::schedlab;
using testing::TempDir;

// Short trials: 20,000 yields are about 10 ms here; a pair with its warm-ups about half a second.
const std::string kYield =
    "run --workload yield --param yield.yields=20000 --no-counters --settle-timeout 0 ";

void expect_refused(const std::string& args, const std::string& message, const std::filesystem::path& out) {
  const auto before = files_in(out).size();
  auto o = schedlab(kYield + args + " --out " + out.string());
  EXPECT_EQ(o.code, 2) << args << "\n" << o.out;
  EXPECT_NE(o.out.find(message), std::string::npos) << args << "\n" << o.out;
  EXPECT_EQ(files_in(out).size(), before) << "something was written for: " << args;
}

std::vector<nlohmann::json> records_in(const std::filesystem::path& out) {
  std::vector<nlohmann::json> records;
  for (const auto& dir : files_in(out))
    if (std::filesystem::exists(dir / "experiment.json"))
      records.push_back(nlohmann::json::parse(testing::slurp(dir / "experiment.json")));
  return records;
}

nlohmann::json record_in(const std::filesystem::path& out) {
  for (const auto& dir : files_in(out))
    if (std::filesystem::exists(dir / "experiment.json"))
      return nlohmann::json::parse(testing::slurp(dir / "experiment.json"));
  return nullptr;
}

TEST(Experiment, BadInputIsOneClearErrorExitTwoAndNothingWritten) {
  TempDir dir;
  const auto out = dir.path() / "out";
  std::filesystem::create_directories(out);
  expect_refused("--versus yield.spin_ns=10 --target-mde 0 --max-trials 20",
                 "--target-mde 0: must be a positive", out);
  expect_refused("--versus yield.spin_ns=10 --target-mde -3 --max-trials 20",
                 "--target-mde -3: must be a positive", out);
  expect_refused("--versus yield.spin_ns=10 --target-mde 3% --margin 5 --max-trials 20",
                 "--margin 5: larger than --target-mde 3", out);
  expect_refused("--versus yield.spin_ns=10 --target-mde 3", "give --max-trials N, --budget DURATION or both",
                 out);
  expect_refused("--versus yield.spin_ns=10 --target-mde 3 --budget soon",
                 "--budget 'soon': expected a duration", out);
  expect_refused("--versus yield.spin_ns=10 --target-mde 3 --max-trials 3",
                 "--max-trials 3: below the pilot's 6", out);
  expect_refused("--versus yield.spin_ns=10 --target-mde 3 --trials 5 --max-trials 20",
                 "--trials and --target-mde: give one", out);
  expect_refused("--versus 'yield.spin_ns=[10,20]' --trials 2", "one value per side", out);
  expect_refused("--versus yield.nosuch=1 --trials 2", "yield.nosuch: unknown parameter", out);
  expect_refused("--target-mde 3 --max-trials 20", "give the other side with --versus", out);
  expect_refused("--margin 2", "--margin: belongs to an experiment", out);
  expect_refused("--repetitions auto", "--repetitions auto: an experiment (--versus) chooses it", out);
  expect_refused("--versus yield.spin_ns=10 --trials 2 --repetitions 3x", "--repetitions '3x': expected",
                 out);
  expect_refused("--versus yield.spin_ns=10 --target-mde 3 --max-trials 20 --metric nosuch",
                 "--metric nosuch: not a metric of yield", out);
}

TEST(Experiment, ABudgetBelowOnePairIsRefusedOnceThisHostHasRunThePair) {
  TempDir dir;
  const auto out = dir.path() / "out";
  // The history: a real A/A experiment of this comparison, 8 fixed pairs (a fixed design's pairs all
  // count; of a sequential one only its pilot, the pairs its stopping rule did not choose).
  auto first = schedlab(kYield + "--versus yield.yields=20000 --trials 8 --out " + out.string());
  ASSERT_EQ(first.code, 0) << first.out;
  expect_refused("--versus yield.yields=20000 --target-mde 50 --budget 0.01s",
                 "--budget 0.01 s: below one pair", out);
  // With the history the plan comes before the first pair, from the earlier experiment's spread.
  auto second =
      schedlab(kYield + "--versus yield.yields=20000 --target-mde 50 --max-trials 8 --out " + out.string());
  ASSERT_EQ(second.code, 0) << second.out;
  EXPECT_NE(second.out.find("pairs of " + out.string()), std::string::npos) << second.out;
}

// --repetitions auto: without history the default 3; with an earlier experiment of the comparison (any
// repetitions) the repetitions its levels say buy the most precision per second.
TEST(Experiment, AutoRepetitionsComeFromTheLevelsOfTheLatestEarlierExperiment) {
  TempDir dir;
  const auto first_out = dir.path() / "first";
  auto first = schedlab(kYield + "--versus yield.yields=20000 --trials 5 --repetitions auto --out " +
                        first_out.string());
  ASSERT_EQ(first.code, 0) << first.out;
  EXPECT_NE(first.out.find("--repetitions auto: 3 repetitions per trial, this host having no earlier"),
            std::string::npos)
      << first.out;
  const auto r1 = record_in(first_out);
  EXPECT_EQ(r1["repetitions_per_trial"], 3);
  EXPECT_TRUE(r1["repetitions_choice"].is_null());
  // History with 2 repetitions on purpose, so that its key differs from auto's starting 3: the history is
  // found across repetitions. Levels choose only where they saw variance between trials beyond the
  // repetitions', which 6 short pairs can miss: up to 4 such runs, the latest that chose being the one.
  nlohmann::json latest;
  for (int attempt = 0; attempt < 4 && latest.is_null(); ++attempt) {
    auto history = schedlab(kYield + "--versus yield.yields=20000 --trials 6 --repetitions 2 --out " +
                            first_out.string());
    ASSERT_EQ(history.code, 0) << history.out;
    for (const auto& j : records_in(first_out)) {
      if (j["repetitions_per_trial"] == 2 && j["levels"].is_object() &&
          j["levels"].contains("best_repetitions_per_trial") &&
          (latest.is_null() || j["started_at"] > latest["started_at"]))
        latest = j;
    }
  }
  ASSERT_TRUE(latest.is_object()) << "4 runs of 6 pairs saw no variance between trials";
  auto third = schedlab(kYield + "--versus yield.yields=20000 --trials 2 --repetitions auto --out " +
                        first_out.string());
  ASSERT_EQ(third.code, 0) << third.out;
  nlohmann::json chosen;
  for (const auto& j : records_in(first_out))
    if (j["pairs"].size() == 2) chosen = j;
  ASSERT_TRUE(chosen.is_object());
  const int best = static_cast<int>(latest["levels"]["best_repetitions_per_trial"].get<double>());
  EXPECT_EQ(chosen["repetitions_per_trial"], std::clamp(best, 1, 50)) << third.out;
  ASSERT_TRUE(chosen["repetitions_choice"].is_object()) << chosen.dump();
  EXPECT_EQ(chosen["repetitions_choice"]["levels"], latest["levels"]);
  EXPECT_NE(third.out.find("the most precision per second by the levels of"), std::string::npos) << third.out;
}

TEST(Experiment, ASequentialExperimentRecordsItsDesignLooksAndStopAndDiffPairsItsSides) {
  TempDir dir;
  const auto out = dir.path() / "out";
  auto o = schedlab(kYield + "--versus yield.spin_ns=200 --target-mde 20 --max-trials 16 --seed 7 --out " +
                    out.string());
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("verdict: "), std::string::npos) << o.out;
  const auto r = record_in(out);
  ASSERT_TRUE(r.is_object()) << o.out;
  EXPECT_EQ(r["schema"], "schedlab.experiment/1");
  EXPECT_EQ(r["design"]["kind"], "sequential");
  EXPECT_EQ(r["design"]["target_mde_pct"], 20.0);
  EXPECT_EQ(r["metric"]["name"], "ns_per_yield");
  ASSERT_TRUE(r["plan"].is_object());
  EXPECT_GE(r["plan"]["pairs"].get<int>(), 2);
  ASSERT_FALSE(r["looks"].empty());
  EXPECT_EQ(r["looks"][0]["n"], 6);  // the pilot is the first look
  for (const auto& l : r["looks"]) {
    EXPECT_TRUE(l["interval_pct"].is_array());
    EXPECT_TRUE(l["state"].is_string());
  }
  ASSERT_TRUE(r["stop"].is_object());
  EXPECT_FALSE(r["stop"]["reason"].get<std::string>().empty());
  const auto pairs = r["pairs"].size();
  EXPECT_GE(pairs, 6u);
  EXPECT_LE(pairs, 16u);
  std::set<std::string> orders;
  for (const auto& p : r["pairs"]) orders.insert(p["order"].get<std::string>());
  const auto exp_dir = out / r["id"].get<std::string>();
  EXPECT_EQ(files_in(exp_dir / "a").size(), pairs);
  EXPECT_EQ(files_in(exp_dir / "b").size(), pairs);
  // Each pair's order is a coin flip: with 6+ pairs both orders appear unless the seed is unlucky (2/64).
  EXPECT_EQ(orders.size(), 2u) << "seed 7 gave one order only";

  // The two sides differ in a parameter, yet the diff pairs them (compared_as) by trial index.
  auto d = schedlab("diff --json " + (exp_dir / "a").string() + " " + (exp_dir / "b").string());
  ASSERT_EQ(d.code, 0) << d.out;
  const auto j = nlohmann::json::parse(d.out.substr(d.out.find('{')));
  ASSERT_EQ(j["instances"].size(), 1u) << d.out;
  EXPECT_TRUE(j["sides"][1]["interleaved_with_base"].get<bool>()) << d.out;
  // The diff carries the experiment behind its sides: design, every look, the stop, and a warning that
  // its own fixed-n tests do not allow for the stopping.
  ASSERT_TRUE(j["experiment"].is_object()) << d.out;
  EXPECT_EQ(j["experiment"]["id"], r["id"]);
  EXPECT_EQ(j["experiment"]["design"], r["design"]);
  EXPECT_EQ(j["experiment"]["looks"], r["looks"]);
  EXPECT_EQ(j["experiment"]["stop"], r["stop"]);
  bool warned = false;
  for (const auto& w : j["warnings"])
    warned = warned || w.get<std::string>().find("do not allow for that stopping") != std::string::npos;
  EXPECT_TRUE(warned) << j["warnings"].dump();
  auto text = schedlab("diff " + (exp_dir / "a").string() + " " + (exp_dir / "b").string());
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("experiment " + r["id"].get<std::string>() + " (sequential: target 20%"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  look n=6 "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("stopped after " + std::to_string(pairs) + " pairs"), std::string::npos)
      << text.out;
  bool found = false;
  for (const auto& m : j["instances"][0]["metrics"])
    if (m["name"] == "ns_per_yield") {
      found = true;
      EXPECT_EQ(m["comparisons"][0]["test"], "wilcoxon-paired/trials") << m.dump();
    }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace schedlab
