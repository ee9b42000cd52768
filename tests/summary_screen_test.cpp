// What a person sees on a 100x40 terminal (tmux, issue #21): `schedlab run` of the quick suite ends on
// a summary whose every headline line is on screen, and `schedlab diff` of two such bundles opens on a
// screen that holds every headline verdict. The quick suite runs with short parameters (its instances and
// headline metrics are those of the default quick suite; their numbers do not matter here), and its
// bundle is checked against the old format's size: a quarter or less.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "core/display.hpp"
#include "core/text_table.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::files_in;
using testing::TempDir;

constexpr int kColumns = 100;
constexpr int kRows = 40;

// The default quick suite, short: every instance and headline metric, each repetition a fraction of a second.
// wakeup's window is 0.5 s: in a 0.1 s window the starvation instance's threads, started beside its make
// load on a CI host shared with a neighbour test, once recorded no wakeup at all (the repetition failed).
const std::string kShortQuickSuite =
    "run --repetitions 2 --settle-timeout 0 --param yield.yields=20000 --param yield.duration_s=0.1 "
    "--param kernbench.files=1 --param wakeup.duration_s=0.5 --param tbench.duration_s=0.1 "
    "--param tbench.warmup_s=0.05 --param chat.messages=3 --param micro.min_time_s=0.01 "
    "--param requests.duration_s=0.1 --param fairness.duration_s=0.1 --param fairness.warmup_s=0.05 "
    "--param sdet.scripts=2 --param groups.loops=10";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A tmux server of its own (its socket in a temporary directory), one window of 100x40 running `command`,
// then waiting so that the screen can be read; the server is killed when the test is done with it.
class Terminal {
 public:
  Terminal(const fs::path& dir, const std::string& command) : socket_((dir / "tmux.sock").string()) {
    const auto conf = dir / "tmux.conf";
    testing::spit(conf, "set -g history-limit 100000\nset -g status off\n");
    const auto script = dir / "command.sh";
    testing::spit(script, command + "\necho SCHEDLAB-EXIT=$?\nsleep 600\n");
    const auto o = testing::sh("tmux -f " + conf.string() + " -S " + socket_ + " new-session -d -x " +
                               std::to_string(kColumns) + " -y " + std::to_string(kRows) + " 'sh " +
                               script.string() + "'");
    started_ = o.code == 0;
    start_output_ = o.out;
  }
  ~Terminal() { testing::sh("tmux -S " + socket_ + " kill-server"); }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  bool started() const { return started_; }
  const std::string& start_output() const { return start_output_; }

  // Everything the window showed, from its first line, as the terminal laid it out (long lines wrapped).
  std::string history() const { return testing::sh("tmux -S " + socket_ + " capture-pane -p -S - -E -").out; }
  // The screen as it is now.
  std::string screen() const { return testing::sh("tmux -S " + socket_ + " capture-pane -p").out; }

  // Waits for the command to end; its exit code, or -1 after `seconds`.
  int wait(int seconds) const {
    for (int i = 0; i < seconds * 10; ++i) {
      const auto text = history();
      if (auto at = text.find("SCHEDLAB-EXIT="); at != std::string::npos)
        return std::atoi(text.c_str() + at + 14);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return -1;
  }

 private:
  std::string socket_;
  bool started_ = false;
  std::string start_output_;
};

class SummaryScreen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    // The first run on a terminal, as a person starts it; the second one plainly, for the diff.
    terminal_dir_ = dir_->path() / "run-terminal";
    fs::create_directories(terminal_dir_);
    run_terminal_ = new Terminal(terminal_dir_, std::string(SCHEDLAB_BINARY) + " " + kShortQuickSuite +
                                                    " --seed 3 --out " + (dir_->path() / "a").string());
    ASSERT_TRUE(run_terminal_->started()) << run_terminal_->start_output();
    run_exit_ = run_terminal_->wait(240);
    auto o = testing::schedlab(kShortQuickSuite + " --seed 4 --out " + (dir_->path() / "b").string());
    ASSERT_EQ(o.code, 0) << o.out;
  }
  static void TearDownTestSuite() {
    delete run_terminal_;
    delete dir_;
  }

  static fs::path bundle(const std::string& side) {
    const auto files = files_in(dir_->path() / side);
    return files.size() == 1 ? files[0] : fs::path();
  }

  static inline TempDir* dir_ = nullptr;
  static inline fs::path terminal_dir_;
  static inline Terminal* run_terminal_ = nullptr;
  static inline int run_exit_ = -1;
};

// The instance column of a summary row, or of the row above it for an instance's second headline metric.
struct ScreenRow {
  std::string instance;
  std::string metric;
  std::string line;
};

std::vector<ScreenRow> summary_rows(const std::vector<std::string>& screen) {
  std::vector<ScreenRow> rows;
  // The table's columns start where the header's words do: an elided label ("micro~create") is
  // followed by a single space, so the columns are found by position, not by runs of spaces.
  std::size_t metric_at = std::string::npos;
  std::string instance;
  for (const auto& line : screen) {
    if (line.rfind("instance ", 0) == 0 && line.find("headline") != std::string::npos) {
      metric_at = line.find("headline");
      continue;
    }
    if (metric_at == std::string::npos) continue;
    if (line.empty() || line[0] == '(') break;
    if (line[0] != ' ') {
      instance = line.substr(0, metric_at);
      instance.erase(instance.find_last_not_of(' ') + 1);
    }
    const auto metric_end = line.find(' ', metric_at);
    rows.push_back({instance, line.substr(metric_at, metric_end - metric_at), line});
  }
  return rows;
}

TEST_F(SummaryScreen, RunsSummaryShowsEveryHeadlineOnOneScreen) {
  ASSERT_EQ(run_exit_, 0) << run_terminal_->history();
  const auto file = bundle("a");
  ASSERT_FALSE(file.empty());
  const Bundle b = load_bundle(file);
  const auto screen = lines_of(run_terminal_->screen());
  ASSERT_LE(screen.size(), static_cast<std::size_t>(kRows));
  const auto rows = summary_rows(screen);
  std::set<std::pair<std::string, std::string>> shown;
  for (const auto& r : rows) shown.insert({r.instance, r.metric});
  std::size_t headlines = 0;
  for (const auto& in : b.instances)
    for (const auto& [name, info] : in.metric_info)
      if (info.headline) {
        ++headlines;
        // A long name or label may be elided to fit the screen when the values or the warnings are wide
        // ("wake~99_us", "wakeu~vation" beside "counters contaminated ..."): shown all the same.
        const auto label = instance_label(in.id, in.workload);
        bool on_screen = shown.count({label, name}) > 0;
        for (const auto& [i, m] : shown)
          on_screen = on_screen || ((i == label || elide(label, display_width(i)) == i) &&
                                    (m == name || elide(name, display_width(m)) == m));
        EXPECT_TRUE(on_screen) << in.id << " " << name << " is not on the screen:\n"
                               << run_terminal_->screen();
      }
  EXPECT_GE(headlines, 20u) << "the quick suite's instances";
  // The path of the bundle is on the screen too, and no line of the summary is wider than the terminal.
  EXPECT_NE(run_terminal_->screen().find("bundle: " + file.string()), std::string::npos);
  for (const auto& line : lines_of(testing::schedlab("show " + file.string()).out))
    EXPECT_LE(display_width(line), static_cast<std::size_t>(kColumns)) << line;
}

TEST_F(SummaryScreen, DiffOpensOnEveryHeadlineVerdict) {
  const auto a = bundle("a"), b = bundle("b");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  const auto json = testing::schedlab("diff --json " + a.string() + " " + b.string());
  ASSERT_EQ(json.code, 0) << json.out;
  const auto summary = nlohmann::json::parse(json.out).at("summary");
  const auto dir = dir_->path() / "diff-terminal";
  fs::create_directories(dir);
  Terminal terminal(dir, std::string(SCHEDLAB_BINARY) + " diff " + a.string() + " " + b.string());
  ASSERT_TRUE(terminal.started()) << terminal.start_output();
  ASSERT_EQ(terminal.wait(60), 0) << terminal.history();
  auto lines = lines_of(terminal.history());
  ASSERT_GT(lines.size(), static_cast<std::size_t>(kRows)) << "the diff is longer than a screen";
  lines.resize(kRows);
  std::string first_screen;
  for (const auto& l : lines) first_screen += l + "\n";
  // Every headline metric of every instance, and its verdict as `diff --json` gives it, on that screen.
  std::size_t headlines = 0;
  std::set<std::string> labels_with_verdicts;
  for (const auto& line : summary) {
    if (line["kind"] != "metric") continue;
    ++headlines;
    const auto label = line["label"].get<std::string>();
    labels_with_verdicts.insert(label);
    const auto metric = line["metric"].get<std::string>();
    const auto verdict = line["text"]["verdict"].get<std::string>();
    // When the values are wide the table elides long labels and metric names ("micro migra~:other-core"):
    // still the same row, so any elision of them counts.
    const auto starts_with_label = [&](const std::string& l) {
      for (std::size_t width = display_width(label); width >= std::min<std::size_t>(display_width(label), 8);
           --width)
        if (l.rfind(elide(label, width) + " ", 0) == 0) return true;
      return false;
    };
    const auto has_metric = [&](const std::string& l) {
      for (std::size_t width = display_width(metric);
           width >= std::min<std::size_t>(display_width(metric), 8); --width)
        if (l.find(" " + elide(metric, width) + " ") != std::string::npos) return true;
      return false;
    };
    bool found = false;
    for (const auto& l : lines)
      found = found || (starts_with_label(l) && has_metric(l) && l.find(verdict) != std::string::npos);
    EXPECT_TRUE(found) << label << " " << metric << " " << verdict << " is not on the first screen:\n"
                       << first_screen;
  }
  EXPECT_GE(headlines, 20u);
  // Every instance of the quick suite (every registered workload has one) has its headline verdicts.
  for (const auto& in : load_bundle(a).instances)
    EXPECT_EQ(labels_with_verdicts.count(instance_label(in.id, in.workload)), 1u)
        << in.id << " has no verdict";
}

// The bundle of the quick suite against what the old writer wrote for the same bundle: schedlab.result/1
// with every per-operation copy, indented by one space (core/bundle_io.cpp before #21).
TEST_F(SummaryScreen, QuickSuiteBundleIsAQuarterOfTheOldFormatOrLess) {
  const auto file = bundle("a");
  ASSERT_FALSE(file.empty());
  Bundle b = load_bundle(file);
  EXPECT_EQ(b.schema, kResultSchema);
  b.schema = kResultSchemaV1;
  const auto v1_bytes = to_json(b).dump(1, ' ', false, nlohmann::json::error_handler_t::replace).size() + 1;
  const auto v2_bytes = fs::file_size(file);
  RecordProperty("v1_bytes", std::to_string(v1_bytes));
  RecordProperty("v2_bytes", std::to_string(v2_bytes));
  std::cout << "quick suite (short): /1 " << v1_bytes << " bytes, /2 " << v2_bytes << " bytes\n";
  EXPECT_LE(v2_bytes * 4, v1_bytes);
  // Nothing lost: what the /1 text holds reads back from the /2 file.
  auto v1 = parse_bundle(to_json(b).dump(1), "v1");
  auto j1 = to_json(v1), j2 = to_json(load_bundle(file));
  j1.erase("schema");
  j2.erase("schema");
  EXPECT_EQ(j1, j2);
}

}  // namespace
}  // namespace schedlab
