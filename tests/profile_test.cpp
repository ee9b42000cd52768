// The sampled kernel profile: kallsyms of real Debian kernels (tests/fixtures/debian-*-qemu-smp8) and
// broken copies, a live profile of the yield workload on this machine, and diffprofile on two real
// profiled runs (tests/fixtures/profile/README.md).
#include <gtest/gtest.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <string_view>

#include "cli_util.hpp"
#include "collector/profile/kallsyms.hpp"
#include "collector/profile/profile_source.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "diff/diff.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using testing::TempDir;

const fs::path kFixtures = SCHEDLAB_FIXTURES_DIR;

std::string kallsyms_of(const std::string& guest) {
  auto text = read_gzip_text(kFixtures / guest / "proc/kallsyms.gz");
  if (!text) throw Error("cannot read the kallsyms fixture of " + guest);
  return *text;
}

// One line of /proc/kallsyms: "ADDRESS TYPE NAME[\t[MODULE]]".
struct KallsymsLine {
  std::uint64_t address = 0;
  char type = 0;
  std::string name;
  std::string module;  // empty for the kernel's own symbols
};

// The first line `wanted` accepts. A plain scan: std::regex over megabytes of kallsyms takes seconds in
// the sanitizer build.
std::optional<KallsymsLine> first_line(const std::string& text,
                                       const std::function<bool(const KallsymsLine&)>& wanted) {
  std::size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    if (line.size() < 20 || line[16] != ' ' || line[18] != ' ') continue;
    KallsymsLine l;
    l.address = std::stoull(std::string(line.substr(0, 16)), nullptr, 16);
    l.type = line[17];
    auto rest = line.substr(19);
    if (auto tab = rest.find('\t'); tab != std::string_view::npos) {
      auto module = rest.substr(tab + 1);
      if (module.size() > 2 && module.front() == '[' && module.back() == ']')
        l.module = std::string(module.substr(1, module.size() - 2));
      rest = rest.substr(0, tab);
    }
    l.name = std::string(rest);
    if (wanted(l)) return l;
  }
  return std::nullopt;
}

bool is_text(char type) {
  return type == 't' || type == 'T';
}

// The address kallsyms gives a symbol (first match), to probe lookups against the real table.
std::uint64_t address_of(const std::string& text, const std::string& name) {
  auto found = first_line(text, [&](const KallsymsLine& l) { return is_text(l.type) && l.name == name; });
  if (!found) throw Error(name + " not in kallsyms");
  return found->address;
}

class RealKallsyms : public ::testing::TestWithParam<std::string> {};

TEST_P(RealKallsyms, ResolvesTheSchedulerPath) {
  const auto text = kallsyms_of(GetParam());
  const auto table = KernelSymbols::parse(text, GetParam() + "/kallsyms");
  EXPECT_FALSE(table.hidden());
  EXPECT_GT(table.size(), 40000u);
  for (const char* name : {"__schedule", "do_sched_yield", "schedule", "try_to_wake_up"}) {
    const auto start = address_of(text, name);
    for (std::uint64_t offset : {0, 1, 7}) {
      const auto* sym = table.find(start + offset);
      ASSERT_NE(sym, nullptr) << name;
      // Aliases share an address (e.g. _text and _stext); the name found is one of them.
      EXPECT_EQ(table.find(start)->address, start);
      if (offset > 0) {
        EXPECT_EQ(sym->address, start) << name << "+" << offset;
      }
    }
  }
  // Below the kernel's text there is no symbol.
  EXPECT_EQ(table.find(0x1000), nullptr);
}

// The fixtures' guests had no modules loaded; the live table of this machine has module text (at
// least ftrace's trampolines, "[__builtin__ftrace]") when it has any.
TEST(Kallsyms, ModuleTextResolvesWithTheModulesName) {
  const auto text = read_text("/proc/kallsyms").value_or("");
  auto module_text =
      first_line(text, [](const KallsymsLine& l) { return is_text(l.type) && !l.module.empty(); });
  if (!module_text) GTEST_SKIP() << "no module text in this machine's /proc/kallsyms";
  const auto table = KernelSymbols::parse(text, "/proc/kallsyms");
  const auto* sym = table.find(module_text->address + 1);
  ASSERT_NE(sym, nullptr);
  EXPECT_EQ(sym->name, module_text->name + " [" + module_text->module + "]");
}

INSTANTIATE_TEST_SUITE_P(Debian, RealKallsyms,
                         ::testing::Values("debian-6.1-qemu-smp8", "debian-6.12-qemu-smp8"));

TEST(Kallsyms, DataSymbolsDoNotSwallowText) {
  const auto text = kallsyms_of("debian-6.12-qemu-smp8");
  const auto table = KernelSymbols::parse(text, "6.12");
  // Data lies past _etext (or is per-CPU, at small offsets): an IP there is not a function's.
  for (char type : {'d', 'b', 'r'}) {
    auto sym = first_line(text, [&](const KallsymsLine& l) {
      return std::tolower(l.type) == type && l.module.empty() && (l.address >> 32) == 0xffffffffu;
    });
    ASSERT_TRUE(sym) << "no symbol of type " << type;
    const auto* data = table.find(sym->address);
    EXPECT_EQ(data, nullptr) << sym->name << " resolved to " << data->name;
  }
}

TEST(Kallsyms, BrokenCopiesNameTheFileAndLine) {
  auto text = kallsyms_of("debian-6.1-qemu-smp8");
  const auto third = [&] {
    std::size_t at = 0;
    for (int i = 0; i < 2; ++i) at = text.find('\n', at) + 1;
    return at;
  }();
  auto expect_error = [](const std::string& copy, const std::string& what) {
    try {
      KernelSymbols::parse(copy, "broken/kallsyms");
      ADD_FAILURE() << "no error for " << what;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("broken/kallsyms"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  auto not_hex = text;
  not_hex.replace(third, 1, "g");
  expect_error(not_hex, "broken/kallsyms:3: address");
  auto truncated = text.substr(0, third + 17) + "\n" + text.substr(third);
  expect_error(truncated, "broken/kallsyms:3: expected");
  expect_error("", "empty");
  // kernel.kptr_restrict as an unprivileged user sees it: every address zero.
  const auto hidden = KernelSymbols::parse(
      "0000000000000000 T _stext\n0000000000000000 T __schedule\n0000000000000000 t foo\t[kvm]\n", "hidden");
  EXPECT_TRUE(hidden.hidden());
  EXPECT_EQ(hidden.find(0xffffffff81000000), nullptr);
}

TEST(ProfileSourceTest, AnEventThatDoesNotOpenIsUnsupportedWithItsErrno) {
  ProfileSource source({}, [](perf_event_attr&, pid_t, int, int, unsigned long) { return -ENOENT; });
  source.attach({::getpid(), {}, {0}, {}});
  source.enable();
  Repetition rep;
  source.collect(rep);
  EXPECT_EQ(rep.profile["status"], "unsupported");
  EXPECT_EQ(rep.profile["errno"], ENOENT);
  EXPECT_NE(rep.profile["reason"].get<std::string>().find("CPU 0"), std::string::npos) << rep.profile.dump();
}

// On this machine: a profile of the yield workload names the kernel's yield/schedule path.
TEST(ProfileLive, TheYieldWorkloadsProfileNamesTheYieldPath) {
  TempDir out;
  auto o = testing::schedlab(
      "run --workload yield --param yield.yields=1000000 --repetitions 1 --no-counters --profile "
      "--settle-timeout 1 --out " +
      out.path().string());
  ASSERT_EQ(o.code, 0) << o.out;
  const auto files = testing::files_in(out.path());
  ASSERT_EQ(files.size(), 1u);
  const auto bundle = load_bundle(files[0]);
  const auto& in = bundle.instances.at(0);
  ASSERT_EQ(in.diagnostics.size(), 1u);
  EXPECT_TRUE(in.repetitions.at(0).profile.empty()) << "a timed repetition was profiled";
  EXPECT_EQ(in.instrumentation["diagnostic"]["profile"], true);
  const auto& p = in.diagnostics[0].profile;
  ASSERT_EQ(p["status"], "ok") << p.dump();
  EXPECT_EQ(p["event"], "cpu-clock");
  EXPECT_EQ(p["period"], 1000000);
  EXPECT_EQ(p["nmi"], false);
  EXPECT_EQ(p["lost_samples"], 0);
  // cpu-clock at 1 kHz samples once per millisecond of the profiled tasks' CPU time, so the count
  // follows the diagnostic repetition's own rusage rather than a guess at this host's yield speed
  // (a fixed floor of 50 failed in CI when 300,000 yields took 45 ms).
  const auto& rusage = in.diagnostics[0].rusage;
  const double cpu_ms = 1000 * (rusage["user_s"].get<double>() + rusage["system_s"].get<double>());
  ASSERT_GT(cpu_ms, 50) << rusage.dump();
  EXPECT_GT(p["samples"].get<double>(), 0.5 * cpu_ms) << rusage.dump();
  EXPECT_LT(p["samples"].get<double>(), 1.5 * cpu_ms + 10) << rusage.dump();
  EXPECT_GT(p["kernel_samples"].get<double>(), p["samples"].get<double>() / 2);
  double sum = 0;
  for (const auto& [symbol, n] : p["symbols"].items()) sum += n.get<double>();
  EXPECT_EQ(sum, p["samples"].get<double>());
  // The profile names the yield path: at least two of its functions among the symbols sampled. Not their
  // rank: where the samples land first is the host's (on a paravirtual host the timer's samples skid onto
  // pvm_irq_enable, under ASan the exit's unmap_page_range takes a place, beside a hog the ranks move).
  // x64_sys_call: the syscall table's dispatcher since 6.9, where the yield enters.
  const std::set<std::string> yield_path = {
      "do_sched_yield",     "__x64_sys_sched_yield",     "__schedule",           "schedule",
      "finish_task_switch", "finish_task_switch.isra.0", "_raw_spin_unlock_irq", "x64_sys_call"};
  std::size_t on_path = 0;
  std::string names;
  for (const auto& [symbol, n] : p["symbols"].items()) {
    if (n.get<double>() > 0) on_path += yield_path.count(symbol);
    names += symbol + " ";
  }
  EXPECT_GE(on_path, 2u) << "symbols sampled: " << names;
}

TEST(ProfileLive, BadProfileOptionsAreBadInput) {
  TempDir out;
  for (const char* args : {"--profile --profile-event no-such-event", "--profile --profile-frequency 0",
                           "--profile --profile-scope everywhere"}) {
    auto o = testing::schedlab(std::string("run --workload yield ") + args + " --out " + out.path().string());
    EXPECT_EQ(o.code, 2) << args << ": " << o.out;
    EXPECT_TRUE(testing::files_in(out.path()).empty());
  }
}

// Two real runs of yield with two threads ping-ponging on one CPU: counters per cgroup (A) and per
// task (B). Per-task counters are switched at every context switch, in finish_task_switch. The counter
// scope is a measuring method, so the diff compares them only when forced.
class Diffprofile : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* dir : {"counters-per-cgroup", "counters-per-task"})
      sides_.push_back(load_side((kFixtures / "profile" / dir).string(), "."));
    DiffOptions forced;
    forced.force = true;
    diff_ = build_diff(sides_, forced);
    ASSERT_EQ(diff_.instances.size(), 1u);
    ASSERT_EQ(diff_.instances[0].profiles.size(), 1u);
  }
  // Sum of one symbol over a side's diagnostic repetitions, straight from the JSON.
  static std::pair<double, double> raw(const Side& side, const std::string& symbol) {
    double count = 0, ops = 0;
    for (const auto& b : side.bundles)
      for (const auto& rep : b.bundle.instances.at(0).diagnostics) {
        if (rep.profile.empty()) continue;  // the traced repetition
        count += symbol == "total" ? rep.profile.at("samples").get<double>()
                                   : rep.profile.at("symbols").value(symbol, 0.0);
        ops += rep.metrics.at("operations").value;
      }
    return {count, ops};
  }
  std::vector<Side> sides_;
  DiffResult diff_;
};

TEST_F(Diffprofile, CountsAreScaledToTheBaselinesOperations) {
  const auto& p = diff_.instances[0].profiles[0];
  EXPECT_EQ(p.per, "operation");
  ASSERT_GT(p.lines.size(), 5u);
  EXPECT_EQ(p.lines[0].symbol, "total");
  for (const auto& l : p.lines) {
    auto [a, ops_a] = raw(sides_[0], l.symbol);
    auto [b, ops_b] = raw(sides_[1], l.symbol);
    EXPECT_DOUBLE_EQ(l.base, a) << l.symbol;
    EXPECT_NEAR(l.other, b * ops_a / ops_b, 1e-9 * (1 + b)) << l.symbol;
    EXPECT_NEAR(l.delta, l.other - l.base, 1e-9 * (1 + b)) << l.symbol;
    if (a == 0)
      EXPECT_EQ(l.pct, 0.0) << l.symbol;
    else
      EXPECT_NEAR(l.pct, 100 * (l.other - a) / a, 1e-9) << l.symbol;
    EXPECT_EQ(l.noise, std::fabs(l.delta) < 2 * std::sqrt(a + p.scale * p.scale * b)) << l.symbol;
  }
  for (std::size_t i = 2; i < p.lines.size(); ++i) EXPECT_GE(p.lines[i - 1].delta, p.lines[i].delta);
  // The effect the fixture shows: the largest increase is the context-switch tail.
  EXPECT_EQ(p.lines[1].symbol.rfind("finish_task_switch", 0), 0u) << p.lines[1].symbol;
  EXPECT_FALSE(p.lines[1].noise);
  EXPECT_GT(p.lines[1].pct, 20);
}

TEST_F(Diffprofile, PrintsTheClassicFormat) {
  auto options = diff_.options;
  options.profile.all = true;
  diff_.options = options;
  const auto text = format_diff_text(diff_, false);
  const auto at = text.find("diffprofile");
  ASSERT_NE(at, std::string::npos) << text;
  std::istringstream lines(text.substr(at));
  std::string line;
  std::getline(lines, line);
  const std::regex row(R"(^ +(-?\d+) +(-?\d+\.\d)% (\S.*)$)");
  std::vector<std::string> symbols;
  bool absent_from_base = false;
  while (std::getline(lines, line) && !line.empty() && line.rfind("  trace", 0) != 0) {
    if (line.find("warning:") != std::string::npos) {
      EXPECT_NE(line.find("not NMI-based"), std::string::npos) << line;
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, row)) << "not `delta pct% symbol`: '" << line << "'";
    symbols.push_back(m[3].str());
    for (const auto& l : diff_.instances[0].profiles[0].lines)
      if (l.symbol == m[3].str() && l.base == 0) {
        absent_from_base = true;
        EXPECT_EQ(m[2].str(), "0.0") << line;
      }
  }
  ASSERT_FALSE(symbols.empty());
  EXPECT_EQ(symbols.front(), "total");
  EXPECT_TRUE(absent_from_base) << "the fixture has symbols only the per-task run hit";
  EXPECT_EQ(symbols.size(), diff_.instances[0].profiles[0].lines.size());
}

TEST_F(Diffprofile, HidesPoissonNoiseAndLimitsHeadAndTail) {
  const auto& p = diff_.instances[0].profiles[0];
  std::size_t noise = 0;
  for (std::size_t i = 1; i < p.lines.size(); ++i) noise += p.lines[i].noise;
  ASSERT_GT(noise, 0u);
  const auto hidden = format_diffprofile(p, {});
  EXPECT_NE(hidden.find(std::to_string(noise) + " symbols within Poisson noise"), std::string::npos)
      << hidden;
  const auto limited = format_diffprofile(p, {2, true});
  std::istringstream lines(limited);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);)
    if (line.find("warning") == std::string::npos) rows.push_back(line);
  ASSERT_EQ(rows.size(), 6u) << limited;  // total, 2 head, ..., 2 tail
  EXPECT_NE(rows[0].find("total"), std::string::npos);
  EXPECT_NE(rows[3].find("..."), std::string::npos);
  EXPECT_NE(rows[5].find(p.lines.back().symbol), std::string::npos);
}

TEST_F(Diffprofile, JsonCarriesEveryLine) {
  const auto j = diff_to_json(diff_);
  const auto& prof = j["instances"][0]["profiles"][0];
  EXPECT_EQ(prof["event"], "cpu-clock");
  EXPECT_EQ(prof["normalised_per"], "operation");
  EXPECT_EQ(prof["lines"].size(), diff_.instances[0].profiles[0].lines.size());
  EXPECT_EQ(prof["lines"][0]["symbol"], "total");
}

// perf sched timehist's breakdown, side by side: the rows are the trace totals over operations.
TEST_F(Diffprofile, TraceSummariesSideBySide) {
  ASSERT_EQ(diff_.instances[0].traces.size(), 1u);
  const auto& t = diff_.instances[0].traces[0];
  EXPECT_EQ(t.per, "operation");
  EXPECT_EQ(t.base_repetitions, 2u);
  auto totals = [](const Side& side, const char* key) {
    double sum = 0, ops = 0;
    for (const auto& b : side.bundles)
      for (const auto& rep : b.bundle.instances.at(0).diagnostics) {
        if (rep.trace.empty()) continue;
        sum += rep.trace.at("totals").at(key).get<double>();
        ops += rep.metrics.at("operations").value;
      }
    return sum / ops;
  };
  ASSERT_FALSE(t.rows.empty());
  EXPECT_EQ(t.rows[0].measure, "context switches");
  EXPECT_DOUBLE_EQ(t.rows[0].base, totals(sides_[0], "switches"));
  EXPECT_DOUBLE_EQ(t.rows[0].other, totals(sides_[1], "switches"));
  // Two threads yielding to each other on one CPU: every yield is a switch.
  EXPECT_NEAR(t.rows[0].base, 1.0, 0.05);
  const auto text = format_diff_text(diff_, false);
  EXPECT_NE(text.find("time runnable, waiting for a CPU (us/op)"), std::string::npos) << text;
}

TEST(DiffprofileCli, ProfileLinesOption) {
  auto o = testing::schedlab("diff --force " + (kFixtures / "profile/counters-per-cgroup").string() + " " +
                             (kFixtures / "profile/counters-per-task").string() +
                             " --profile-all --profile-lines 1");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("       ...\n"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace schedlab
