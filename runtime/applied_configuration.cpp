#include "runtime/applied_configuration.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "runtime/cpu_cgroup.hpp"
#include "runtime/restore_journal.hpp"
#include "runtime/scx_attachment.hpp"

namespace schedlab::runtime {
namespace fs = std::filesystem;

fs::path default_schedulers_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("schedulers") : exe.parent_path() / "schedulers";
}

namespace {

struct ScxFiles {
  fs::path loader, object;
};

// The loader and the scheduler's object, and a kernel that has sched_ext: checked without attaching.
ScxFiles scx_files(const RuntimeConfiguration& c, const RuntimeContext& ctx) {
  const fs::path sysfs = ctx.paths.sys / "kernel/sched_ext";
  const std::string named = "configuration " + c.name + ": scheduler " + c.scheduler + ": ";
  if (!fs::exists(sysfs / "state"))
    throw Error(named + "this kernel has no sched_ext (CONFIG_SCHED_CLASS_EXT): " +
                (sysfs / "state").string() + ": No such file or directory");
  ScxFiles f{ctx.schedulers_dir / "schedlab-scx", ctx.schedulers_dir / (c.scx_name() + ".bpf.o")};
  if (::access(f.loader.c_str(), X_OK) != 0)
    throw Error(named + "no loader at " + f.loader.string() + " (--schedulers-dir)");
  if (!fs::exists(f.object)) {
    std::string known;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(ctx.schedulers_dir, ec)) {
      const auto name = e.path().filename().string();
      if (name.ends_with(".bpf.o"))
        known += (known.empty() ? "scx:" : ", scx:") + name.substr(0, name.size() - 6);
    }
    throw Error(named + "no " + f.object.string() + " (built: " + (known.empty() ? "none" : known) + ")");
  }
  return f;
}

class AppliedConfiguration : public TrialEnvironment {
 public:
  AppliedConfiguration(const RuntimeConfiguration& c, const RuntimeContext& ctx)
      : c_(c), ctx_(ctx), journal_(ctx.journal_dir, boot_id(ctx.paths)) {
    const double t0 = monotonic_seconds();
    try {
      apply();
    } catch (...) {
      restore_quietly();
      throw;
    }
    apply_ms_ = (monotonic_seconds() - t0) * 1000;
  }
  ~AppliedConfiguration() override {
    if (!finished_) restore_quietly();
  }

  std::vector<fs::path> cgroups_v1() const override {
    return cgroup_version_ == 1 ? std::vector<fs::path>{group_} : std::vector<fs::path>{};
  }
  fs::path cgroup2_parent() const override { return cgroup_version_ == 2 ? group_ : fs::path(); }

  std::optional<std::string> lost() override {
    if (scx_) return scx_->ejected();
    if (c_.scheduler == "eevdf" || c_.scheduler == "cfs") {
      if (read_line(scx_sysfs() / "state").value_or("disabled") == "enabled")
        return "a sched_ext scheduler (" + read_line(scx_sysfs() / "root/ops").value_or("?") +
               ") was attached during the repetition, under " + c_.scheduler;
    }
    return std::nullopt;
  }

  nlohmann::json settings() const override {
    return {{"name", c_.name}, {"given", c_.to_json()}, {"read_back", read_back_}};
  }

  nlohmann::json finish() override {
    finished_ = true;
    const double t0 = monotonic_seconds();
    nlohmann::json out = {{"configuration", c_.name}, {"apply_ms", apply_ms_}};
    if (scx_) {
      out["attach"] = scx_->attached();
      if (auto why = scx_->ejected())
        out["ejected"] = *why;
      else
        out["detach"] = scx_->detach();
      scx_.reset();
    }
    if (!group_.empty()) {
      // What the bandwidth did to the trial (nr_throttled, throttled time), read before the group goes.
      nlohmann::json stat = nlohmann::json::object();
      const auto words = split_ws(read_text(group_ / "cpu.stat").value_or(""));
      for (std::size_t i = 0; i + 1 < words.size(); i += 2)
        if (words[i + 1].find_first_not_of("0123456789") == std::string::npos)
          stat[words[i]] = std::stoll(words[i + 1]);
      out["cpu_stat"] = stat;
    }
    auto failed = journal_.restore();
    out["restore_ms"] = (monotonic_seconds() - t0) * 1000;
    if (!group_.empty()) out["cgroup"] = group_.string();
    if (!failed.empty()) {
      std::string list;
      for (const auto& f : failed) list += (list.empty() ? "" : "; ") + f;
      throw Error("configuration " + c_.name + ": not restored: " + list + " (the journal " +
                  journal_.file().string() + " keeps it for the next start)");
    }
    return out;
  }

 private:
  fs::path scx_sysfs() const { return ctx_.paths.sys / "kernel/sched_ext"; }
  std::string named(const std::string& what) const { return "configuration " + c_.name + ": " + what; }

  void restore_quietly() {
    scx_.reset();
    (void)journal_.restore();
  }

  // Written, journalled first, and read back: a value the kernel rounds or ignores is an error, not a
  // silently different configuration.
  void write_setting(const std::string& what, const fs::path& path, const std::string& value) {
    auto original = read_text(path);
    if (!original)
      throw Error(named(what + ": " + path.string() + ": " + errno_text(errno ? errno : ENOENT)));
    journal_.add({{"kind", "write"}, {"path", path.string()}, {"value", trim(*original)}, {"what", what}});
    std::string error;
    if (!write_kernel_file(path, value, error))
      throw Error(named(what + ": the kernel refused it: " + error));
    const auto back = trim(read_text(path).value_or(""));
    if (back != value)
      throw Error(
          named(what + ": wrote '" + value + "' to " + path.string() + ", it reads back '" + back + "'"));
    read_back_[what] = back;
  }

  void apply_features() {
    if (c_.features.empty()) return;
    const fs::path file = ctx_.paths.sys / "kernel/debug/sched/features";
    auto text = read_text(file);
    if (!text)
      throw Error(named("sched features: " + file.string() + ": " + errno_text(errno ? errno : ENOENT) +
                        " (debugfs not mounted, or locked down)"));
    const auto present = split_ws(*text);
    std::vector<std::string> now;
    for (const auto& f : c_.features) {
      const std::string base = f.rfind("NO_", 0) == 0 ? f.substr(3) : f;
      std::string original;
      for (const auto& p : present)
        if (p == base || p == "NO_" + base) original = p;
      if (original.empty())
        throw Error(named("sched feature " + f + ": " + file.string() + " has no " + base));
      journal_.add(
          {{"kind", "write"}, {"path", file.string()}, {"value", original}, {"what", "feature " + base}});
      std::string error;
      if (!write_kernel_file(file, f, error))
        throw Error(named("sched feature " + f + ": the kernel refused it: " + error));
      const auto back = split_ws(read_text(file).value_or(""));
      if (std::find(back.begin(), back.end(), f) == back.end())
        throw Error(named("sched feature " + f + ": written, but " + file.string() + " does not show it"));
      now.push_back(f);
    }
    read_back_["features"] = now;
  }

  void apply_cgroup() {
    if (!c_.needs_cgroup()) return;
    std::string why;
    auto ctl = find_cpu_controller(ctx_.paths, why);
    if (!ctl) throw Error(named("cpu_weight/cpu_max: " + why));
    cgroup_version_ = ctl->version;
    if (ctl->version == 2) {
      if (ctx_.isolation == IsolationMode::kProcessGroup)
        throw Error(
            named("cpu_weight/cpu_max on cgroup v2 need cgroup isolation (not --isolation process-group)"));
      const fs::path subtree = ctl->parent / "cgroup.subtree_control";
      auto enabled = split_ws(read_text(subtree).value_or(""));
      if (std::find(enabled.begin(), enabled.end(), "cpu") == enabled.end()) {
        journal_.add({{"kind", "write"},
                      {"path", subtree.string()},
                      {"value", "-cpu"},
                      {"what", "cpu in " + subtree.string()}});
        std::string error;
        if (!write_kernel_file(subtree, "+cpu", error))
          throw Error(named("enable the cpu controller: " + error));
      }
    }
    group_ = ctl->parent / ("schedlab-runtime-" + std::to_string(::getpid()));
    if (::mkdir(group_.c_str(), 0755) != 0)
      throw Error(named("create the workload cgroup " + group_.string() + ": " + errno_text(errno)));
    journal_.add(
        {{"kind", "rmdir"}, {"path", group_.string()}, {"what", "the workload cgroup " + group_.string()}});
    read_back_["cgroup_version"] = ctl->version;
    if (ctl->version == 1) {
      if (c_.cpu_weight)
        write_setting("cpu.shares", group_ / "cpu.shares", std::to_string(shares_for_weight(*c_.cpu_weight)));
      if (c_.cpu_max) {
        write_setting("cpu.cfs_period_us", group_ / "cpu.cfs_period_us",
                      std::to_string(c_.cpu_max->period_us));
        write_setting("cpu.cfs_quota_us", group_ / "cpu.cfs_quota_us",
                      c_.cpu_max->quota_us ? std::to_string(*c_.cpu_max->quota_us) : "-1");
      }
    } else {
      if (c_.cpu_weight) write_setting("cpu.weight", group_ / "cpu.weight", std::to_string(*c_.cpu_weight));
      if (c_.cpu_max)
        write_setting("cpu.max", group_ / "cpu.max",
                      (c_.cpu_max->quota_us ? std::to_string(*c_.cpu_max->quota_us) : "max") + " " +
                          std::to_string(c_.cpu_max->period_us));
    }
  }

  void apply_scheduler() {
    const fs::path sysfs = scx_sysfs();
    if (c_.scheduler.empty()) return;
    const auto state = read_line(sysfs / "state");
    if (!c_.scx()) {
      if (state && *state != "disabled")
        throw Error(named("scheduler " + c_.scheduler + ": a sched_ext scheduler is attached (" +
                          sysfs.string() + "/root/ops = " + read_line(sysfs / "root/ops").value_or("?") +
                          ", state " + *state + ")"));
      // EEVDF replaced CFS's pick in 6.6: a side named for the other one would be mislabelled.
      const auto release = read_line(ctx_.paths.proc / "sys/kernel/osrelease").value_or("");
      int major = 0, minor = 0;
      if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) == 2) {
        const std::string builtin = std::pair{major, minor} >= std::pair{6, 6} ? "eevdf" : "cfs";
        if (builtin != c_.scheduler)
          throw Error(named("scheduler " + c_.scheduler + ": this kernel (" + release + ") has " + builtin +
                            " built in; name the side " + builtin));
      }
      read_back_["scheduler"] = c_.scheduler;
      return;
    }
    const auto [loader, object] = scx_files(c_, ctx_);
    scx_ = std::make_unique<ScxAttachment>(loader, object, sysfs, c_.scx_name(), ctx_.attach_timeout_s);
    read_back_["scheduler"] = "scx:" + read_line(sysfs / "root/ops").value_or("?");
    read_back_["sched_ext_state"] = read_line(sysfs / "state").value_or("?");
  }

  void apply() {
    for (const auto& [name, value] : c_.sysctls) {
      std::string rel = name;
      for (auto& ch : rel)
        if (ch == '.') ch = '/';
      write_setting("sysctl " + name, ctx_.paths.proc / "sys" / rel, value);
    }
    for (const auto& [name, value] : c_.tunables)
      write_setting("tunable " + name, ctx_.paths.sys / "kernel/debug/sched" / name, value);
    apply_features();
    apply_cgroup();
    apply_scheduler();  // last: an attach is the slow part, and nothing else then runs under a half-applied
                        // side
  }

  RuntimeConfiguration c_;
  RuntimeContext ctx_;
  RestoreJournal journal_;
  std::unique_ptr<ScxAttachment> scx_;
  nlohmann::json read_back_ = nlohmann::json::object();
  fs::path group_;
  int cgroup_version_ = 0;
  double apply_ms_ = 0;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<TrialEnvironment> apply_configuration(const RuntimeConfiguration& c,
                                                      const RuntimeContext& ctx) {
  return std::make_unique<AppliedConfiguration>(c, ctx);
}

TrialEnvironmentFactory environment_factory(RuntimeConfiguration c, RuntimeContext ctx) {
  return [c = std::move(c), ctx = std::move(ctx)] { return apply_configuration(c, ctx); };
}

nlohmann::json rehearse_configurations(const std::vector<RuntimeConfiguration>& configurations,
                                       const RuntimeContext& ctx) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : configurations) {
    try {
      // A sched_ext scheduler is checked, not attached: the attach is the trial's own (a scheduler the
      // kernel ejects fails that trial's repetitions, and the run goes on), and it costs a verification.
      RuntimeConfiguration settings_only = c;
      if (c.scx()) {
        (void)scx_files(c, ctx);
        settings_only.scheduler.clear();
      }
      auto env = apply_configuration(settings_only, ctx);
      out.push_back(env->finish());
    } catch (const std::exception& e) {
      throw InputError(std::string(e.what()) + " [" + c.defined_at + "]");
    }
  }
  return out;
}

}  // namespace schedlab::runtime
