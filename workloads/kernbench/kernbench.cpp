#include "workloads/kernbench/kernbench.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <optional>

#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "workloads/common/task_setup.hpp"
#include "workloads/kernbench/build_tree.hpp"
#include "workloads/kernbench/cache_dir.hpp"
#include "workloads/kernbench/process.hpp"
#include "workloads/kernbench/tree_generator.hpp"

namespace schedlab {
namespace {

using kernbench::BuildTree;

struct KernbenchOptions {
  long long jobs;  // 0: make -j without a limit
  std::string tree;
  int files;
  SchedPolicy policy;
  int nice;
  double unit_work_ms;  // injected CPU work per compiler run; 0: none
};

KernbenchOptions kernbench_options(const ParamValues& p) {
  return {p.at("jobs").get<long long>(), p.at("tree").get<std::string>(),
          p.at("files").get<int>(),      parse_policy(p.at("policy").get<std::string>()),
          p.at("nice").get<int>(),       p.value("unit_work_ms", 0.0)};
}

// schedlab-unit-work, the compiler wrapper that does the injected work: installed beside the schedlab
// binary, or, for a test binary running the workload in process, where the build put it.
std::filesystem::path unit_work_tool() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / "schedlab-unit-work"))
    return self.parent_path() / "schedlab-unit-work";
#ifdef SCHEDLAB_UNIT_WORK_BUILT
  if (std::filesystem::exists(SCHEDLAB_UNIT_WORK_BUILT)) return SCHEDLAB_UNIT_WORK_BUILT;
#endif
  throw Error("kernbench.unit_work_ms: schedlab-unit-work is not beside " + self.string() +
              " (cmake --install installs it there)");
}

struct UnitWork {
  std::filesystem::path tool;
  double ns_per_round = 0;
  unsigned long long rounds = 0;
};

// The rounds of the wrapper's chain that take `ms` here, timed by the wrapper itself (untimed for the
// repetition: before make starts).
UnitWork calibrate_unit_work(double ms) {
  UnitWork w;
  w.tool = unit_work_tool();
  const auto r = kernbench::run_process({{w.tool.string(), "--calibrate"}, true, std::nullopt, 0});
  if (!r.ok() || std::sscanf(r.out.c_str(), "%lf", &w.ns_per_round) != 1 || !(w.ns_per_round > 0))
    throw Error(w.tool.string() + " --calibrate failed (" + r.status_text() + "): " + r.out + r.err);
  w.rounds = static_cast<unsigned long long>(std::llround(ms * 1e6 / w.ns_per_round));
  return w;
}

int online_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

double seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
}

std::string join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Writes back what the clean left dirty, so that no repetition starts with another's writeback.
void sync_filesystem_of(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::syncfs(fd);
  ::close(fd);
}

}  // namespace

std::string KernbenchWorkload::summary() const {
  return "make -j J over a C source tree (generated, or a Linux tree), cleaned before each build: Elapsed, "
         "User, System, CPU";
}

std::string KernbenchWorkload::experiment() const {
  return "kernbench: a 2003 scheduler change made make -j of a kernel tree 7% slower (Elapsed 46.0 s -> 49.4 "
         "s, "
         "System 115 s -> 131 s), suspected of bouncing tasks between CPUs.";
}

std::vector<ParamSpec> KernbenchWorkload::params() const {
  const int jobs = 2 * online_cpus();
  std::vector<ParamSpec> p;
  p.push_back({"jobs",
               ParamKind::kInteger,
               jobs,
               "",
               "make -j value (default 2 x online CPUs, here " + std::to_string(jobs) +
                   "); 0 runs make -j without a limit, kernbench's maximal load",
               0.0,
               65536.0,
               {}});
  p.push_back(
      {"tree",
       ParamKind::kText,
       "generated",
       "",
       "'generated' (the bundled tree), a directory with a Makefile (a Linux tree is built out of tree "
       "with O= after defconfig), or a tarball such as /usr/src/linux-source-6.1.tar.xz, extracted once "
       "into the cache directory; the given tree is never modified",
       std::nullopt,
       std::nullopt,
       {}});
  p.push_back({"files",
               ParamKind::kInteger,
               kernbench::kDefaultFiles,
               "",
               "translation units of the generated tree (ignored for other trees)",
               1.0,
               20000.0,
               {}});
  p.push_back(policy_param("make and the compilers it starts (they inherit it)"));
  p.push_back(nice_param("make and the compilers it starts"));
  ParamSpec work{
      "unit_work_ms",
      ParamKind::kNumber,
      0.0,
      "ms",
      "injected work: this many ms of a fixed CPU loop (calibrated before each build) before "
      "every compiler run of the generated tree, a known slowdown for testing experiments; 0: none",
      0.0,
      60000.0,
      {}};
  work.omitted_at_default = true;
  p.push_back(work);
  return p;
}

std::vector<MetricDesc> KernbenchWorkload::metrics() const {
  return {
      {"elapsed_s", "s", Direction::kLowerIsBetter, true,
       "wall time of make -jJ, fork to wait4 (the make clean before it is not timed)"},
      {"user_s", "s", Direction::kLowerIsBetter, false,
       "user CPU time of make and every process it waited for (wait4 rusage)"},
      {"system_s", "s", Direction::kLowerIsBetter, false,
       "system CPU time of make and every process it waited for (wait4 rusage)"},
      // kernbench's CPU column. The work is fixed, so a higher share means the parallelism make
      // offers was used better (elapsed fell). More system time also raises it, but then elapsed_s
      // and system_s say so. Derived and not a headline: no verdict rests on this direction.
      {"cpu_pct", "pct", Direction::kHigherIsBetter, false, "(user_s + system_s) / elapsed_s x 100"},
      {"voluntary_switches", "count", Direction::kLowerIsBetter, false,
       "voluntary context switches of make and its waited-for children (wait4 rusage)"},
      {"involuntary_switches", "count", Direction::kLowerIsBetter, false,
       "involuntary context switches (preemptions) of make and its waited-for children (wait4 rusage)"},
  };
}

std::map<std::string, std::map<std::string, std::string>> KernbenchWorkload::quick_instances() const {
  return {{"kernbench", {{"files", "30"}}}};
}

void KernbenchWorkload::validate(const ParamValues& params, const WorkloadContext& ctx) const {
  const auto o = kernbench_options(params);
  if (ctx.cache_dir.empty())
    throw InputError("kernbench needs a cache directory for its source trees (--cache-dir)");
  kernbench::check_tree(o.tree);
  if (o.unit_work_ms > 0 && o.tree != "generated")
    throw InputError(
        "kernbench.unit_work_ms: injected work goes into the generated tree's compiler runs "
        "only (kernbench.tree=generated); '" +
        o.tree + "' builds with its own compiler settings");
}

WorkloadResult KernbenchWorkload::run(const ParamValues& params, const WorkloadContext& ctx) {
  const auto o = kernbench_options(params);
  const auto cache_root = ctx.cache_dir / "kernbench";
  std::filesystem::create_directories(cache_root);
  FileLock lock(cache_root / ".lock", "using the kernbench cache " + cache_root.string() +
                                          "; run one at a time or give another --cache-dir");

  // Untimed: generate, extract or configure on first use, then clean.
  const BuildTree tree = kernbench::prepare_tree(o.tree, o.files, cache_root);
  const auto clean_argv = kernbench::make_command(tree, {"clean"});
  auto clean = kernbench::run_process({clean_argv, false, std::nullopt, 0});
  if (!clean.ok())
    throw Error(join(clean_argv) + " failed (" + clean.status_text() + "):\n" +
                kernbench::error_excerpt(clean.err));
  sync_filesystem_of(tree.make_dir);

  std::vector<std::string> make_args = {o.jobs == 0 ? "-j" : "-j" + std::to_string(o.jobs)};
  std::optional<UnitWork> work;
  if (o.unit_work_ms > 0) {
    work = calibrate_unit_work(o.unit_work_ms);
    make_args.push_back("CC=" + work->tool.string() + " " + std::to_string(work->rounds) + " gcc");
  }
  const auto build_argv = kernbench::make_command(tree, make_args);
  const auto r = kernbench::run_process({build_argv, false, o.policy, o.nice});
  if (!r.ok())
    throw Error(join(build_argv) + " failed (" + r.status_text() + "); first lines of its error output:\n" +
                kernbench::error_excerpt(r.err));

  const double user = seconds(r.usage.ru_utime), system = seconds(r.usage.ru_stime);
  WorkloadResult result;
  auto& m = result.metrics;
  m["elapsed_s"] = {r.elapsed_s, "s"};
  m["user_s"] = {user, "s"};
  m["system_s"] = {system, "s"};
  m["cpu_pct"] = {r.elapsed_s > 0 ? (user + system) / r.elapsed_s * 100.0 : 0.0, "pct"};
  m["voluntary_switches"] = {static_cast<double>(r.usage.ru_nvcsw), "count"};
  m["involuntary_switches"] = {static_cast<double>(r.usage.ru_nivcsw), "count"};
  result.details = {{"jobs", o.jobs},
                    {"command", join(build_argv)},
                    {"tree", o.tree},
                    {"tree_kind", tree.kind},
                    {"tree_origin", tree.origin},
                    {"tree_source", tree.source.string()},
                    {"make_dir", tree.make_dir.string()},
                    {"tree_hash", tree.tree_hash},
                    {"tree_prepared", tree.prepared},
                    {"clean_s", clean.elapsed_s},
                    {"make_version", kernbench::program_version("make")},
                    {"gcc_version", kernbench::program_version("gcc")},
                    {"minor_faults", r.usage.ru_minflt},
                    {"major_faults", r.usage.ru_majflt},
                    {"max_rss_kib", r.usage.ru_maxrss}};
  if (tree.kind == "generated") result.details["files"] = o.files;
  if (work)
    result.details["unit_work"] = {{"ms", o.unit_work_ms},
                                   {"rounds", work->rounds},
                                   {"ns_per_round", work->ns_per_round},
                                   {"wrapper", work->tool.string()}};
  return result;
}

}  // namespace schedlab
