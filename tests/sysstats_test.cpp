// The system-wide /proc source on real captures (tests/fixtures/vm-6.18-sysstats: before and after
// one yield run on the development VM), on broken copies of them, and live through `schedlab run`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "collector/sysstats/proc_tables.hpp"
#include "collector/sysstats/schedstat.hpp"
#include "collector/sysstats/schedstat_source.hpp"
#include "collector/sysstats/system_stats_source.hpp"
#include "core/bundle_encoding.hpp"
#include "core/error.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using testing::spit;
using testing::TempDir;

const fs::path kCaptures = fs::path(SCHEDLAB_FIXTURES_DIR) / "vm-6.18-sysstats";

std::string capture(const std::string& when, const std::string& file) {
  return slurp(kCaptures / when / "proc" / file);
}

// The message of the InputError `parse` throws on `text`, or "" when it throws none.
template <typename Parse>
std::string error_of(Parse parse, const std::string& text) {
  try {
    parse(text, "/proc/x");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string replace_line(std::string text, const std::string& prefix, const std::string& line) {
  auto at = text.find(prefix);
  return text.replace(at, text.find('\n', at) - at, line);
}

TEST(ProcTables, ParseTheRealStat) {
  auto s = parse_proc_stat(capture("before", "stat"), "stat");
  ASSERT_EQ(s.cpus.size(), 2u);
  const std::array<std::uint64_t, 10> cpu0 = {837569, 17949, 166599, 2206734, 830, 0, 110, 4606, 0, 0};
  EXPECT_EQ(s.cpus.at(0), cpu0);
  EXPECT_EQ(s.cpus.at(1)[kSteal], 4811u);
  EXPECT_EQ(s.context_switches, 257514454u);
  EXPECT_EQ(s.forks, 196984u);
}

TEST(ProcTables, ParseTheRealInterruptsAndSoftirqs) {
  auto irq = parse_per_cpu_table(capture("before", "interrupts"), "interrupts");
  EXPECT_EQ(irq.cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(irq.rows.at("RES"), (std::vector<std::uint64_t>{157128, 114363}));
  EXPECT_EQ(irq.rows.at("TLB"), (std::vector<std::uint64_t>{52706, 42711}));
  EXPECT_EQ(irq.rows.at("24"), (std::vector<std::uint64_t>{1, 0}));  // counts stop before the description
  EXPECT_EQ(irq.rows.count("ERR"), 0u);                              // one system-wide count: left out
  auto soft = parse_per_cpu_table(capture("before", "softirqs"), "softirqs");
  EXPECT_EQ(soft.rows.at("SCHED"), (std::vector<std::uint64_t>{827947, 857109}));
}

TEST(ProcTables, BrokenCopiesNameTheFileAndLine) {
  auto stat = capture("before", "stat");
  EXPECT_EQ(error_of(parse_proc_stat, replace_line(stat, "cpu0 ", "cpu0 837569 17949")),
            "/proc/x:2: cpu0 has 2 fields");
  EXPECT_EQ(error_of(parse_proc_stat, replace_line(stat, "cpu1 ", "cpu1 825239 x 1 2 3")),
            "/proc/x:3: cpu1 field 2 is 'x', not a count");
  EXPECT_NE(error_of(parse_proc_stat, "intr 1 2 3\n").find("no cpuN lines"), std::string::npos);
  auto irq = capture("before", "interrupts");
  EXPECT_NE(error_of(parse_per_cpu_table, replace_line(irq, "RES:", "RES:     157128"))
                .find("RES has 1 counts for 2 CPUs"),
            std::string::npos);
  EXPECT_NE(error_of(parse_per_cpu_table, replace_line(irq, "           CPU0", "           CPU0 CPUx"))
                .find(":1: header"),
            std::string::npos);
  EXPECT_NE(error_of(parse_per_cpu_table, "").find("empty"), std::string::npos);
  EXPECT_EQ(error_of(parse_per_cpu_table, irq), "");
}

class SystemStats : public ::testing::Test {
 protected:
  void install(const std::string& when) {
    fs::create_directories(root_.path() / "proc");
    for (const char* f : {"stat", "interrupts", "softirqs"})
      spit(root_.path() / "proc" / f, capture(when, f));
  }
  Repetition collect_between(const std::string& first, const std::string& second) {
    SystemStatsSource source(HostPaths::under(root_.path()));
    install(first);
    source.enable();
    install(second);
    Repetition rep;
    source.collect(rep);
    return rep;
  }
  TempDir root_;
};

TEST_F(SystemStats, DeltasOfTheRealCapturesAroundAYieldRun) {
  auto rep = collect_between("before", "after");
  const double tick = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  auto value = [&](const std::string& name) {
    const auto& c = rep.counters.at(name);
    EXPECT_EQ(c.status, status::kOk) << name << ": " << c.reason;
    EXPECT_EQ(c.scope, "system");
    return c.value;
  };
  EXPECT_DOUBLE_EQ(value("system.system_s"),
                   (1 + 31) * tick);  // cpu0 166599 -> 166600, cpu1 127759 -> 127790
  EXPECT_DOUBLE_EQ(value("system.user_s"), (1 + 3) * tick);
  EXPECT_DOUBLE_EQ(value("system.steal_s"), 0.0);
  EXPECT_DOUBLE_EQ(value("system.context_switches"), 257514611.0 - 257514454.0);
  EXPECT_DOUBLE_EQ(value("system.forks"), 9.0);
  EXPECT_DOUBLE_EQ(value("system.resched_ipis"), 0 + 5);
  EXPECT_DOUBLE_EQ(value("system.function_call_ipis"), 25 + 8);
  EXPECT_DOUBLE_EQ(value("system.tlb_shootdowns"), 2 + 4);
  EXPECT_DOUBLE_EQ(value("system.sched_softirqs"), 46 + 14);
  EXPECT_EQ(rep.counters.count("system.guest_s"), 0u) << "guest time is inside user time";
  EXPECT_DOUBLE_EQ(rep.system["per_cpu"]["1"]["resched_ipis"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(rep.system["per_cpu"]["1"]["system_s"].get<double>(), 31 * tick);
}

TEST_F(SystemStats, ACounterGoingBackwardsHasNoDelta) {
  auto rep = collect_between("after", "before");
  const auto& c = rep.counters.at("system.context_switches");
  EXPECT_EQ(c.status, status::kUnsupported);
  EXPECT_NE(c.reason.find("backwards"), std::string::npos);
}

TEST_F(SystemStats, MissingFilesAreUnsupportedWithTheirErrno) {
  SystemStatsSource source(HostPaths::under(root_.path()));  // an empty root: no /proc files at all
  source.enable();
  Repetition rep;
  source.collect(rep);
  for (const char* name : {"system.steal_s", "system.resched_ipis", "system.sched_softirqs"}) {
    const auto& c = rep.counters.at(name);
    EXPECT_EQ(c.status, status::kUnsupported) << name;
    EXPECT_EQ(c.error_number, ENOENT) << name;
    EXPECT_NE(c.reason.find("cannot read"), std::string::npos) << c.reason;
  }
}

const fs::path kProbe = fs::path(SCHEDLAB_FIXTURES_DIR) / "qemu-probe-schedstat";

TEST(Schedstat, Version15OfDebian61) {
  auto s = parse_schedstat(slurp(kProbe / "schedstat-6.1.0-50-amd64"), "6.1");
  EXPECT_EQ(s.version, 15);
  EXPECT_EQ(s.timestamp, 4294894653u);
  ASSERT_EQ(s.cpus.size(), 2u);
  EXPECT_EQ(s.cpus[0].fields.at("rq_cpu_time_ns"), 2477554489u);
  EXPECT_EQ(s.cpus[0].fields.at("run_delay_ns"), 384952569u);
  EXPECT_EQ(s.cpus[1].fields.at("pcount"), 1114u);
  EXPECT_EQ(s.cpus[0].fields.count("legacy_expired"), 0u);
  ASSERT_EQ(s.cpus[1].domains.size(), 1u);
  const auto& d = s.cpus[1].domains[0];
  EXPECT_EQ(d.cpumask, "3");
  EXPECT_EQ(d.name, "");
  EXPECT_EQ(d.fields.size(), 3u * 8 + 6);  // per idle type 8 balance counters; alb and ttwu 3 each
  EXPECT_EQ(d.fields.count("idle.lb_imbalance"), 1u);
  EXPECT_EQ(d.fields.count("sbe_count"), 0u);  // never counted by any kernel
}

TEST(Schedstat, Version16OfDebian612AndTheRtKernel) {
  auto s = parse_schedstat(slurp(kProbe / "schedstat-6.12.100+deb12-amd64"), "6.12");
  EXPECT_EQ(s.version, 16);
  EXPECT_EQ(s.cpus[1].fields.at("run_delay_ns"), 1644959124u);
  EXPECT_EQ(s.cpus[1].domains.at(0).fields.size(), 3u * 8 + 6);
  auto rt = parse_schedstat(slurp(kProbe / "schedstat-6.1.0-50-rt-amd64"), "6.1-rt");
  EXPECT_EQ(rt.version, 15);
  EXPECT_EQ(rt.cpus[0].fields.at("pcount"), 4509u);
}

TEST(Schedstat, BrokenCopiesNameTheLine) {
  auto text = slurp(kProbe / "schedstat-6.1.0-50-amd64");
  EXPECT_EQ(error_of(parse_schedstat, replace_line(text, "domain0", "domain0 3 0 0")),
            "/proc/x:4: domain0 has 2 fields, version 15 prints 36");
  EXPECT_EQ(error_of(parse_schedstat, replace_line(text, "version", "version 14")),
            "/proc/x:1: schedstat version 14 is not supported (15, 16 and 17 are)");
  EXPECT_EQ(error_of(parse_schedstat, replace_line(text, "cpu1", "cpu1 0 0 0 0 0 0 x 1 2")),
            "/proc/x:5: cpu1 rq_cpu_time_ns is 'x', not a count");
  EXPECT_EQ(error_of(parse_schedstat, "version 15\ndomain0 3\n"), "/proc/x:2: domain0 before any cpu line");
  EXPECT_NE(error_of(parse_schedstat, "").find("empty"), std::string::npos);
}

TEST(Schedstat, ADeltaOfAReadingWithItselfIsZeroAndMismatchesAreRefused) {
  auto s = parse_schedstat(slurp(kProbe / "schedstat-6.1.0-50-amd64"), "6.1");
  auto d = schedstat_delta(s, s);
  EXPECT_EQ(d.cpus[0].fields.at("rq_cpu_time_ns"), 0u);
  EXPECT_EQ(d.cpus[1].domains[0].fields.at("busy.lb_count"), 0u);
  auto other = parse_schedstat(slurp(kProbe / "schedstat-6.12.100+deb12-amd64"), "6.12");
  EXPECT_THROW(schedstat_delta(s, other), InputError);  // versions differ
  auto rt = parse_schedstat(slurp(kProbe / "schedstat-6.1.0-50-rt-amd64"), "rt");
  EXPECT_THROW(schedstat_delta(rt, s), InputError);  // cpu0 run time went down: not one kernel's readings
}

// Debian's kernels under qemu with -smp 8 (2 sockets x 2 cores x 2 threads, two NUMA nodes), read
// 1 s apart under load (tests/fixtures/debian-*-qemu-smp8/README.md).
class EightCpuGuest : public ::testing::TestWithParam<std::pair<std::string, int>> {
 protected:
  fs::path dir() const { return fs::path(SCHEDLAB_FIXTURES_DIR) / GetParam().first / "proc"; }
};

TEST_P(EightCpuGuest, SchedstatHasThreeDomainLevelsAndRealDeltas) {
  auto before = parse_schedstat(slurp(dir() / "schedstat"), "schedstat");
  auto after = parse_schedstat(slurp(dir() / "schedstat.after-1s"), "schedstat.after-1s");
  EXPECT_EQ(before.version, GetParam().second);
  ASSERT_EQ(before.cpus.size(), 8u);
  for (const auto& cpu : before.cpus) {
    ASSERT_EQ(cpu.domains.size(), 3u) << "cpu" << cpu.cpu;
    EXPECT_EQ(cpu.domains[2].cpumask, "ff");  // the NUMA level spans both nodes
  }
  EXPECT_EQ(before.cpus[0].domains[0].cpumask, "03");  // SMT siblings
  EXPECT_EQ(before.cpus[0].domains[1].cpumask, "0f");  // one socket
  auto d = schedstat_delta(before, after);
  EXPECT_GT(d.timestamp, 0u);
  std::uint64_t schedules = 0, balances = 0;
  for (const auto& cpu : d.cpus) {
    schedules += cpu.fields.at("sched_count");
    for (const auto& dom : cpu.domains)
      balances += dom.fields.at("busy.lb_count") + dom.fields.at("idle.lb_count");
  }
  EXPECT_GT(schedules, 0u) << "six busy loops ran across the second";
  EXPECT_GT(balances, 0u);
}

TEST_P(EightCpuGuest, StatAndInterruptTablesParse) {
  auto stat = parse_proc_stat(slurp(dir() / "stat"), "stat");
  EXPECT_EQ(stat.cpus.size(), 8u);
  auto irq = parse_per_cpu_table(slurp(dir() / "interrupts"), "interrupts");
  EXPECT_EQ(irq.cpus.size(), 8u);
  EXPECT_EQ(irq.rows.at("RES").size(), 8u);
  auto soft = parse_per_cpu_table(slurp(dir() / "softirqs"), "softirqs");
  EXPECT_EQ(soft.rows.at("SCHED").size(), 8u);
}

INSTANTIATE_TEST_SUITE_P(Debian, EightCpuGuest,
                         ::testing::Values(std::pair<std::string, int>{"debian-6.1-qemu-smp8", 15},
                                           std::pair<std::string, int>{"debian-6.12-qemu-smp8", 16}));

TEST(SchedstatSourceTest, AbsentFileIsUnsupportedWithItsErrno) {
  TempDir root;  // no proc/schedstat, as on a kernel without CONFIG_SCHEDSTATS (this VM's)
  SchedstatSource source(HostPaths::under(root.path()));
  source.enable();
  Repetition rep;
  source.collect(rep);
  const auto& c = rep.counters.at("schedstat.sched_count");
  EXPECT_EQ(c.status, status::kUnsupported);
  EXPECT_EQ(c.error_number, ENOENT);
  EXPECT_EQ(rep.counters.at("schedstat.lb_count").status, status::kUnsupported);
  EXPECT_NE(rep.system["schedstat"]["unsupported"].get<std::string>().find("cannot read"), std::string::npos);
}

TEST(SchedstatSourceTest, DeltasBetweenTwoReadings) {
  TempDir root;
  fs::create_directories(root.path() / "proc");
  spit(root.path() / "proc" / "schedstat", slurp(kProbe / "schedstat-6.1.0-50-amd64"));
  SchedstatSource source(HostPaths::under(root.path()));
  source.enable();
  Repetition rep;
  source.collect(rep);  // the same reading twice: every delta is zero, and every counter is there
  for (const char* name : {"schedstat.yld_count", "schedstat.run_delay_s", "schedstat.pcount",
                           "schedstat.lb_count", "schedstat.ttwu_wake_remote"}) {
    const auto& c = rep.counters.at(name);
    EXPECT_EQ(c.status, status::kOk) << name << ": " << c.reason;
    EXPECT_EQ(c.value, 0.0) << name;
    EXPECT_EQ(c.scope, "system");
  }
  EXPECT_EQ(rep.counters.at("schedstat.run_delay_s").unit, "s");
  EXPECT_EQ(rep.system["schedstat"]["version"], 15);
  EXPECT_EQ(rep.system["schedstat"]["cpus"]["1"]["domains"][0]["cpumask"], "3");

  // A reading of another kernel in between is refused as a delta, with the reason.
  spit(root.path() / "proc" / "schedstat", slurp(kProbe / "schedstat-6.12.100+deb12-amd64"));
  source.collect(rep);
  EXPECT_EQ(rep.counters.at("schedstat.sched_count").status, status::kUnsupported);
  EXPECT_NE(rep.counters.at("schedstat.sched_count").reason.find("differ"), std::string::npos);
}

TEST(SystemStatsLive, EveryRepetitionOfARunCarriesThem) {
  TempDir out;
  auto o = testing::schedlab(
      "run --workload yield --param yield.yields=20000 --repetitions 1 --no-counters "
      "--settle-timeout 1 --out " +
      out.path().string());
  ASSERT_EQ(o.code, 0) << o.out;
  auto files = testing::files_in(out.path());
  ASSERT_EQ(files.size(), 1u);
  // Read as every reader does: /2 bundles keep shared fields once and tables by column (#21).
  auto rep = expand_bundle(nlohmann::json::parse(slurp(files[0])),
                           files[0].string())["instances"][0]["repetitions"][0];
  const auto& c = rep["counters"]["system.context_switches"];
  EXPECT_EQ(c["status"], "ok") << c.dump();
  EXPECT_GT(c["value"].get<double>(), 0);
  EXPECT_EQ(rep["system"]["per_cpu"].size(), static_cast<std::size_t>(::sysconf(_SC_NPROCESSORS_ONLN)));
  // schedstat: counted where the kernel has the file, else unsupported with ENOENT (this VM).
  const auto& sched = rep["counters"]["schedstat.sched_count"];
  if (fs::exists("/proc/schedstat")) {
    EXPECT_EQ(sched["status"], "ok") << sched.dump();
  } else {
    EXPECT_EQ(sched["status"], "unsupported") << sched.dump();
    EXPECT_EQ(sched["errno"], ENOENT) << sched.dump();
  }
}

// Diagnostic repetitions switch counting on and put the sysctl back; timed ones never touch it, and
// their zeros from a kernel that was not counting are `not-counted`, not measurements.
TEST(SchedstatSourceTest, SwitchesSchedstatsOnForADiagnosticRepetitionAndRestoresIt) {
  TempDir root;
  fs::create_directories(root.path() / "proc/sys/kernel");
  spit(root.path() / "proc" / "schedstat", slurp(kProbe / "schedstat-6.1.0-50-amd64"));
  const auto sysctl = root.path() / "proc/sys/kernel/sched_schedstats";
  spit(sysctl, "0\n");
  {
    SchedstatSource timed(HostPaths::under(root.path()));
    timed.attach({});
    EXPECT_EQ(slurp(sysctl), "0\n");
    timed.enable();
    Repetition rep;
    timed.collect(rep);
    EXPECT_EQ(rep.counters.at("schedstat.sched_count").status, status::kNotCounted);
    EXPECT_NE(rep.counters.at("schedstat.sched_count").reason.find("sched_schedstats was 0"),
              std::string::npos);
    EXPECT_EQ(rep.counters.at("schedstat.lb_count").status, status::kNotCounted);
    EXPECT_EQ(rep.counters.at("schedstat.run_delay_s").status, status::kOk);  // sched_info counts anyway
    EXPECT_EQ(rep.system["schedstat"]["switched_on_for_repetition"], false);
  }
  {
    SchedstatSource diagnostic(HostPaths::under(root.path()), SchedstatsSwitch::kOnForRepetition);
    diagnostic.attach({});
    EXPECT_EQ(trim(slurp(sysctl)), "1");
    diagnostic.enable();
    Repetition rep;
    diagnostic.collect(rep);
    EXPECT_EQ(trim(slurp(sysctl)), "0");
    EXPECT_EQ(rep.counters.at("schedstat.sched_count").status, status::kOk);
    EXPECT_EQ(rep.system["schedstat"]["switched_on_for_repetition"], true);
  }
  {
    SchedstatSource abandoned(HostPaths::under(root.path()), SchedstatsSwitch::kOnForRepetition);
    abandoned.attach({});  // the repetition never got to collect: the destructor restores
    EXPECT_EQ(trim(slurp(sysctl)), "1");
  }
  EXPECT_EQ(trim(slurp(sysctl)), "0");
}

}  // namespace
}  // namespace schedlab
