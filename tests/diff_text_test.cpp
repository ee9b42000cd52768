// What `schedlab diff` prints for people (issue #21), on real bundles: the text for a mailing list
// (--format text, 80 columns) and markdown, against golden files of two Debian kernels under qemu (6.1
// with CFS, 6.12 with EEVDF: yield with a competitor on its CPU is ~300x slower on 6.12, a real change of
// sched_yield's semantics); and which counter rows are shown: on the profile fixtures (the same yield loop
// counted per cgroup and per task) the per-task side's TASK-CLOCK per yield moves (per-task counting costs
// kernel work at every context switch) and is shown, an unchanged counter is not, unless --all.
//
// The golden files are the binary's output; after a deliberate change of the output, rewrite them with
//   SCHEDLAB_UPDATE_GOLDEN=1 build/tests/diff_text_test
// and read the difference before committing it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "core/text_table.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::schedlab;
using testing::sh;
using testing::slurp;
using testing::spit;

const fs::path kFixtures = SCHEDLAB_FIXTURES_DIR;
const fs::path kGolden = kFixtures / "qemu-6.1-vs-6.12" / "golden";
const std::string kPerCgroup = (kFixtures / "profile/counters-per-cgroup").string();
const std::string kPerTask = (kFixtures / "profile/counters-per-task").string();

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The diff of the two kernels, run from the fixtures' directory so that the sides' paths (in the
// legend) read the same in every checkout.
testing::Outcome qemu_diff(const std::string& options) {
  return sh("cd " + (kFixtures / "qemu-6.1-vs-6.12").string() + " && NO_COLOR=1 " + SCHEDLAB_BINARY +
            " diff " + options + " 6.1-cfs 6.12-eevdf");
}

void expect_golden(const std::string& out, const std::string& name) {
  const auto path = kGolden / name;
  if (const char* update = std::getenv("SCHEDLAB_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    fs::create_directories(kGolden);
    spit(path, out);
  }
  ASSERT_TRUE(fs::exists(path)) << path << " is missing: SCHEDLAB_UPDATE_GOLDEN=1 writes it";
  const auto golden = slurp(path);
  if (out == golden) return;
  // The first line that differs, then both in full.
  const auto a = lines_of(golden), b = lines_of(out);
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  ADD_FAILURE() << name << " differs from line " << i + 1
                << ":\n  golden: " << (i < a.size() ? a[i] : "(end)")
                << "\n  now:    " << (i < b.size() ? b[i] : "(end)") << "\nthe output in full:\n"
                << out;
}

// Words wrap at the width with the continuation indented; a path wider than the line is never cut (CI's
// clone under /check/work/... made `show` print a bundle's path in two pieces that could not be copied).
TEST(TextWrap, WordsWrapAndAPathWiderThanTheLineStaysWhole) {
  EXPECT_EQ(wrap("note     one two three four", 20, 9), "note     one two\n         three four");
  const std::string path = "/check/work/main/tests/fixtures/profile/counters-per-cgroup/trial0.json";
  EXPECT_EQ(wrap("bundle   " + path, 40, 9), "bundle   " + path);
  EXPECT_EQ(wrap("read " + path + " first", 40, 2), "read\n  " + path + "\n  first");
  // A list without spaces breaks after its commas.
  EXPECT_EQ(wrap("features [\"PLACE_LAG\",\"RUN_TO_PARITY\",\"DELAY_DEQUEUE\"]", 30, 2),
            "features [\"PLACE_LAG\",\n  \"RUN_TO_PARITY\",\n  \"DELAY_DEQUEUE\"]");
}

TEST(DiffText, TextForMailIsTheGoldenOutputWithin80Columns) {
  const auto o = qemu_diff("--format text");
  ASSERT_EQ(o.code, 0) << o.out;
  for (const auto& line : lines_of(o.out)) EXPECT_LE(display_width(line), 80u) << line;
  EXPECT_EQ(o.out.find('\033'), std::string::npos) << "no colour in text for mail";
  // What the golden file must say, read from the output itself: the verdict table first, the slowdown
  // of yield with a competitor on its top line, sides by their labels.
  const auto lines = lines_of(o.out);
  ASSERT_GE(lines.size(), 8u);
  EXPECT_EQ(lines[0].rfind("schedlab diff: 6.12-eevdf against 6.1-cfs", 0), 0u) << o.out;
  std::size_t table = 0;
  while (table < lines.size() && lines[table].rfind("instance", 0) != 0) ++table;
  ASSERT_LT(table + 1, lines.size()) << o.out;
  EXPECT_LT(table, 6u) << "the verdict table opens the output";
  EXPECT_EQ(lines[table + 1].rfind("yield", 0), 0u) << lines[table + 1];
  const auto json = qemu_diff("--format json");
  ASSERT_EQ(json.code, 0) << json.out;
  const auto top = nlohmann::json::parse(json.out).at("summary").at(0);
  EXPECT_EQ(top["instance"], "yield.competitors=1") << top;
  EXPECT_GT(top["shift"].get<double>(), 10000) << "~300x slower per yield: " << top;
  EXPECT_NE(lines[table + 1].find(top["text"]["change"].get<std::string>()), std::string::npos)
      << lines[table + 1];
  EXPECT_NE(o.out.find("kernbench, mean (sd)"), std::string::npos) << "kernbench's classic table";
  expect_golden(o.out, "diff.txt");
}

TEST(DiffText, MarkdownIsTheGoldenOutput) {
  const auto o = qemu_diff("--format markdown");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("| instance |"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("| --- |"), std::string::npos) << o.out;
  expect_golden(o.out, "diff.md");
}

// The same numbers in the three formats: each verdict line of the JSON's summary is in the text.
TEST(DiffText, TextAndJsonSummaryAgree) {
  const auto json = qemu_diff("--format json");
  ASSERT_EQ(json.code, 0) << json.out;
  const auto text = qemu_diff("--format text").out;
  const auto summary = nlohmann::json::parse(json.out).at("summary");
  ASSERT_GE(summary.size(), 3u);
  for (const auto& line : summary) {
    if (line["kind"] != "metric") continue;
    EXPECT_NE(text.find(line["text"]["change"].get<std::string>()), std::string::npos) << line;
    EXPECT_NE(text.find(line["text"]["interval"].get<std::string>()), std::string::npos) << line;
  }
}

// The counter table of the first instance (yield) of the profile fixtures' diff: the counter names shown.
std::vector<std::string> counter_rows(const std::string& out) {
  std::vector<std::string> names;
  bool in_table = false;
  for (const auto& line : lines_of(out)) {
    if (line.rfind("  counter ", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.rfind("  ", 0) != 0 || line.size() < 3 || line[2] == ' ' || line[2] == '(') break;
    names.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  return names;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(DiffText, ACounterThatMovedIsShownAnUnchangedOneOnlyWithAll) {
  const auto json_out = schedlab("diff --force --json " + kPerCgroup + " " + kPerTask);
  ASSERT_EQ(json_out.code, 0) << json_out.out;
  const auto j = nlohmann::json::parse(json_out.out);
  // The JSON says which moved: per-task counting costs TASK-CLOCK per yield (a real cost at every
  // switch); irq time per yield is zero on both sides.
  std::map<std::string, bool> outside;
  for (const auto& m : j["instances"][0]["metrics"])
    if (m["kind"] == "counter") outside[m["name"]] = m["comparisons"][0]["outside_noise"].get<bool>();
  ASSERT_TRUE(outside.count("perf::TASK-CLOCK/op"));
  ASSERT_TRUE(outside.count("system.irq_s/op"));
  EXPECT_TRUE(outside["perf::TASK-CLOCK/op"]);
  EXPECT_FALSE(outside["system.irq_s/op"]);

  const auto shown = counter_rows(schedlab("diff --force " + kPerCgroup + " " + kPerTask).out);
  EXPECT_TRUE(has(shown, "perf::TASK-CLOCK/op"));
  EXPECT_FALSE(has(shown, "system.irq_s/op"));
  EXPECT_FALSE(has(shown, "perf::TASK-CLOCK")) << "per operation instead of the total, not both";
  std::size_t moved = 0;
  for (const auto& [name, out] : outside) moved += out && name.find("/op") != std::string::npos;
  EXPECT_EQ(shown.size(), moved) << "exactly the per-operation rows that moved";

  const auto all = counter_rows(schedlab("diff --force --all " + kPerCgroup + " " + kPerTask).out);
  EXPECT_TRUE(has(all, "perf::TASK-CLOCK/op"));
  EXPECT_TRUE(has(all, "system.irq_s/op"));
  EXPECT_GT(all.size(), shown.size());
  // Moved rows first, so the default's rows lead --all's too.
  for (std::size_t i = 0; i < shown.size(); ++i) EXPECT_TRUE(has(shown, all[i])) << all[i];
}

}  // namespace
}  // namespace schedlab
