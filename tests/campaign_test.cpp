// Campaign files: what a good one expands into, and the FILE:LINE: key: why of every error class.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cli_util.hpp"
#include "core/error.hpp"
#include "daemon/campaign/campaign.hpp"
#include "daemon/campaign/check_report.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

using testing::TempDir;

const std::filesystem::path kExamples = std::filesystem::path(SCHEDLAB_SOURCE_DIR) / "daemon/examples";

const std::string kHeader = R"([campaign]
name = "t"
schedule = "once"
store = "sqlite:///var/lib/schedlab/store.db"
output = "/var/lib/schedlab/bundles"
)";

class CampaignFile {
 public:
  explicit CampaignFile(const std::string& text) : path_(dir_.path() / "c.toml") {
    testing::spit(path_, text);
  }
  const std::filesystem::path& path() const { return path_; }
  Campaign load() const { return load_campaign(path_); }

 private:
  TempDir dir_;
  std::filesystem::path path_;
};

// The message must start with "FILE:LINE: KEY: " and go on to say why.
void expect_error(const std::string& text, int line, const std::string& key, const std::string& why) {
  CampaignFile f(text);
  const std::string prefix = f.path().string() + ":" + std::to_string(line) + ": " + key + ": ";
  try {
    f.load();
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << "expected prefix: " << prefix << "\ngot: " << message;
    EXPECT_NE(message.find(why), std::string::npos) << "expected: " << why << "\ngot: " << message;
  }
}

std::vector<std::string> keys(const std::vector<CampaignStep>& plan) {
  std::vector<std::string> out;
  for (const auto& s : plan) out.push_back(s.key);
  return out;
}

TEST(Campaign, SmokeExampleExpandsIntoOneStep) {
  const auto c = load_campaign(kExamples / "smoke.toml");
  EXPECT_EQ(c.name, "smoke");
  EXPECT_FALSE(c.schedule.has_value());  // "once"
  EXPECT_EQ(c.store_url, "sqlite:///tmp/schedlab-smoke/store.db");
  EXPECT_FALSE(c.counters);
  EXPECT_EQ(c.timeout_s, 30);
  ASSERT_EQ(c.workloads.size(), 1u);
  EXPECT_EQ(c.workloads[0].line, 15);  // its [[workload]] header
  const auto plan = expand_plan(c);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].index, 0);
  EXPECT_EQ(plan[0].key, "t1/running/yield");
  EXPECT_EQ(plan[0].configuration, "running");
  EXPECT_EQ(plan[0].trial, 1);
  EXPECT_EQ(plan[0].workload, "yield");
  EXPECT_EQ(plan[0].params, (std::map<std::string, std::string>{{"yields", "20000"}}));
  EXPECT_EQ(plan[0].repetitions, 3);
  const auto totals = plan_totals(plan);
  EXPECT_EQ(totals.steps, 1);
  EXPECT_EQ(totals.repetitions, 3);
  EXPECT_EQ(totals.boots, 0);  // the running kernel is invoked, not booted
}

// RELIABILITY.md, paths: a campaign from another user cannot name its runs' directory out of `output`.
TEST(Campaign, ItsNameCannotLeadOutOfTheOutputDirectory) {
  for (const std::string name : {"..", ".", "../../etc", "/etc", ".hidden", "a/../../b"}) {
    std::string text = kHeader;
    text.replace(text.find("name = \"t\""), 10, "name = \"" + name + "\"");
    CampaignFile f(text + "[[workload]]\nname = \"yield\"\n");
    const auto runs = campaign_runs_directory(f.load());
    EXPECT_EQ(runs.parent_path(), std::filesystem::path("/var/lib/schedlab/bundles")) << name;
    const auto leaf = runs.filename().string();
    EXPECT_TRUE(leaf.front() != '.' && leaf.find('/') == std::string::npos) << name << " -> " << leaf;
  }
}

TEST(Campaign, NightlyExampleLoadsEveryKey) {
  const auto c = load_campaign(kExamples / "nightly.toml");
  ASSERT_TRUE(c.schedule.has_value());
  EXPECT_EQ(c.schedule->text, "*-*-* 02:00:00");
  EXPECT_EQ(c.configurations, (std::vector<std::string>{"debian-6.1", "debian-6.12"}));
  EXPECT_EQ(c.trials, 3);
  EXPECT_EQ(c.seed, 20261201u);
  EXPECT_EQ(c.exporter.listen, "127.0.0.1:9464");
  EXPECT_EQ(c.exporter.configurations_per_host, 3);
  ASSERT_EQ(c.workloads.size(), 4u);
  EXPECT_EQ(c.workloads[0].id, "yield");
  EXPECT_EQ(c.workloads[0].params.at("threads"), "[1,2]");
  EXPECT_EQ(c.workloads[1].id, "yield-contended");
  EXPECT_EQ(c.workloads[1].params.at("placement"), "same-cpu");
  const auto plan = expand_plan(c);
  // (2 yield sweeps + 1 contended + 2 kernbench sweeps + 1 wakeup) x 2 configurations x 3 trials.
  EXPECT_EQ(plan.size(), 6u * 2 * 3);
  EXPECT_EQ(plan_totals(plan).boots, 36);  // every step boots its kernel
}

TEST(Campaign, ValuesOfEveryTomlTypeBecomeParamText) {
  CampaignFile f(kHeader + R"(
[[workload]]
name = "wakeup"
id = "w"
params = { threads = 2, duration_s = 0.5, load = "hogs:1" }
)");
  const auto c = f.load();
  EXPECT_EQ(c.workloads[0].params, (std::map<std::string, std::string>{
                                       {"threads", "2"}, {"duration_s", "0.5"}, {"load", "hogs:1"}}));
  EXPECT_EQ(c.workloads[0].repetitions, 9);  // the verdict-grade default
  // No parameter takes a boolean yet; one is spelt as `--param` would spell it, then checked.
  expect_error(kHeader + "[[workload]]\nname = \"wakeup\"\nparams = { cpu_dma_latency = true }\n", 8,
               "[[workload]] params.cpu_dma_latency", "'true' is not one of hold, off");
}

TEST(Campaign, ContentHashIsOfTheBytes) {
  CampaignFile a(kHeader + "[[workload]]\nname = \"yield\"\n");
  CampaignFile b(kHeader + "[[workload]]\nname = \"yield\"\n# a comment is a change too\n");
  EXPECT_EQ(a.load().content_hash, a.load().content_hash);
  EXPECT_NE(a.load().content_hash, b.load().content_hash);
  EXPECT_EQ(a.load().content_hash.size(), 16u);
}

TEST(Campaign, InterleavedAlternatesConfigurationsWithinEachTrial) {
  CampaignFile f(R"([campaign]
name = "t"
schedule = "daily"
store = "sqlite:///s.db"
output = "/o"
configurations = ["debian-6.1", "debian-6.12"]
trials = 2
[[workload]]
name = "yield"
)");
  EXPECT_EQ(keys(expand_plan(f.load())),
            (std::vector<std::string>{"t1/debian-6.1/yield", "t1/debian-6.12/yield", "t2/debian-6.1/yield",
                                      "t2/debian-6.12/yield"}));
}

TEST(Campaign, BlockedRunsEveryTrialOfAConfigurationInARow) {
  CampaignFile f(R"([campaign]
name = "t"
schedule = "daily"
store = "sqlite:///s.db"
output = "/o"
configurations = ["debian-6.1", "debian-6.12"]
trials = 2
order = "blocked"
[[workload]]
name = "yield"
)");
  const auto plan = expand_plan(f.load());
  EXPECT_EQ(keys(plan), (std::vector<std::string>{"t1/debian-6.1/yield", "t2/debian-6.1/yield",
                                                  "t1/debian-6.12/yield", "t2/debian-6.12/yield"}));
  EXPECT_EQ(plan_totals(plan).boots, 4);
}

TEST(Campaign, SweepsExpandIntoOneStepPerCombination) {
  CampaignFile f(kHeader + R"(
[[workload]]
name = "yield"
repetitions = 4
params = { threads = [1, 2], competitors = [0, 1], yields = 1000 }
[[workload]]
name = "yield"
id = "pinned"
params = { placement = "same-cpu", threads = [1, 2] }
)");
  const auto plan = expand_plan(f.load());
  std::set<std::string> ids;
  for (const auto& s : plan) {
    ids.insert(s.instance_id);
    for (const auto& [k, v] : s.params) EXPECT_NE(v.front(), '[') << s.key << " still holds a list in " << k;
  }
  EXPECT_EQ(ids, (std::set<std::string>{"yield.competitors=0,threads=1", "yield.competitors=0,threads=2",
                                        "yield.competitors=1,threads=1", "yield.competitors=1,threads=2",
                                        "pinned.threads=1", "pinned.threads=2"}));
  const auto it = std::find_if(plan.begin(), plan.end(), [](const auto& s) {
    return s.instance_id == "yield.competitors=1,threads=2";
  });
  ASSERT_NE(it, plan.end());
  EXPECT_EQ(it->params,
            (std::map<std::string, std::string>{{"competitors", "1"}, {"threads", "2"}, {"yields", "1000"}}));
  EXPECT_EQ(it->repetitions, 4);
  EXPECT_EQ(it->key, "t1/running/yield.competitors=1,threads=2");
}

const std::string kSixInstances = R"(
[[workload]]
name = "yield"
params = { threads = [1, 2, 3, 4, 5, 6] }
)";

std::string with_seed(int trials, int seed) {
  return R"([campaign]
name = "t"
schedule = "once"
store = "sqlite:///s.db"
output = "/o"
configurations = ["running", "debian-6.1"]
trials = )" +
         std::to_string(trials) + "\nseed = " + std::to_string(seed) + "\n" + kSixInstances;
}

std::vector<std::string> instance_order(const std::vector<CampaignStep>& plan, int trial,
                                        const std::string& conf) {
  std::vector<std::string> out;
  for (const auto& s : plan)
    if (s.trial == trial && s.configuration == conf)
      out.push_back(s.instance_id.substr(std::string("yield.threads=").size()));
  return out;
}

TEST(Campaign, ShuffleIsDeterministicPerSeedAndTrial) {
  const auto plan = expand_plan(CampaignFile(with_seed(2, 1)).load());
  const auto again = expand_plan(CampaignFile(with_seed(2, 1)).load());
  EXPECT_EQ(keys(plan), keys(again));
  for (std::size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(plan[i].index, static_cast<int>(i));
    EXPECT_EQ(plan[i].seed, again[i].seed);
  }
  // Pinned: a change of algorithm would reorder resumed campaigns, so it must be deliberate.
  EXPECT_EQ(instance_order(plan, 1, "running"), (std::vector<std::string>{"2", "5", "3", "1", "6", "4"}));
  EXPECT_EQ(instance_order(plan, 2, "running"), (std::vector<std::string>{"4", "5", "2", "3", "6", "1"}));
  // Both configurations of a trial run the instances in the same order.
  EXPECT_EQ(instance_order(plan, 1, "running"), instance_order(plan, 1, "debian-6.1"));
  EXPECT_EQ(instance_order(plan, 2, "running"), instance_order(plan, 2, "debian-6.1"));
  const auto other = expand_plan(CampaignFile(with_seed(2, 2)).load());
  EXPECT_NE(instance_order(plan, 1, "running"), instance_order(other, 1, "running"));
  std::set<std::uint64_t> seeds;
  for (const auto& s : plan) seeds.insert(s.seed);
  EXPECT_EQ(seeds.size(), plan.size()) << "every step gets its own seed";
}

TEST(Campaign, EstimateNeedsAPastRunOfEveryStep) {
  const auto plan = expand_plan(load_campaign(kExamples / "smoke.toml"));
  auto unknown = estimate_duration(plan, {});
  EXPECT_FALSE(unknown.seconds.has_value());
  EXPECT_EQ(unknown.steps_unknown, 1);
  const std::string key = step_estimate_key(plan[0]);
  EXPECT_EQ(key.rfind("yield/", 0), 0u) << key;
  auto known = estimate_duration(plan, {{key, 0.5}});
  ASSERT_TRUE(known.seconds.has_value());
  EXPECT_DOUBLE_EQ(*known.seconds, 0.5 * (3 + 1));  // three timed repetitions and the warm-up
  EXPECT_EQ(format_duration(7265), "2 h 01 min");
  EXPECT_EQ(format_duration(200), "3 min 20 s");
  const auto text = format_campaign_check(load_campaign(kExamples / "smoke.toml"), plan, unknown,
                                          std::chrono::system_clock::now());
  EXPECT_NE(text.find("estimated duration: no past runs: unknown"), std::string::npos) << text;
  EXPECT_NE(text.find("schedule: once"), std::string::npos) << text;
}

// Every error names the file, the line of the offending value and the key.
TEST(CampaignErrors, TomlSyntaxNamesFileAndLine) {
  CampaignFile f(kHeader + "trials = \n");
  try {
    f.load();
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(f.path().string() + ":6: ", 0), 0u) << e.what();
  }
}

TEST(CampaignErrors, UnknownKeysAnywhere) {
  const std::string w = "[[workload]]\nname = \"yield\"\n";
  expect_error(kHeader + "trails = 3\n" + w, 6, "[campaign] trails",
               "unknown key (known: alpha, boot, budget, configurations, ");
  expect_error(kHeader + w + "[exporterr]\nlisten = \"\"\n", 8, "exporterr",
               "unknown key (known: campaign, changes, exporter, workload)");
  expect_error(kHeader + "[exporter]\nlisen = \"127.0.0.1:1\"\n" + w, 7, "[exporter] lisen", "unknown key");
  expect_error(kHeader + w + "repetition = 3\n", 8, "[[workload]] repetition", "unknown key");
  expect_error(kHeader + w + "params = { thread = 2 }\n", 8, "[[workload]] params.thread",
               "unknown parameter of yield (known: threads, yields, ");
}

TEST(CampaignErrors, MissingAndMistypedCampaignKeys) {
  const std::string w = "[[workload]]\nname = \"yield\"\n";
  expect_error("[campaign]\nschedule = \"once\"\nstore = \"sqlite:///s\"\noutput = \"/o\"\n" + w, 1,
               "[campaign] name", "missing");
  expect_error(kHeader + "trials = \"3\"\n" + w, 6, "[campaign] trials", "expected an integer");
  expect_error(kHeader + "trials = 0\n" + w, 6, "[campaign] trials", "must be at least 1, got 0");
  expect_error(kHeader + w + "repetitions = 3000000000\n", 8, "[[workload]] repetitions",
               "must be at most 2147483647, got 3000000000");
  expect_error(kHeader + "seed = -1\n" + w, 6, "[campaign] seed", "must be at least 0");
  expect_error(kHeader + "order = \"random\"\n" + w, 6, "[campaign] order",
               "'random': expected \"interleaved\" or \"blocked\"");
  expect_error(kHeader + "timeout_s = 0\n" + w, 6, "[campaign] timeout_s", "must be a positive number");
  expect_error(kHeader + "profile = 1\n" + w, 6, "[campaign] profile", "expected true or false");
  expect_error(kHeader + "events = [\"cycles\", \"cyclez\"]\n" + w, 6, "[campaign] events",
               "'cyclez': unknown event");
  expect_error(kHeader + "counters = false\nevents = [\"cycles\"]\n" + w, 7, "[campaign] events",
               "contradicts counters = false");
  // A modifier libpfm4 rejects: the name cannot be encoded, so no run could count it.
  expect_error(kHeader + "events = [\"cycles:u\", \"cycles:x\"]\n" + w, 6, "[campaign] events",
               "libpfm4 cannot encode 'cycles:x': invalid event attribute");
}

// [campaign] host_label names this box's class on /metrics (collector/sysinfo/host_class.hpp): one plain
// word, since it is a label value and a dashboard variable's value; the file's line named when it is not.
TEST(CampaignErrors, HostLabelIsOneWord) {
  const std::string w = "[[workload]]\nname = \"yield\"\n";
  EXPECT_EQ(CampaignFile(kHeader + "host_label = \"rack-a.2_x\"\n" + w).load().host_label, "rack-a.2_x");
  EXPECT_EQ(CampaignFile(kHeader + w).load().host_label, "") << "none: the class is the host's shape";
  expect_error(kHeader + "host_label = \"lab 1\"\n" + w, 6, "[campaign] host_label",
               "'lab 1': a host label is one word of letters, digits, '.', '_' or '-'");
  expect_error(kHeader + "counters = false\nhost_label = \"a/b\"\n" + w, 7, "[campaign] host_label",
               "'a/b': a host label is one word");
  expect_error(kHeader + "host_label = \"\"\n" + w, 6, "[campaign] host_label", "must not be empty");
  expect_error(kHeader + "host_label = 3\n" + w, 6, "[campaign] host_label", "expected a string");
}

TEST(CampaignErrors, ScheduleStoreOutputAndConfigurations) {
  const std::string w = "[[workload]]\nname = \"yield\"\n";
  auto with = [&](const std::string& key, const std::string& value) {
    std::string text = kHeader;
    const auto at = text.find(key + " = ");
    const auto eol = text.find('\n', at);
    return text.replace(at, eol - at, key + " = " + value) + w;
  };
  expect_error(with("schedule", "\"*-*-* 25:00\""), 3, "[campaign] schedule",
               "schedule '*-*-* 25:00': hour out of range");
  expect_error(with("schedule", "\"daily Europe/Berlin\""), 3, "[campaign] schedule",
               "time zone 'Europe/Berlin' is not supported");
  expect_error(with("store", "\"postgresql://db/sched lab\""), 4, "[campaign] store",
               "a PostgreSQL URI has no spaces");
  expect_error(with("store", "\"mysql://db\""), 4, "[campaign] store", "expected sqlite:///ABSOLUTE/PATH");
  expect_error(with("store", "\"sqlite://store.db\""), 4, "[campaign] store", "three slashes");
  expect_error(with("output", "\"bundles\""), 5, "[campaign] output", "expected an absolute directory");
  expect_error(kHeader + "kernel_cache = \"cache\"\n" + w, 6, "[campaign] kernel_cache",
               "expected an absolute directory");
  expect_error(kHeader + "configurations = [\"running\", \"debian-6.2\"]\n" + w, 6,
               "[campaign] configurations", "unknown kernel recipe 'debian-6.2'");
  expect_error(kHeader + "configurations = [\"running\", \"running\"]\n" + w, 6, "[campaign] configurations",
               "'running' is listed twice");
  expect_error(kHeader + "configurations = []\n" + w, 6, "[campaign] configurations",
               "names no configuration");
}

TEST(Campaign, ATargetCampaignPairsItsConfigurationsInASeededRandomOrder) {
  CampaignFile f(kHeader +
                 "configurations = [\"debian-6.1\", \"debian-6.12\"]\ntarget_mde = \"3%\"\n"
                 "max_trials = 40\nbudget = \"2h\"\nseed = 7\n[[workload]]\nname = \"yield\"\n");
  const auto c = f.load();
  ASSERT_TRUE(c.target);
  EXPECT_EQ(c.target->mde_pct, 3);
  EXPECT_EQ(c.target->max_trials, 40);
  EXPECT_EQ(c.target->budget_s, 7200);
  EXPECT_EQ(c.target->pilot, 4);
  EXPECT_EQ(c.trials, 40);  // the cap is what the plan expands
  const auto plan = expand_plan(c);
  ASSERT_EQ(plan.size(), 80u);
  int b_first = 0;
  for (int t = 1; t <= 40; ++t) {
    const auto& first = plan[static_cast<std::size_t>(2 * (t - 1))];
    const auto& second = plan[static_cast<std::size_t>(2 * (t - 1) + 1)];
    EXPECT_EQ(first.trial, t);
    EXPECT_EQ(second.trial, t);
    EXPECT_NE(first.configuration, second.configuration);
    EXPECT_EQ(first.configuration == "debian-6.12", pair_b_first(c, t)) << "trial " << t;
    b_first += first.configuration == "debian-6.12";
  }
  // A fair coin over 40 pairs: both orders, neither overwhelming (P(outside 10..30) < 0.2%).
  EXPECT_GE(b_first, 10);
  EXPECT_LE(b_first, 30);
  // The same seed, the same orders; the keys stay those of a fixed campaign's trials.
  const auto plan_keys = keys(plan);
  EXPECT_EQ(keys(expand_plan(f.load())), plan_keys);
  EXPECT_NE(std::find(plan_keys.begin(), plan_keys.end(), "t40/debian-6.1/yield"), plan_keys.end());
}

TEST(Campaign, ABudgetAloneCapsTheTargetCampaignsPlan) {
  CampaignFile f(
      kHeader +
      "configurations = [\"debian-6.1\", \"debian-6.12\"]\ntarget_mde = 5\nbudget = 5400\n"
      "margin = \"2%\"\nalpha = 0.01\npilot = 6\nlook_every = 3\n[[workload]]\nname = \"yield\"\n");
  const auto c = f.load();
  ASSERT_TRUE(c.target);
  EXPECT_EQ(c.target->budget_s, 5400);
  EXPECT_EQ(c.target->margin_pct, 2);
  EXPECT_EQ(c.target->alpha, 0.01);
  EXPECT_EQ(c.target->pilot, 6);
  EXPECT_EQ(c.target->look_every, 3);
  EXPECT_EQ(c.trials, kBudgetOnlyMaxTrials);
}

TEST(CampaignErrors, TargetCampaigns) {
  const std::string w = "[[workload]]\nname = \"yield\"\n";
  const std::string two = kHeader + "configurations = [\"debian-6.1\", \"debian-6.12\"]\n";
  expect_error(two + "target_mde = 0\nmax_trials = 9\n" + w, 7, "[campaign] target_mde",
               "0: expected a percentage above 0 and below 100");
  expect_error(two + "target_mde = \"-3%\"\nmax_trials = 9\n" + w, 7, "[campaign] target_mde",
               "-3: expected a percentage above 0");
  expect_error(two + "target_mde = \"three\"\nmax_trials = 9\n" + w, 7, "[campaign] target_mde",
               "expected a percentage such as 3 or \"3%\"");
  expect_error(two + "target_mde = 3\n" + w, 7, "[campaign] target_mde", "give max_trials, budget or both");
  expect_error(two + "target_mde = 3\nmax_trials = 9\nmargin = 5\n" + w, 9, "[campaign] margin",
               "5% is larger than target_mde 3%");
  expect_error(two + "target_mde = 3\nmax_trials = 9\nmargin = 0\n" + w, 9, "[campaign] margin",
               "must be a positive percentage");
  expect_error(two + "trials = 3\ntarget_mde = 3\nmax_trials = 9\n" + w, 7, "[campaign] trials",
               "contradicts target_mde");
  expect_error(two + "order = \"blocked\"\ntarget_mde = 3\nmax_trials = 9\n" + w, 7, "[campaign] order",
               "\"blocked\" contradicts target_mde");
  expect_error(kHeader +
                   "configurations = [\"debian-6.1\", \"debian-6.12\", \"debian-6.1-rt\"]\ntarget_mde = 3\n"
                   "max_trials = 9\n" +
                   w,
               6, "[campaign] configurations", "target_mde compares two configurations; 3 given");
  expect_error(kHeader + "target_mde = 3\nmax_trials = 9\n" + w, 6, "[campaign] configurations",
               "target_mde compares two configurations; 1 given");
  expect_error(two + "target_mde = 3\nmax_trials = 3\npilot = 4\n" + w, 8, "[campaign] max_trials",
               "3 is below the pilot's 4 pairs");
  expect_error(two + "target_mde = 3\npilot = 2\nbudget = 60\n" + w, 8, "[campaign] pilot",
               "must be at least 3");
  expect_error(two + "target_mde = 3\nbudget = \"soon\"\n" + w, 8, "[campaign] budget",
               "budget 'soon': expected a duration such as 90s, 20m");
  expect_error(two + "target_mde = 3\nbudget = 0\n" + w, 8, "[campaign] budget",
               "must be a positive duration");
  expect_error(two + "target_mde = 3\nbudget = 60\nalpha = 0.5\n" + w, 9, "[campaign] alpha",
               "must lie in (0, 0.5)");
  for (const char* key : {"max_trials = 9", "budget = \"1h\"", "margin = 2", "pilot = 5"})
    expect_error(two + key + "\n" + w, 7,
                 std::string("[campaign] ") + std::string(key).substr(0, std::string(key).find(' ')),
                 "plans a sequential comparison: give target_mde too");
}

TEST(CampaignCheck, ATargetCampaignPrintsItsDesignAndThePilotsSteps) {
  CampaignFile f(kHeader +
                 "configurations = [\"debian-6.1\", \"debian-6.12\"]\ntarget_mde = \"3%\"\n"
                 "max_trials = 50\nbudget = \"3h\"\n[[workload]]\nname = \"yield\"\n");
  auto o = testing::schedlab("campaign check " + f.path().string());
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("sequential comparison of debian-6.1 (a) and debian-6.12 (b), each instance on its "
                       "headline metric: target MDE 3%, equivalence margin ±3%, alpha 0.05; a pilot of 4 "
                       "pairs plans it, then a look every 2 pair(s)"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("at most 50 pairs, budget 3 h 00 min of machine time"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("t4/debian-6.12/yield"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("t5/debian-6.12/yield"), std::string::npos) << "only the pilot is listed: " << o.out;
  EXPECT_NE(o.out.find("pairs 5 to 50 as the looks need them"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("at most, total: 100 steps"), std::string::npos) << o.out;
}

TEST(CampaignErrors, LabBoots) {
  const std::string w = "[[workload]]\nname = \"yield\"\n";
  expect_error(kHeader + "boot = \"pxe\"\n" + w, 6, "[campaign] boot",
               "'pxe': expected \"qemu\", \"kexec\" or \"grub\"");
  expect_error(kHeader + "boot = \"kexec\"\nconfigurations = [\"debian-6.12-yield-tail\"]\n" + w, 7,
               "[campaign] configurations", "'debian-6.12-yield-tail' is a source recipe; boot = \"kexec\"");
  expect_error(kHeader + "boot = \"grub\"\nconfigurations = [\"running\", \"debian-6.1\"]\n" + w, 7,
               "[campaign] configurations", "'running' cannot be mixed with recipes when boot = \"grub\"");
  // Under qemu the host and guests mix freely, and a lab box may run the running kernel alone.
  CampaignFile qemu(kHeader + "configurations = [\"running\", \"debian-6.12-yield-tail\"]\n" + w);
  EXPECT_EQ(qemu.load().boot, "qemu");
  CampaignFile lab(kHeader +
                   "boot = \"kexec\"\nconfigurations = [\"debian-6.1-no-gentle\", \"debian-6.12\"]\n" + w);
  EXPECT_EQ(lab.load().boot, "kexec");
}

TEST(CampaignErrors, Exporter) {
  const std::string w = "[[workload]]\nname = \"yield\"\n";
  expect_error(kHeader + "[exporter]\nlisten = \"localhost\"\n" + w, 7, "[exporter] listen",
               "expected a numeric IPV4:PORT");
  // The daemon's exporter refuses host names (it would listen wherever they resolve): so does the check.
  expect_error(kHeader + "[exporter]\nlisten = \"localhost:19465\"\n" + w, 7, "[exporter] listen",
               "\"localhost\" is not a numeric IPv4 address");
  expect_error(kHeader + "[exporter]\nlisten = \"127.0.0.1:65536\"\n" + w, 7, "[exporter] listen",
               "is not a port number");
  for (const char* good : {"127.0.0.1:19465", "0.0.0.0:9464", "[::1]:9464", ""}) {
    CampaignFile f(kHeader + "[exporter]\nlisten = \"" + good + "\"\n" + w);
    EXPECT_EQ(f.load().exporter.listen, good);
  }
  expect_error(kHeader + "[exporter]\npushgateway = \"gw:9091\"\n" + w, 7, "[exporter] pushgateway",
               "expected an http:// or https:// URL");
  expect_error(kHeader + "[exporter]\nconfigurations_per_host = 0\n" + w, 7,
               "[exporter] configurations_per_host", "must be at least 1");
}

TEST(CampaignErrors, Changes) {
  const std::string w = "[[workload]]\nname = \"yield\"\n";
  {
    CampaignFile f(kHeader + w);
    const auto c = f.load().changes;  // the defaults: detected and confirmed, 3 minutes a rerun
    EXPECT_TRUE(c.detect);
    EXPECT_TRUE(c.confirm);
    EXPECT_EQ(c.budget_s, 180);
    EXPECT_EQ(c.alpha, 0.05);
    EXPECT_EQ(c.min_effect_pct, 2);
  }
  {
    CampaignFile f(kHeader +
                   "[changes]\ndetect = true\nconfirm = false\nbudget = \"90s\"\nalpha = 0.01\n"
                   "min_effect = \"5%\"\n" +
                   w);
    const auto c = f.load().changes;
    EXPECT_FALSE(c.confirm);
    EXPECT_EQ(c.budget_s, 90);
    EXPECT_EQ(c.alpha, 0.01);
    EXPECT_EQ(c.min_effect_pct, 5);
  }
  expect_error(kHeader + "[changes]\nconfrim = true\n" + w, 7, "[changes] confrim", "unknown key");
  expect_error(kHeader + "[changes]\nbudget = \"soon\"\n" + w, 7, "[changes] budget", "soon");
  expect_error(kHeader + "[changes]\nbudget = 0\n" + w, 7, "[changes] budget", "must be a positive duration");
  expect_error(kHeader + "[changes]\nalpha = 1.5\n" + w, 7, "[changes] alpha", "expected a number in (0, 1)");
  expect_error(kHeader + "[changes]\nmin_effect = \"-1%\"\n" + w, 7, "[changes] min_effect", "0% or more");
  expect_error(kHeader + "[changes]\ndetect = false\nconfirm = true\n" + w, 8, "[changes] confirm",
               "needs detect = true");
  expect_error(kHeader + "[changes]\nconfirm = \"yes\"\n" + w, 7, "[changes] confirm", "");
}

TEST(CampaignErrors, Workloads) {
  {
    CampaignFile f(kHeader);
    try {
      f.load();
      FAIL() << "no error";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                f.path().string() + ": no [[workload]]: the campaign has nothing to run");
    }
  }
  expect_error(kHeader + "[[workload]]\nname = \"yeild\"\n", 7, "[[workload]] name",
               "unknown workload 'yeild' (known: yield, ");
  expect_error(kHeader + "[[workload]]\nrepetitions = 3\n", 6, "[[workload]] name", "missing");
  expect_error(kHeader + "[[workload]]\nname = \"yield\"\nrepetitions = 0\n", 8, "[[workload]] repetitions",
               "must be at least 1");
  expect_error(kHeader + "[[workload]]\nname = \"yield\"\n\n[[workload]]\nname = \"yield\"\n", 9,
               "[[workload]] id", "'yield' is already used by the [[workload]] on line 6");
  expect_error(kHeader + "[[workload]]\nname = \"yield\"\nid = \"a/b\"\n", 8, "[[workload]] id", "no '/'");
  expect_error(kHeader + "[[workload]]\nname = \"yield\"\nparams = { threads = \"x\" }\n", 8,
               "[[workload]] params.threads", "expected an integer, got 'x'");
  expect_error(kHeader + "[[workload]]\nname = \"yield\"\nparams = { threads = [1,\n 0] }\n", 9,
               "[[workload]] params.threads", "must be between 1 and 1024, got '0'");
  expect_error(kHeader + "[[workload]]\nname = \"yield\"\nparams = { threads = [] }\n", 8,
               "[[workload]] params.threads", "an empty list sweeps nothing");
  expect_error(kHeader + "[[workload]]\nname = \"yield\"\nparams = { placement = \"sideways\" }\n", 8,
               "[[workload]] params.placement", "'sideways' is not one of");
  expect_error(kHeader + "[[workload]]\nname = \"yield\"\nparams = 3\n", 8, "[[workload]] params",
               "expected a table");
  expect_error(kHeader + "workload = 3\n", 6, "[campaign] workload", "unknown key");
}

// The vm-6.18 capture: 2 CPUs, "thread_siblings_list" of cpu0 is "0", so no SMT sibling to place on.
TEST(CampaignCheck, ParametersAreCheckedAgainstTheMachineNamingTheWorkloadLine) {
  const auto vm = HostPaths::under(std::string(SCHEDLAB_FIXTURES_DIR) + "/vm-6.18");
  CampaignFile f(kHeader +
                 "[[workload]]\nname = \"yield\"\n\n[[workload]]\nname = \"yield\"\nid = \"smt\"\n" +
                 "params = { placement = \"smt-sibling\", threads = [1, 2] }\n");
  try {
    check_on_host(f.load(), vm);
    FAIL() << "smt-sibling accepted on a machine without SMT";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(
                  f.path().string() + ":9: [[workload]] smt: placement smt-sibling is not possible here", 0),
              0u)
        << message;
  }
  EXPECT_NO_THROW(check_on_host(load_campaign(kExamples / "smoke.toml"), vm));
}

TEST(CampaignCheck, PrintsThePlanThroughTheBinary) {
  auto o = testing::schedlab("campaign check " + (kExamples / "smoke.toml").string());
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("t1/running/yield"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("yields=20000"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("total: 1 steps, 3 repetitions (+1 discarded warm-ups), 0 boots"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("schedule: once"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("estimated duration: no past runs: unknown"), std::string::npos) << o.out;
  // The smoke campaign runs on the running kernel: no recipe, so nothing to boot by qemu.
  EXPECT_NE(o.out.find("; on the running kernel, nothing is booted\n"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("boot by"), std::string::npos) << o.out;

  auto nightly = testing::schedlab("campaign check " + (kExamples / "nightly.toml").string());
  EXPECT_EQ(nightly.code, 0) << nightly.out;
  EXPECT_NE(nightly.out.find("schedule: *-*-* 02:00:00; next run "), std::string::npos) << nightly.out;
  EXPECT_NE(nightly.out.find("total: 36 steps"), std::string::npos) << nightly.out;
  EXPECT_NE(nightly.out.find("36 boots"), std::string::npos) << nightly.out;
  EXPECT_NE(nightly.out.find("; recipes boot by kexec\n"), std::string::npos) << nightly.out;
}

// `campaign check` must refuse what `schedlab daemon` then refuses (issue #28: it accepted a host name
// that the exporter would not listen on).
TEST(CampaignCheck, RefusesTheListenAddressTheDaemonRefuses) {
  TempDir dir;  // where a daemon that went ahead would write: it must stay empty
  CampaignFile f("[campaign]\nname = \"t\"\nschedule = \"once\"\nstore = \"sqlite://" +
                 (dir.path() / "store.db").string() + "\"\noutput = \"" + (dir.path() / "bundles").string() +
                 "\"\n[exporter]\nlisten = \"localhost:19465\"\n[[workload]]\nname = \"yield\"\n");
  const std::string expected = "schedlab: " + f.path().string() +
                               ":7: [exporter] listen: \"localhost:19465\": \"localhost\" is not a numeric "
                               "IPv4 address";
  auto check = testing::schedlab("campaign check " + f.path().string());
  EXPECT_EQ(check.code, 2) << check.out;
  EXPECT_EQ(check.out.rfind(expected, 0), 0u) << check.out;
  auto daemon = testing::schedlab("daemon --config " + f.path().string());
  EXPECT_EQ(daemon.code, 2) << daemon.out;
  EXPECT_NE(daemon.out.find("\"localhost\" is not a numeric IPv4 address"), std::string::npos) << daemon.out;
  EXPECT_TRUE(testing::files_in(dir.path()).empty());
}

TEST(CampaignCheck, BadFileIsExitTwoWithFileLineKey) {
  CampaignFile f(kHeader + "[[workload]]\nname = \"yield\"\nparams = { threads = \"x\" }\n");
  auto o = testing::schedlab("campaign check " + f.path().string());
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_EQ(o.out, "schedlab: " + f.path().string() +
                       ":8: [[workload]] params.threads: expected an integer, got 'x'\n");
  auto missing = testing::schedlab("campaign check /nonexistent/c.toml");
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find("/nonexistent/c.toml: cannot read the campaign file"), std::string::npos)
      << missing.out;
}

}  // namespace
}  // namespace schedlab
