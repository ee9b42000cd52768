#include "workloads/sdet/sdet.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <functional>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/pipe.hpp"
#include "workloads/common/child_group.hpp"
#include "workloads/common/placement.hpp"
#include "workloads/common/task_setup.hpp"
#include "workloads/kernbench/cache_dir.hpp"
#include "workloads/sdet/scratch.hpp"
#include "workloads/sdet/script_set.hpp"
#include "workloads/sdet/user.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using sdet::Script;

struct SdetOptions {
  int users, scripts, nice;
  std::uint64_t seed;
  double max_duration_s;
  std::string script_dir, export_dir;
  Placement placement;
  SchedPolicy policy;
};

SdetOptions sdet_options(const ParamValues& p) {
  return {p.at("users").get<int>(),
          p.at("scripts").get<int>(),
          p.at("nice").get<int>(),
          p.at("seed").get<std::uint64_t>(),
          p.at("max_duration_s").get<double>(),
          p.value("script_dir", std::string()),
          p.value("export_dir", std::string()),
          parse_placement(p.at("placement").get<std::string>()),
          parse_policy(p.at("policy").get<std::string>())};
}

std::vector<int> user_cpus(const SdetOptions& o, const WorkloadContext& ctx) {
  if (o.placement == Placement::kSameThread)
    throw InputError("sdet.placement: same-thread applies to tbench only");
  try {
    return assign_cpus(o.placement, o.users, ctx.topology, ctx.allowed_cpus);
  } catch (const InputError& e) {
    throw InputError(std::string("sdet.placement: ") + e.what());
  }
}

std::vector<std::vector<std::size_t>> orders(const SdetOptions& o, std::size_t set_size) {
  std::vector<std::vector<std::size_t>> out;
  for (int u = 0; u < o.users; ++u)
    out.push_back(sdet::user_order(o.seed, u, set_size, static_cast<std::size_t>(o.scripts)));
  return out;
}

// What bench/sdet_vs_shell.sh needs to run the same work without schedlab: data/, scripts/, and
// orders/user-K (user K's scripts, one name a line).
void export_inputs(const fs::path& dir, const std::vector<Script>& set,
                   const std::vector<std::vector<std::size_t>>& order,
                   const std::vector<sdet::DataFile>& data) {
  sdet::write_data(dir / "data", data);
  sdet::write_scripts(dir / "scripts", set);
  fs::create_directories(dir / "orders");
  for (std::size_t u = 0; u < order.size(); ++u) {
    std::ofstream out(dir / "orders" / ("user-" + std::to_string(u)));
    for (auto i : order[u]) out << set[i].name << '\n';
    if (!out) throw Error("sdet.export_dir: cannot write the order of user " + std::to_string(u));
  }
}

// The inputs (the data files and the scripts) are written once into the cache under their content
// hash, synced before they appear, and reused: files written just before the scripts run cost them
// more (measured on the reference VM's ext4: plain shells over a fresh copy of the data ran 15%
// fewer scripts per hour than over an old one), which would make results depend on when the files
// were written. Without a cache directory, the scratch directory's copy is synced before the start.
fs::path input_dir(const WorkloadContext& ctx, const std::string& name, const fs::path& scratch,
                   const std::function<void(const fs::path&)>& fill) {
  if (ctx.cache_dir.empty()) {
    const auto dir = scratch / name;
    fill(dir);
    if (int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
      ::syncfs(fd);
      ::close(fd);
    }
    return dir;
  }
  const auto dir = ctx.cache_dir / "sdet" / name;
  fs::create_directories(dir.parent_path());
  kernbench::publish_directory(dir, fill);
  return dir;
}

// The scripts' whole environment: nothing of the caller's leaks in (a locale changes what sort does).
std::vector<std::string> user_env(const fs::path& data, const fs::path& home, int user) {
  return {"PATH=/usr/bin:/bin",         "LC_ALL=C",
          "HOME=" + home.string(),      "TMPDIR=" + home.string(),
          "SDET_DATA=" + data.string(), "SDET_USER=" + std::to_string(user)};
}

void wait_for_go(int fd) {
  char c;
  while (::read(fd, &c, 1) < 0 && errno == EINTR) {
  }
}

double seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

}  // namespace

std::string SdetWorkload::summary() const {
  return "SDET-style multi-user throughput: U users each run a set of short shell scripts of common commands "
         "(fork, exec, files, pipes) in their own order and directory; scripts per hour";
}

std::string SdetWorkload::experiment() const {
  return "SDET (SPEC SDM 057.sdet), the multi-user script throughput posted beside kernbench in the 2003 "
         "O(1)/interactivity scheduler threads (+2.9%, +5.1%).";
}

std::vector<ParamSpec> SdetWorkload::params() const {
  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  const auto bundled = static_cast<long>(sdet::bundled_scripts().size());
  std::vector<ParamSpec> p;
  p.push_back({"users",
               ParamKind::kInteger,
               2 * cpus,
               "",
               "concurrent users (processes), each in its own directory (default: two per online CPU)",
               1.0,
               1024.0,
               {}});
  p.push_back({"scripts",
               ParamKind::kInteger,
               bundled,
               "",
               "scripts each user runs, one shuffle of the set after another (default: the bundled set's "
               "size, so each user runs each bundled script once)",
               1.0,
               1e6,
               {}});
  p.push_back(
      {"seed", ParamKind::kInteger, 1, "", "seeds each user's order of the scripts", 0.0, 4294967295.0, {}});
  p.push_back({"max_duration_s",
               ParamKind::kNumber,
               600.0,
               "s",
               "time limit: no script starts after it, and users still running a second later are killed "
               "(the run fails)",
               1.0,
               86400.0,
               {}});
  ParamSpec script_dir{"script_dir",
                       ParamKind::kText,
                       "",
                       "",
                       "a directory whose regular files are scripts added to the bundled set (run by /bin/sh "
                       "in the user's directory, $SDET_DATA the data); empty: the bundled set alone",
                       std::nullopt,
                       std::nullopt,
                       {}};
  script_dir.omitted_at_default = true;
  p.push_back(script_dir);
  ParamSpec export_dir{"export_dir",
                       ParamKind::kText,
                       "",
                       "",
                       "also write the data, the script set and each user's order there (data/, scripts/, "
                       "orders/user-K), for running the same work without schedlab; empty: nothing written",
                       std::nullopt,
                       std::nullopt,
                       {}};
  export_dir.omitted_at_default = true;
  p.push_back(export_dir);
  p.push_back(placement_param(
      "the user processes (their shells and commands inherit it): same-cpu, spread, other-core (users "
      "alternate between two CPUs), unpinned, ..."));
  p.push_back(policy_param("the user processes, their shells and commands"));
  p.push_back(nice_param("the user processes, their shells and commands"));
  return p;
}

std::vector<MetricDesc> SdetWorkload::metrics() const {
  const auto higher = Direction::kHigherIsBetter, lower = Direction::kLowerIsBetter;
  return {
      {"scripts_per_hour", "/h", higher, true,
       "scripts completed per hour: scripts / elapsed_s x 3600 (SDET's figure)"},
      {"elapsed_s", "s", lower, false, "from the users' release to the end of the last user's last script"},
      {"scripts", "count", higher, false, "scripts run, all users (= users x scripts per user)"},
      {"operations", "count", higher, false, "= scripts (counters per operation divide by it)"},
      {"script_time_p50_ms", "ms", lower, false,
       "median time of one script, fork of its shell to its reaping (lower middle of all users' scripts)"},
      {"script_time_max_ms", "ms", lower, false, "the longest script, same definition"},
      {"user_s", "s", lower, false, "user CPU time of the users, their shells and commands (wait4 rusage)"},
      {"system_s", "s", lower, false, "system CPU time, same processes"},
      {"cpu_pct", "pct", higher, false, "(user_s + system_s) / elapsed_s x 100: CPUs kept busy (200 = two)"},
      {"context_switches", "count", lower, false,
       "voluntary + involuntary switches of the users, their shells and commands (wait4 rusage)"},
  };
}

std::map<std::string, std::map<std::string, std::string>> SdetWorkload::quick_instances() const {
  return {{"sdet", {{"users", "2"}}}};
}

void SdetWorkload::validate(const ParamValues& params, const WorkloadContext& ctx) const {
  const auto o = sdet_options(params);
  user_cpus(o, ctx);
  sdet::script_set(o.script_dir);
  if (!o.export_dir.empty()) {
    std::error_code ec;
    const fs::path dir(o.export_dir);
    if (!fs::is_directory(dir, ec) &&
        !fs::is_directory(dir.parent_path().empty() ? "." : dir.parent_path(), ec))
      throw InputError("sdet.export_dir: neither " + o.export_dir + " nor its parent is a directory");
  }
  if (::access(sdet::kShell, X_OK) != 0)
    throw InputError(std::string("sdet: ") + sdet::kShell + " cannot be executed: " + errno_text(errno));
}

std::vector<int> SdetWorkload::cpus(const ParamValues& params, const WorkloadContext& ctx) const {
  return cpus_in_use(user_cpus(sdet_options(params), ctx), ctx.allowed_cpus);
}

WorkloadResult SdetWorkload::run(const ParamValues& params, const WorkloadContext& ctx) {
  const auto o = sdet_options(params);
  const auto cpus = user_cpus(o, ctx);
  const auto set = sdet::script_set(o.script_dir);
  const auto order = orders(o, set.size());
  const auto files = sdet::data_files();
  if (!o.export_dir.empty()) export_inputs(o.export_dir, set, order, files);

  // Everything the users touch is made before they start: only the scripts are timed.
  sdet::Scratch scratch;
  const auto data = input_dir(ctx, "data-" + sdet::data_hash(files), scratch.path(),
                              [&](const fs::path& dir) { sdet::write_data(dir, files); });
  const auto scripts = input_dir(ctx, "scripts-" + sdet::script_set_hash(set), scratch.path(),
                                 [&](const fs::path& dir) { sdet::write_scripts(dir, set); });
  fs::create_directories(scratch.path() / "logs");
  std::vector<sdet::UserPlan> plans(static_cast<std::size_t>(o.users));
  const std::int64_t deadline_ns = monotonic_ns() + static_cast<std::int64_t>(o.max_duration_s * 1e9);
  for (int u = 0; u < o.users; ++u) {
    auto& plan = plans[static_cast<std::size_t>(u)];
    plan.user = u;
    plan.dir = scratch.path() / "users" / std::to_string(u);
    fs::create_directories(plan.dir);
    plan.err_file = scratch.path() / "logs" / (std::to_string(u) + ".err");
    plan.env = user_env(data, plan.dir, u);
    plan.deadline_ns = deadline_ns;
    for (auto i : order[static_cast<std::size_t>(u)]) {
      plan.names.push_back(set[i].name);
      plan.files.push_back(scripts / set[i].name);
    }
  }

  // The users start together when `go` closes, after all of them are forked.
  Pipe go;
  ChildGroup group;
  for (int u = 0; u < o.users; ++u) {
    group.spawn(
        "sdet user " + std::to_string(u),
        [&, u] {
          go.close_write();
          setup_current_thread({"schedlab-sdet", cpus[static_cast<std::size_t>(u)], &o.policy, o.nice});
          wait_for_go(go.read);
          return sdet::run_user(plans[static_cast<std::size_t>(u)]);
        },
        ChildGroup::ProcessGroup::kOwn);
  }
  const std::int64_t start_ns = monotonic_ns();
  go.close_write();
  // The users stop starting scripts at the deadline; a second more covers the one running then.
  const auto reports = group.wait_all(deadline_ns + 1000000000LL);

  std::int64_t end_ns = start_ns;
  std::uint64_t total = 0;
  std::vector<std::int64_t> times;
  double user_s = 0, system_s = 0;
  long switches = 0;
  nlohmann::json users = nlohmann::json::array();
  for (std::size_t u = 0; u < reports.size(); ++u) {
    const auto& r = reports[u];
    nlohmann::json summary;
    std::vector<std::int64_t> samples;
    unpack_report(r.report, r.name, summary, samples);
    total += summary.at("scripts").get<std::uint64_t>();
    end_ns = std::max(end_ns, summary.at("end_ns").get<std::int64_t>());
    times.insert(times.end(), samples.begin(), samples.end());
    user_s += seconds(r.usage.ru_utime);
    system_s += seconds(r.usage.ru_stime);
    switches += r.usage.ru_nvcsw + r.usage.ru_nivcsw;
    users.push_back(
        {{"user", u},
         {"cpu", cpus[u]},
         {"elapsed_s", static_cast<double>(summary.at("end_ns").get<std::int64_t>() - start_ns) / 1e9},
         {"order", plans[u].names},
         {"voluntary_switches", r.usage.ru_nvcsw},
         {"involuntary_switches", r.usage.ru_nivcsw}});
  }
  const auto expected = static_cast<std::uint64_t>(o.users) * static_cast<std::uint64_t>(o.scripts);
  if (total != expected || times.size() != expected)
    throw Error("ran " + std::to_string(total) + " scripts, expected " + std::to_string(expected));
  std::sort(times.begin(), times.end());
  const double elapsed_s = static_cast<double>(end_ns - start_ns) / 1e9;

  WorkloadResult result;
  auto& m = result.metrics;
  m["scripts_per_hour"] = {static_cast<double>(total) / elapsed_s * 3600.0, "/h"};
  m["elapsed_s"] = {elapsed_s, "s"};
  m["scripts"] = {static_cast<double>(total), "count"};
  m["operations"] = {static_cast<double>(total), "count"};
  m["script_time_p50_ms"] = {static_cast<double>(times[(times.size() - 1) / 2]) / 1e6, "ms"};
  m["script_time_max_ms"] = {static_cast<double>(times.back()) / 1e6, "ms"};
  m["user_s"] = {user_s, "s"};
  m["system_s"] = {system_s, "s"};
  m["cpu_pct"] = {(user_s + system_s) / elapsed_s * 100.0, "pct"};
  m["context_switches"] = {static_cast<double>(switches), "count"};
  auto& d = result.details;
  d["users"] = users;
  d["script_set"] = {{"scripts", set.size()}, {"hash", sdet::script_set_hash(set)}};
  d["data"] = {{"path", data.string()}, {"hash", sdet::data_hash(files)}};
  d["scripts_path"] = scripts.string();
  std::error_code ec;
  d["shell"] = {{"path", sdet::kShell}, {"resolves_to", fs::canonical(sdet::kShell, ec).string()}};
  d["scratch"] = {{"path", scratch.path().string()}, {"filesystem", sdet::filesystem_type(scratch.path())}};
  return result;
}

}  // namespace schedlab
