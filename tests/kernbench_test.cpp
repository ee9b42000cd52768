// The kernbench workload: its generated tree, its figures checked against GNU time and the perf
// TASK-CLOCK counter on the same tree in the same test, and its behaviour on bad trees, tarballs
// and time limits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "test_util.hpp"
#include "workloads/kernbench/process.hpp"
#include "workloads/kernbench/tree_generator.hpp"
#include "workloads/registry.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::files_in;
using testing::schedlab;
using testing::sh;
using testing::TempDir;

int default_jobs() {
  return 2 * static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
}

// Runs schedlab with a private cache and output directory; returns the bundle (none on exit 2).
struct RunOutcome {
  testing::Outcome cli;
  std::optional<Bundle> bundle;
};

// `env` prefixes the command line (e.g. "PATH=... ").
RunOutcome run_kernbench(const fs::path& root, const std::string& args, const std::string& env = "") {
  RunOutcome r;
  r.cli = sh(env + SCHEDLAB_BINARY + std::string(" ") +
             "run --workload kernbench --repetitions 1 --settle-timeout 0 --cache-dir " +
             (root / "cache").string() + " --out " + (root / "out").string() + " " + args);
  auto files = files_in(root / "out");
  if (files.size() == 1) r.bundle = load_bundle(files[0]);
  for (const auto& f : files) fs::remove(f);
  return r;
}

const Instance& only_instance(const RunOutcome& r) {
  if (!r.bundle || r.bundle->instances.size() != 1) throw std::runtime_error("no bundle: " + r.cli.out);
  return r.bundle->instances[0];
}

double cpu_s(const Repetition& rep) {
  return rep.metrics.at("user_s").value + rep.metrics.at("system_s").value;
}

void expect_consistent_metrics(const Repetition& rep) {
  ASSERT_EQ(rep.status, "ok") << rep.reason;
  const double elapsed = rep.metrics.at("elapsed_s").value;
  EXPECT_GT(elapsed, 0);
  EXPECT_GT(cpu_s(rep), 0);
  EXPECT_NEAR(rep.metrics.at("cpu_pct").value, cpu_s(rep) / elapsed * 100,
              0.01 * rep.metrics.at("cpu_pct").value);
  EXPECT_GT(rep.metrics.at("voluntary_switches").value, 0);
  EXPECT_EQ(rep.metrics.at("elapsed_s").unit, "s");
  EXPECT_EQ(rep.metrics.at("cpu_pct").unit, "pct");
}

TEST(KernbenchTree, GenerationIsDeterministicAndSized) {
  const auto a = kernbench::generate_tree_files(12);
  EXPECT_EQ(a, kernbench::generate_tree_files(12));
  int units = 0;
  for (const auto& [path, content] : a) units += path.rfind("src/", 0) == 0 && path.ends_with(".c");
  EXPECT_EQ(units, 12);
  EXPECT_TRUE(a.count("Makefile") && a.count("main.c") && a.count("include/sl_common.h"));
  // A unit's text does not depend on the tree size; the hash does.
  const auto b = kernbench::generate_tree_files(40);
  EXPECT_EQ(a.at("src/f005.c"), b.at("src/f005.c"));
  EXPECT_NE(kernbench::tree_content_hash(a), kernbench::tree_content_hash(b));

  TempDir dir;
  const auto h1 = kernbench::write_generated_tree(dir.path() / "one", 12);
  const auto h2 = kernbench::write_generated_tree(dir.path() / "two", 12);
  EXPECT_EQ(h1, h2);
  EXPECT_EQ(h1, kernbench::tree_content_hash(a));
  EXPECT_EQ(h1, kernbench::tree_content_hash(dir.path() / "one"));  // the hash is of what is on disk
  int written = 0;
  for (const auto& e : fs::directory_iterator(dir.path() / "one" / "src"))
    written += e.path().extension() == ".c";
  EXPECT_EQ(written, 12);
}

TEST(KernbenchTree, GeneratedTreeBuildsWithoutWarningsAndCleans) {
  TempDir dir;
  const auto tree = dir.path() / "tree";
  const auto hash = kernbench::write_generated_tree(tree, 12);
  auto build = sh("make -C " + tree.string() + " -j2 >/dev/null");
  ASSERT_EQ(build.code, 0) << build.out;
  EXPECT_EQ(build.out, "") << "the generated tree compiles without warnings under -Wall";
  auto prog = sh("timeout 20 " + (tree / "prog").string());
  EXPECT_EQ(prog.code, 0) << prog.out;
  EXPECT_EQ(prog.out.size(), 9u) << prog.out;  // 8 hex digits and a newline
  auto clean = sh("make -C " + tree.string() + " clean >/dev/null");
  ASSERT_EQ(clean.code, 0) << clean.out;
  EXPECT_FALSE(fs::exists(tree / "prog"));
  EXPECT_FALSE(fs::exists(tree / "src/f000.o"));
  EXPECT_EQ(kernbench::tree_content_hash(tree), hash);
}

TEST(KernbenchTree, ErrorExcerptShowsTheFirstLinesAndTheErrors) {
  EXPECT_EQ(kernbench::error_excerpt("a\nb error: x\n", 10), "a\nb error: x");
  std::string many;
  for (int i = 0; i < 30; ++i) many += "warning " + std::to_string(i) + "\n";
  many += "f.c:1:2: error: bad\n";
  auto e = kernbench::error_excerpt(many, 10);
  EXPECT_NE(e.find("warning 9\n"), std::string::npos) << e;
  EXPECT_EQ(e.find("warning 10\n"), std::string::npos) << e;
  EXPECT_NE(e.find("f.c:1:2: error: bad"), std::string::npos) << e;
  EXPECT_NE(e.find("31 lines in all"), std::string::npos) << e;
}

TEST(KernbenchParams, DefaultsAndCheapValidation) {
  auto w = make_workload("kernbench");
  auto p = resolve_params("kernbench", w->params(), {});
  EXPECT_EQ(p.at("jobs"), default_jobs());
  EXPECT_EQ(p.at("tree"), "generated");
  EXPECT_EQ(p.at("files"), kernbench::kDefaultFiles);
  EXPECT_EQ(p.at("policy"), "other");
  bool headline = false;
  for (const auto& m : w->metrics()) headline |= m.name == "elapsed_s" && m.headline;
  EXPECT_TRUE(headline);

  TempDir dir;
  WorkloadContext ctx;
  auto error_of = [&](const std::map<std::string, std::string>& given) -> std::string {
    try {
      w->validate(resolve_params("kernbench", w->params(), given), ctx);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of({}).find("needs a cache directory"), std::string::npos);
  ctx.cache_dir = dir.path() / "cache";
  EXPECT_EQ(error_of({}), "");
  EXPECT_FALSE(fs::exists(ctx.cache_dir)) << "validate() writes nothing";
  EXPECT_NE(error_of({{"tree", "/nonexistent/linux"}}).find("'/nonexistent/linux' does not exist"),
            std::string::npos);
  fs::create_directories(dir.path() / "empty");
  EXPECT_NE(error_of({{"tree", (dir.path() / "empty").string()}}).find("has no Makefile"), std::string::npos);
  testing::spit(dir.path() / "tree.zip", "not a tarball");
  EXPECT_NE(
      error_of({{"tree", (dir.path() / "tree.zip").string()}}).find("neither a directory nor a tarball"),
      std::string::npos);
  EXPECT_NE(error_of({{"policy", "fifo:0"}}).find("fifo priority"), std::string::npos);

  // Without make or gcc in PATH the error names what is missing.
  const std::string saved_path = std::getenv("PATH");
  ::setenv("PATH", (dir.path() / "empty").c_str(), 1);
  const auto missing = error_of({});
  ::setenv("PATH", saved_path.c_str(), 1);
  EXPECT_NE(missing.find("'make' (Debian package make), not found in PATH"), std::string::npos) << missing;
}

TEST(KernbenchRun, ShortRunMetricsAreConsistent) {
  TempDir root;
  auto r = run_kernbench(root.path(), "--param kernbench.files=20");
  ASSERT_EQ(r.cli.code, 0) << r.cli.out;
  const auto& in = only_instance(r);
  ASSERT_TRUE(in.warmup.has_value());
  ASSERT_EQ(in.repetitions.size(), 1u);
  const auto& rep = in.repetitions[0];
  expect_consistent_metrics(rep);
  expect_consistent_metrics(*in.warmup);
  EXPECT_EQ(in.warmup->details.at("tree_prepared"), "generated");
  EXPECT_EQ(rep.details.at("tree_prepared"), "cached");  // generated once
  EXPECT_EQ(rep.details.at("tree_hash"), kernbench::tree_content_hash(kernbench::generate_tree_files(20)));
  EXPECT_EQ(rep.details.at("jobs"), default_jobs());
  EXPECT_EQ(rep.details.at("files"), 20);
  EXPECT_EQ(rep.details.at("make_version").get<std::string>().rfind("GNU Make", 0), 0u) << rep.details;
  EXPECT_NE(rep.details.at("gcc_version").get<std::string>().find("gcc"), std::string::npos) << rep.details;
  const fs::path made = rep.details.at("make_dir").get<std::string>();
  EXPECT_EQ(made.parent_path(), root.path() / "cache" / "kernbench");
  EXPECT_TRUE(fs::exists(made / "prog"));
  int trees = 0;
  for (const auto& e : fs::directory_iterator(root.path() / "cache" / "kernbench"))
    trees += e.path().filename().string().rfind("generated-", 0) == 0;
  EXPECT_EQ(trees, 1) << "no temporary or second tree is left";
}

// kernbench.unit_work_ms (issue #19's injected slowdown): every compiler run of the build does that much
// more CPU work, so user time grows by about (units + the link) x ms, and the bundle says what ran.
TEST(KernbenchRun, UnitWorkAddsItsCpuTimeToEveryCompilerRun) {
  TempDir root;
  constexpr int kFiles = 4;  // 4 units, main.c, the link: 6 compiler runs
  constexpr double kMs =
      400;  // 2.4 s injected: well above the run-to-run spread of the plain build's own CPU time
  auto plain = run_kernbench(root.path(), "--param kernbench.files=" + std::to_string(kFiles));
  ASSERT_EQ(plain.cli.code, 0) << plain.cli.out;
  auto worked = run_kernbench(root.path(), "--param kernbench.files=" + std::to_string(kFiles) +
                                               " --param kernbench.unit_work_ms=" + std::to_string(kMs));
  ASSERT_EQ(worked.cli.code, 0) << worked.cli.out;
  const auto& base = only_instance(plain).repetitions.at(0);
  const auto& rep = only_instance(worked).repetitions.at(0);
  expect_consistent_metrics(rep);
  const auto& work = rep.details.at("unit_work");
  EXPECT_EQ(work.at("ms"), kMs);
  const double ns_per_round = work.at("ns_per_round").get<double>();
  EXPECT_GT(ns_per_round, 0);
  EXPECT_NEAR(work.at("rounds").get<double>() * ns_per_round, kMs * 1e6, kMs * 1e6 * 1e-6);
  EXPECT_NE(rep.details.at("command").get<std::string>().find("CC=" + work.at("wrapper").get<std::string>()),
            std::string::npos)
      << rep.details;
  int compiler_runs = 0;
  for (const auto& e : fs::directory_iterator(rep.details.at("make_dir").get<std::string>() + "/src"))
    compiler_runs += e.path().extension() == ".c";
  EXPECT_EQ(compiler_runs, kFiles);
  compiler_runs += 2;  // main.c and the link
  const double added = cpu_s(rep) - cpu_s(base), injected = compiler_runs * kMs / 1000;
  // CPU time, not wall time: the same however busy the machine is. The chain's speed can change between
  // its calibration and the build (frequency), hence the wide band.
  EXPECT_GT(added, 0.75 * injected) << "added " << added << " s for " << injected << " s injected";
  EXPECT_LT(added, 1.5 * injected) << "added " << added << " s for " << injected << " s injected";
  // The parameter's default leaves the resolved parameters, so earlier bundles keep their hash.
  EXPECT_FALSE(base.details.contains("unit_work"));
}

TEST(KernbenchErrors, UnitWorkGoesIntoTheGeneratedTreeOnly) {
  TempDir root;
  const auto tree = root.path() / "tree";
  fs::create_directories(tree);
  testing::spit(tree / "Makefile", "all:\n\ttrue\nclean:\n\ttrue\n");
  auto r = run_kernbench(root.path(),
                         "--param kernbench.tree=" + tree.string() + " --param kernbench.unit_work_ms=10");
  EXPECT_EQ(r.cli.code, 2) << r.cli.out;
  EXPECT_NE(r.cli.out.find("kernbench.unit_work_ms: injected work goes into the generated tree's compiler"),
            std::string::npos)
      << r.cli.out;
  EXPECT_FALSE(r.bundle);
}

// GNU time's elapsed, user and system seconds for make -jJ on `tree` after a clean.
std::array<double, 3> gnu_time_build(const fs::path& tree, const fs::path& scratch, int jobs) {
  const auto out = scratch / "time.txt";
  auto o = sh("env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS LC_ALL=C sh -c 'make -C " + tree.string() +
              " clean >/dev/null && sync && /usr/bin/time -f \"%e %U %S\" -o " + out.string() + " make -C " +
              tree.string() + " -j" + std::to_string(jobs) + " >/dev/null'");
  EXPECT_EQ(o.code, 0) << o.out;
  std::istringstream in(testing::slurp(out));
  std::array<double, 3> v{};
  in >> v[0] >> v[1] >> v[2];
  return v;
}

struct BuildFigures {
  double elapsed_s, cpu_s;
};

std::string describe(const std::vector<double>& v) {
  std::ostringstream s;
  for (double x : v) s << (s.tellp() > 0 ? " " : "") << x;
  return s.str();
}

// The same builds measured twice: a `make` first in PATH runs the real one under GNU time, so
// schedlab's wait4() figures (of time and make) and time's (of make) describe one process tree.
// They may differ only by time's own start-up and its 10 ms resolution.
TEST(KernbenchRun, SameBuildAgreesWithGnuTime) {
  TempDir root;
  const auto real_make = sh("command -v make");
  ASSERT_EQ(real_make.code, 0);
  const auto bin = root.path() / "bin";
  const auto log = root.path() / "time.log";
  fs::create_directories(bin);
  testing::spit(bin / "make", "#!/bin/sh\nexec /usr/bin/time -a -o " + log.string() + " -f '%e %U %S %C' " +
                                  real_make.out.substr(0, real_make.out.find('\n')) + " \"$@\"\n");
  fs::permissions(bin / "make", fs::perms::owner_all, fs::perm_options::add);
  auto r = run_kernbench(root.path(), "--param kernbench.files=24", "PATH=" + bin.string() + ":$PATH ");
  ASSERT_EQ(r.cli.code, 0) << r.cli.out;
  const auto& in = only_instance(r);
  ASSERT_TRUE(in.warmup.has_value());
  std::vector<std::array<double, 3>> timed;  // the builds in the log, in order
  std::istringstream lines(testing::slurp(log));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::array<double, 3> v{};
    std::string command;
    fields >> v[0] >> v[1] >> v[2];
    std::getline(fields, command);
    if (command.find(" -j") != std::string::npos) timed.push_back(v);
  }
  ASSERT_EQ(timed.size(), 2u) << testing::slurp(log);
  for (std::size_t i = 0; i < 2; ++i) {
    const Repetition& rep = i == 0 ? *in.warmup : in.repetitions.at(0);
    expect_consistent_metrics(rep);
    const auto& m = rep.metrics;
    std::cout << "[ measured ] same build, schedlab vs GNU time: elapsed " << m.at("elapsed_s").value << " / "
              << timed[i][0] << " s, user " << m.at("user_s").value << " / " << timed[i][1] << " s, system "
              << m.at("system_s").value << " / " << timed[i][2] << " s\n";
    EXPECT_NEAR(m.at("elapsed_s").value, timed[i][0], 0.01 * timed[i][0] + 0.03);
    EXPECT_NEAR(m.at("user_s").value, timed[i][1], 0.01 * timed[i][1] + 0.03);
    EXPECT_NEAR(m.at("system_s").value, timed[i][2], 0.01 * timed[i][2] + 0.03);
  }
}

// Hodges-Lehmann estimate of the centre of `ratios`, on the log scale: the median of the pairwise
// means, nearly as efficient as the mean on normal noise and as robust as the median to a hiccup.
double hodges_lehmann_ratio(const std::vector<double>& ratios) {
  std::vector<double> walsh;
  for (std::size_t i = 0; i < ratios.size(); ++i)
    for (std::size_t j = i; j < ratios.size(); ++j)
      walsh.push_back((std::log(ratios[i]) + std::log(ratios[j])) / 2);
  return std::exp(median(walsh));
}

// Against GNU time on a copy of the same tree, builds interleaved. This VM drifts: builds of one
// tree vary by 3-10% (CV) from one to the next, at 3 s as at 30 s per build (measured), so larger
// trees do not help; many short builds, each compared with its neighbour, do. The order is
// T0 (W0 O0) T1 (W1 O1) ... where W is schedlab's warm-up repetition (measured the same way, then
// left out of the statistics) and O its repetition; W_i pairs with T_i, O_i with T_i+1. The centre
// of the paired ratios (Hodges-Lehmann; medians are printed too) is checked on 16 pairs (about a
// minute), and when it is not within 5% of 1, on 32 (the sample doubles).
TEST(KernbenchRun, AgreesWithGnuTimeAndTaskClock) {
  constexpr int kFiles = 20;  // about 3 s per build here
  constexpr int kRunsPerStage = 6;
  const int jobs = default_jobs();
  TempDir root;
  const auto copy = root.path() / "copy";
  kernbench::write_generated_tree(copy, kFiles);
  std::vector<BuildFigures> gnu, ours;
  auto gnu_build = [&] {
    auto v = gnu_time_build(copy, root.path(), jobs);
    gnu.push_back({v[0], v[1] + v[2]});
  };
  std::vector<double> task_clock_ratio;
  auto schedlab_builds = [&] {
    auto r = run_kernbench(root.path(), "--param kernbench.files=" + std::to_string(kFiles) +
                                            " --param kernbench.jobs=" + std::to_string(jobs));
    ASSERT_EQ(r.cli.code, 0) << r.cli.out;
    const auto& in = only_instance(r);
    ASSERT_TRUE(in.warmup.has_value());
    ASSERT_EQ(in.repetitions.size(), 1u);
    for (const Repetition* rep : {&*in.warmup, &in.repetitions[0]}) {
      expect_consistent_metrics(*rep);
      ours.push_back({rep->metrics.at("elapsed_s").value, cpu_s(*rep)});
      // The counter covers the whole repetition (the untimed clean too, a few ms); rusage covers make.
      // TASK-CLOCK runs on the kernel's local clock, so it includes time the hypervisor stole while a
      // task of the cgroup was on the vCPU; rusage excludes it (CONFIG_PARAVIRT_TIME_ACCOUNTING). CI
      // once saw TASK-CLOCK 6-30% above rusage, about 2 x elapsed, on a contended host. The steal over
      // the repetition, summed over CPUs, bounds the difference from above.
      const auto& tc = rep->counters.at("perf::TASK-CLOCK");
      ASSERT_TRUE(tc.ok()) << tc.reason;
      EXPECT_EQ(tc.unit, "ns");
      const auto& steal = rep->counters.at("system.steal_s");
      ASSERT_TRUE(steal.ok()) << steal.reason;
      const double cpu = cpu_s(*rep);
      const double tc_s = tc.value * 1e-9;
      task_clock_ratio.push_back(tc_s / cpu);
      const std::string seen = "TASK-CLOCK " + std::to_string(tc_s) + " s (" + tc.scope +
                               ") against rusage user+sys " + std::to_string(cpu) + " s, steal " +
                               std::to_string(steal.value) + " s";
      EXPECT_GE(tc_s, 0.95 * cpu) << seen;
      EXPECT_LE(tc_s, 1.05 * cpu + steal.value) << seen;
      std::cout << "[ measured ] " << seen << "\n";
    }
  };
  std::vector<double> elapsed_ratio, cpu_ratio;
  auto stage = [&] {
    for (int i = 0; i < kRunsPerStage && !HasFatalFailure(); ++i) {
      schedlab_builds();
      gnu_build();
    }
    elapsed_ratio.clear();
    cpu_ratio.clear();
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const auto& t = gnu[(i + 1) / 2];  // W_k (i = 2k) next to T_k, O_k (i = 2k+1) next to T_k+1
      elapsed_ratio.push_back(ours[i].elapsed_s / t.elapsed_s);
      cpu_ratio.push_back(ours[i].cpu_s / t.cpu_s);
    }
    std::cout << "[ measured ] " << ours.size()
              << " pairs; paired ratios schedlab/time, elapsed: " << describe(elapsed_ratio)
              << "; user+sys: " << describe(cpu_ratio)
              << "\n[ measured ] paired ratio, Hodges-Lehmann: elapsed "
              << hodges_lehmann_ratio(elapsed_ratio) << ", user+sys " << hodges_lehmann_ratio(cpu_ratio)
              << "; median: elapsed " << median(elapsed_ratio) << ", user+sys " << median(cpu_ratio) << "\n";
  };
  auto within_bound = [&] {
    return std::fabs(hodges_lehmann_ratio(elapsed_ratio) - 1) <= 0.05 &&
           std::fabs(hodges_lehmann_ratio(cpu_ratio) - 1) <= 0.05;
  };
  gnu_build();
  stage();
  if (HasFatalFailure()) return;
  if (!within_bound()) stage();
  if (HasFatalFailure()) return;
  std::vector<double> gnu_elapsed, gnu_cpu, ours_elapsed, ours_cpu;
  for (const auto& t : gnu) gnu_elapsed.push_back(t.elapsed_s), gnu_cpu.push_back(t.cpu_s);
  for (const auto& o : ours) ours_elapsed.push_back(o.elapsed_s), ours_cpu.push_back(o.cpu_s);
  std::cout << "[ measured ] elapsed s, GNU time: " << describe(gnu_elapsed)
            << "; schedlab: " << describe(ours_elapsed)
            << "\n[ measured ] user+sys s, GNU time: " << describe(gnu_cpu)
            << "; schedlab: " << describe(ours_cpu) << "\n[ measured ] ratio of medians, elapsed "
            << median(ours_elapsed) / median(gnu_elapsed) << ", user+sys "
            << median(ours_cpu) / median(gnu_cpu) << "; TASK-CLOCK / rusage user+sys: median "
            << median(task_clock_ratio) << ", range "
            << *std::min_element(task_clock_ratio.begin(), task_clock_ratio.end()) << " to "
            << *std::max_element(task_clock_ratio.begin(), task_clock_ratio.end()) << "\n";
  // Separate builds only agree as well as the host lets them: in one fresh-clone CI run here the
  // paired ratios spread from 0.87 to 1.34 and their centre reached 1.066 over 32 pairs. The 5%
  // agreement of the measurement itself is SameBuildAgreesWithGnuTime's (one build, both tools,
  // 10 ms apart); this test catches gross errors, such as timing make alone without its children.
  EXPECT_NEAR(hodges_lehmann_ratio(elapsed_ratio), 1.0, 0.15);
  EXPECT_NEAR(hodges_lehmann_ratio(cpu_ratio), 1.0, 0.15);
}

TEST(KernbenchErrors, MissingTreeIsBadInputAndWritesNothing) {
  TempDir root;
  auto r = run_kernbench(root.path(), "--param kernbench.tree=" + (root.path() / "no-such-tree").string());
  EXPECT_EQ(r.cli.code, 2) << r.cli.out;
  EXPECT_NE(
      r.cli.out.find("kernbench.tree: '" + (root.path() / "no-such-tree").string() + "' does not exist"),
      std::string::npos)
      << r.cli.out;
  EXPECT_TRUE(files_in(root.path() / "out").empty());
  EXPECT_FALSE(fs::exists(root.path() / "cache" / "kernbench"));
}

TEST(KernbenchErrors, TreeThatFailsToBuildFailsTheRepetitionWithTheCompilerError) {
  TempDir root;
  const auto tree = root.path() / "broken";
  fs::create_directories(tree);
  testing::spit(tree / "Makefile",
                "all: bad.o\n\nbad.o: bad.c\n\tgcc -c -o bad.o bad.c\n\nclean:\n\trm -f bad.o\n");
  testing::spit(tree / "bad.c", "int main(void)\n{\n\treturn 0\n}\n");
  auto r = run_kernbench(root.path(), "--param kernbench.tree=" + tree.string());
  EXPECT_EQ(r.cli.code, 1) << r.cli.out;
  const auto& in = only_instance(r);
  ASSERT_EQ(in.repetitions.size(), 1u);
  const auto& rep = in.repetitions[0];
  EXPECT_EQ(rep.status, "failed");
  EXPECT_NE(rep.reason.find("error: expected ';' before '}' token"), std::string::npos) << rep.reason;
  EXPECT_NE(rep.reason.find("bad.c:3:"), std::string::npos) << rep.reason;
  EXPECT_NE(rep.reason.find("make -C "), std::string::npos) << rep.reason;
  EXPECT_FALSE(fs::exists(tree / "bad.o"));  // built in a copy: the user's tree is untouched
  EXPECT_EQ(testing::files_in(tree).size(), 2u);
}

TEST(KernbenchRun, TarballIsExtractedOnceAndBuilds) {
  TempDir root;
  kernbench::write_generated_tree(root.path() / "src" / "gen-tree", 8);
  const auto tarball = root.path() / "gen-tree.tar.xz";
  auto tar = sh("tar -cJf " + tarball.string() + " -C " + (root.path() / "src").string() + " gen-tree");
  ASSERT_EQ(tar.code, 0) << tar.out;
  auto r = run_kernbench(root.path(), "--param kernbench.tree=" + tarball.string());
  ASSERT_EQ(r.cli.code, 0) << r.cli.out;
  const auto& in = only_instance(r);
  ASSERT_TRUE(in.warmup.has_value());
  expect_consistent_metrics(in.repetitions.at(0));
  EXPECT_EQ(in.warmup->details.at("tree_prepared"), "extracted");
  EXPECT_EQ(in.repetitions[0].details.at("tree_prepared"), "cached");
  EXPECT_EQ(in.repetitions[0].details.at("tree_origin"), "tarball");
  const fs::path made = in.repetitions[0].details.at("make_dir").get<std::string>();
  EXPECT_EQ(made.filename(), "gen-tree");
  EXPECT_EQ(made.parent_path().parent_path(), root.path() / "cache" / "kernbench");
  EXPECT_TRUE(fs::exists(made / "prog"));
}

// A stand-in for a Linux tree: the layout kernbench recognises and a Makefile honouring O= and
// defconfig as Kbuild does. The real thing takes 25-45 min per build on this VM (PEERS.md section 8).
TEST(KernbenchRun, KernelTreeIsConfiguredOnceAndBuiltOutOfTree) {
  TempDir root;
  const auto tree = root.path() / "linux";
  fs::create_directories(tree / "arch" / "x86");
  fs::create_directories(tree / "scripts" / "kconfig");
  testing::spit(tree / "Kconfig", "mainmenu \"stand-in\"\n");
  testing::spit(tree / "init.c", "int main(void)\n{\n\treturn 0;\n}\n");
  testing::spit(tree / "Makefile",
                "O ?= .\nall: $(O)/vmlinux\n$(O)/vmlinux: init.c $(O)/.config\n\tgcc -o $@ init.c\n"
                "$(O)/.config:\n\t@echo 'run make defconfig first' >&2; false\n"
                "defconfig:\n\techo CONFIG_STANDIN=y > $(O)/.config\n"
                "clean:\n\trm -f $(O)/vmlinux\n.PHONY: all defconfig clean\n");
  // flex, bison and bc are needed by a real kernel build and checked before anything runs.
  if (sh("command -v flex && command -v bison && command -v bc").code != 0) {
    auto refused = run_kernbench(root.path(), "--param kernbench.tree=" + tree.string());
    EXPECT_EQ(refused.cli.code, 2) << refused.cli.out;
    EXPECT_NE(refused.cli.out.find("a kernel tree needs"), std::string::npos) << refused.cli.out;
  }
  const auto bin = root.path() / "bin";
  fs::create_directories(bin);
  for (const char* tool : {"flex", "bison", "bc"}) {
    testing::spit(bin / tool, "#!/bin/sh\nexit 0\n");
    fs::permissions(bin / tool, fs::perms::owner_all, fs::perm_options::add);
  }
  auto r = run_kernbench(root.path(), "--param kernbench.tree=" + tree.string(),
                         "PATH=$PATH:" + bin.string() + " ");
  ASSERT_EQ(r.cli.code, 0) << r.cli.out;
  const auto& in = only_instance(r);
  ASSERT_TRUE(in.warmup.has_value());
  const auto& rep = in.repetitions.at(0);
  expect_consistent_metrics(rep);
  EXPECT_EQ(rep.details.at("tree_kind"), "kernel");
  EXPECT_EQ(in.warmup->details.at("tree_prepared"), "configured");
  EXPECT_EQ(rep.details.at("tree_prepared"), "cached");
  const std::string command = rep.details.at("command");
  const auto o = command.find(" O=");
  ASSERT_NE(o, std::string::npos) << command;
  const fs::path obj = command.substr(o + 3, command.find(' ', o + 3) - o - 3);
  EXPECT_EQ(obj.parent_path(), root.path() / "cache" / "kernbench");
  EXPECT_TRUE(fs::exists(obj / "vmlinux"));
  EXPECT_TRUE(fs::exists(obj / ".config"));
  EXPECT_FALSE(fs::exists(tree / "vmlinux"));  // never built in the user's tree
  EXPECT_FALSE(fs::exists(tree / ".config"));
}

TEST(KernbenchRun, PolicyAndNiceReachTheBuild) {
  TempDir root;
  const auto tree = root.path() / "probe";
  fs::create_directories(tree);
  // Each recipe line runs in a shell that make started: what it reports, the compilers would inherit.
  testing::spit(tree / "Makefile",
                "all:\n\tchrt -p $$$$ > seen.txt && nice >> seen.txt\n\nclean:\n\trm -f seen.txt\n");
  auto r = run_kernbench(root.path(), "--param kernbench.tree=" + tree.string() +
                                          " --param kernbench.policy=batch --param kernbench.nice=5");
  ASSERT_EQ(r.cli.code, 0) << r.cli.out;
  const auto& rep = only_instance(r).repetitions.at(0);
  ASSERT_EQ(rep.status, "ok") << rep.reason;
  EXPECT_EQ(rep.details.at("tree_kind"), "directory");
  const fs::path made = rep.details.at("make_dir").get<std::string>();
  const auto seen = testing::slurp(made / "seen.txt");
  EXPECT_NE(seen.find("SCHED_BATCH"), std::string::npos) << seen;
  EXPECT_NE(seen.find("\n5\n"), std::string::npos) << seen;
  EXPECT_FALSE(fs::exists(tree / "seen.txt"));  // the user's tree is untouched
}

// This test's descendants whose command line or working directory mentions `path`.
std::vector<std::string> processes_using(const fs::path& path) {
  std::vector<std::string> found;
  for (const pid_t pid : testing::descendant_pids()) {
    const fs::path proc = "/proc/" + std::to_string(pid);
    auto cmdline = testing::slurp(proc / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    std::error_code link_ec;
    const auto cwd = fs::read_symlink(proc / "cwd", link_ec).string();
    if (cmdline.find(path.string()) != std::string::npos || cwd.rfind(path.string(), 0) == 0)
      if (testing::process_alive(pid)) found.push_back(std::to_string(pid) + ": " + cmdline);
  }
  return found;
}

TEST(KernbenchRun, TimeLimitKillsMakeAndItsCompilers) {
  TempDir root;
  // Generated beforehand, so that the one-second limit falls in the build.
  kernbench::ensure_generated_tree(root.path() / "cache" / "kernbench", kernbench::kDefaultFiles);
  auto r = run_kernbench(root.path(), "--timeout 1");
  EXPECT_EQ(r.cli.code, 1) << r.cli.out;
  const auto& in = only_instance(r);
  ASSERT_EQ(in.repetitions.size(), 1u);
  EXPECT_EQ(in.repetitions[0].status, "timeout") << in.repetitions[0].reason;
  EXPECT_EQ(in.repetitions[0].reason.find(" and 0 other"), std::string::npos)  // make was running
      << in.repetitions[0].reason;
  auto left = processes_using(root.path());
  EXPECT_TRUE(left.empty()) << left.front();
  // The killed repetition left no lock behind: the next run proceeds.
  auto again = run_kernbench(root.path(), "--param kernbench.files=6");
  EXPECT_EQ(again.cli.code, 0) << again.cli.out;
}

}  // namespace
}  // namespace schedlab
