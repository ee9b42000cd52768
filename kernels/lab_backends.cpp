#include "kernels/lab_backends.hpp"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <ostream>
#include <regex>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "kernels/process.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Installing the pinned package gives the box its vmlinuz, an initramfs-tools initrd for its own
// root disk, and (through the package's postinst) a grub entry.
std::vector<std::vector<std::string>> install_commands(const BootRequest& r, const LabEnvironment& env) {
  if (fs::exists(env.paths.boot / ("vmlinuz-" + r.kernel.release))) return {};
  return {{"apt-get", "install", "-y", "--no-install-recommends", r.kernel.package + "=" + r.kernel.version}};
}

json state_json(const BootRequest& r, const std::string& backend, const LabEnvironment& env) {
  return {{"schema", "schedlab.boot-state/1"},
          {"backend", backend},
          {"recipe", {{"name", r.recipe.name}, {"label", r.recipe.label}}},
          {"kernel",
           {{"package", r.kernel.package}, {"version", r.kernel.version}, {"release", r.kernel.release}}},
          {"run_args", r.run_args},
          {"sched_features", r.recipe.sched_features},
          {"sched_tunables", r.recipe.sched_tunables},
          {"out_dir", fs::absolute(r.out_dir).string()},
          {"schedlab", r.schedlab_binary.string()},
          {"staged_at", now_utc()},
          {"boot_id_before", boot_id(env.paths)},
          {"release_before", trim(read_text(env.paths.proc / "sys/kernel/osrelease").value_or(""))}};
}

// Runs (or, for a dry run, lists) the commands after writing the state file.
BootResult stage(const BootRequest& r, const std::string& backend, const LabEnvironment& env,
                 const std::vector<std::vector<std::string>>& commands, std::ostream& log) {
  BootResult result;
  result.record = r.state_file;
  result.commands.push_back("# write " + r.state_file.string() +
                            " (read by `schedlab kernel resume` after the reboot)");
  for (const auto& c : commands) result.commands.push_back(command_line(c));
  if (r.dry_run) {
    result.status = "dry-run";
    return result;
  }
  if (::geteuid() != 0)
    throw InputError("kernel boot --backend " + backend + ": needs root (it reboots the machine)");
  fs::create_directories(r.state_file.parent_path());
  write_file_atomic(r.state_file, state_json(r, backend, env).dump(2) + "\n", /*replace=*/true);
  for (const auto& c : commands) {
    log << "+ " << command_line(c) << "\n" << std::flush;
    ProcessOptions inherit;
    inherit.merge_stderr = false;
    run_checked(c, inherit);
  }
  result.status = "staged";
  return result;
}

class KexecBackend : public BootBackend {
 public:
  explicit KexecBackend(LabEnvironment env) : env_(std::move(env)) {}
  std::string name() const override { return "kexec"; }
  BootResult boot(const BootRequest& r, std::ostream& log) override {
    auto commands = install_commands(r, env_);
    const auto running = trim(read_text(env_.paths.proc / "cmdline").value_or(""));
    const std::string boot = "/boot/";
    commands.push_back({"kexec", "-l", boot + "vmlinuz-" + r.kernel.release,
                        "--initrd=" + boot + "initrd.img-" + r.kernel.release,
                        "--append=" + kexec_cmdline(running, r.recipe, r.append)});
    commands.push_back({"sync"});
    // systemd shuts down cleanly before the jump; without it, kexec -e jumps at once.
    if (fs::exists(env_.run / "systemd/system"))
      commands.push_back({"systemctl", "kexec"});
    else
      commands.push_back({"kexec", "-e"});
    return stage(r, "kexec", env_, commands, log);
  }

 private:
  LabEnvironment env_;
};

class GrubBackend : public BootBackend {
 public:
  explicit GrubBackend(LabEnvironment env) : env_(std::move(env)) {}
  std::string name() const override { return "grub"; }
  BootResult boot(const BootRequest& r, std::ostream& log) override {
    auto commands = install_commands(r, env_);
    const auto cfg_path = env_.paths.boot / "grub/grub.cfg";
    auto cfg = read_text(cfg_path);
    std::optional<std::string> entry = cfg ? grub_entry_for(*cfg, r.kernel.release) : std::nullopt;
    std::string target = entry.value_or("");
    if (!entry) {
      // Before the install has run, the entry does not exist yet: a dry run shows its usual title path.
      if (!r.dry_run || commands.empty())
        throw Error(cfg ? cfg_path.string() + ": no menu entry loads vmlinuz-" + r.kernel.release
                        : cfg_path.string() + ": cannot read it (is this a grub machine?)");
      target = "Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux " + r.kernel.release;
    }
    auto defaults = read_text(env_.etc / "default/grub").value_or("");
    if (!std::regex_search(defaults, std::regex(R"((^|\n)\s*GRUB_DEFAULT=["']?saved)"))) {
      const std::string why =
          (env_.etc / "default/grub").string() +
          ": GRUB_DEFAULT is not `saved`, so grub-reboot cannot make a one-shot entry "
          "(set GRUB_DEFAULT=saved, run update-grub and grub-set-default with the known-good entry)";
      if (!r.dry_run) throw Error(why);
      log << "note: " << why << "\n";
    }
    if (!r.append.empty())
      log << "note: --append is not applied by the grub backend (it boots the entry's own command line)\n";
    commands.push_back({"grub-reboot", target});
    commands.push_back({"reboot"});
    return stage(r, "grub", env_, commands, log);
  }

 private:
  LabEnvironment env_;
};

// A variant recipe's scheduler features and tunables, written where the qemu guest's init writes
// them, before the suite runs. Returns what was refused ("" when all were taken).
std::string apply_sched_settings(const json& state, const LabEnvironment& env) {
  const fs::path dir = env.paths.sys / "kernel/debug/sched";
  std::string error;
  const auto features = state.find("sched_features");
  if (features != state.end() && features->is_array())
    for (const auto& f : *features)
      if (!fs::exists(dir / "features") || !write_kernel_file(dir / "features", f.get<std::string>(), error))
        return "sched feature " + f.get<std::string>() + ": not accepted by " + (dir / "features").string() +
               (error.empty() ? " (is debugfs mounted?)" : " (" + error + ")");
  const auto tunables = state.find("sched_tunables");
  if (tunables != state.end() && tunables->is_object())
    for (const auto& [name, value] : tunables->items())
      if (!fs::exists(dir / name) || !write_kernel_file(dir / name, value.get<std::string>(), error))
        return "sched tunable " + name + "=" + value.get<std::string>() + ": cannot write " +
               (dir / name).string() + (error.empty() ? "" : " (" + error + ")");
  return "";
}

}  // namespace

std::string kexec_cmdline(const std::string& running, const Recipe& recipe, const std::string& append) {
  std::string out;
  for (const auto& w : split_ws(running)) {
    if (w == "--") break;
    if (w.rfind("BOOT_IMAGE=", 0) == 0 || w.rfind("initrd=", 0) == 0 || w.rfind("schedlab.", 0) == 0)
      continue;
    out += (out.empty() ? "" : " ") + w;
  }
  for (const auto& part : {recipe.cmdline, identity_args(recipe), append})
    if (!part.empty()) out += (out.empty() ? "" : " ") + part;
  return out;
}

std::optional<std::string> grub_entry_for(const std::string& cfg, const std::string& release) {
  // Debian's 10_linux writes: submenu 'Advanced options for X' $menuentry_id_option 'gnulinux-advanced-UUID'
  // {
  //   menuentry 'X, with Linux R' ... $menuentry_id_option 'gnulinux-R-advanced-UUID' { ... linux
  //   /boot/vmlinuz-R ...
  const std::regex open_re(R"(^\s*(submenu|menuentry)\s+'([^']*)'.*\$menuentry_id_option\s+'([^']*)')");
  std::istringstream in(cfg);
  std::string submenu, entry;
  int depth = 0, submenu_depth = -1, entry_depth = -1;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, open_re)) {
      if (m[1] == "submenu") {
        submenu = m[3];
        submenu_depth = depth;
      } else {
        entry = m[3];
        entry_depth = depth;
      }
    }
    const auto words = split_ws(line);
    if (entry_depth >= 0 && words.size() >= 2 && words[0] == "linux" &&
        fs::path(words[1]).filename() == "vmlinuz-" + release && entry.find("recovery") == std::string::npos)
      return (submenu_depth >= 0 ? submenu + ">" : "") + entry;
    for (char c : line) {
      if (c == '{') ++depth;
      if (c == '}') {
        --depth;
        if (depth == entry_depth) entry_depth = -1;
        if (depth == submenu_depth) submenu_depth = -1;
      }
    }
  }
  return std::nullopt;
}

ResumeOutcome resume_boot(const fs::path& state_file, const LabEnvironment& env,
                          const std::function<int(const std::vector<std::string>&)>& run_suite) {
  auto text = read_text(state_file);
  if (!text) throw InputError(state_file.string() + ": no boot state (nothing was staged)");
  json state;
  try {
    state = json::parse(*text);
  } catch (const json::exception& e) {
    throw InputError(state_file.string() + ": not valid JSON: " + e.what());
  }
  if (state.value("schema", "") != "schedlab.boot-state/1")
    throw InputError(state_file.string() + ": schema is not schedlab.boot-state/1");
  const auto this_boot = boot_id(env.paths);
  if (!this_boot.empty() && this_boot == state.value("boot_id_before", ""))
    throw InputError(state_file.string() + ": staged in this boot (boot_id " + this_boot + "); reboot first");
  const auto expected = state["kernel"].value("release", "");
  const auto running = trim(read_text(env.paths.proc / "sys/kernel/osrelease").value_or(""));
  const fs::path out_dir = state.value("out_dir", "results");
  ResumeOutcome o;
  if (running != expected) {
    o.status = "boot-failed";
    o.reason = "running " + running + ", expected " + expected + ": the kernel did not come up (" +
               state.value("backend", "?") + " fell back to the default entry)";
  } else if (auto refused = apply_sched_settings(state, env); !refused.empty()) {
    o.status = "failed";
    o.reason = refused;
  } else {
    std::vector<std::string> argv{state.value("schedlab", "schedlab")};
    for (const auto& a : state["run_args"]) argv.push_back(a.get<std::string>());
    if (!argv.empty() && argv.size() > 1 && argv[1] == "run")
      argv.insert(argv.end(), {"--out", out_dir.string()});
    int rc = run_suite(argv);
    o.status = rc == 0 ? "ok" : "failed";
    if (rc != 0) o.reason = "schedlab run exited with status " + std::to_string(rc);
  }
  fs::create_directories(out_dir);
  // One record per staging: its time and the boot that ran it name the file.
  std::string staged = state.value("staged_at", "");
  const json& staged_state = state;  // reads only: operator[] on a const json inserts no nulls
  json rec = {{"schema", "schedlab.boot/1"},
              {"backend", state.value("backend", "")},
              {"status", o.status},
              {"reason", o.reason.empty() ? json(nullptr) : json(o.reason)},
              {"recipe", staged_state.value("recipe", json())},
              {"kernel", staged_state.value("kernel", json())},
              {"running_release", running},
              {"staged_at", staged},
              {"resumed_at", now_utc()},
              {"run_args", staged_state.value("run_args", json())}};
  staged.erase(std::remove_if(staged.begin(), staged.end(), [](char c) { return c == ':' || c == '-'; }),
               staged.end());
  o.record = out_dir / ("boot-" + state["recipe"].value("name", "unknown") + "-" + staged + "-" +
                        this_boot.substr(0, 8) + ".json");
  write_file_atomic(o.record, rec.dump(2) + "\n");
  fs::remove(state_file);
  return o;
}

std::unique_ptr<BootBackend> make_kexec_backend(const LabEnvironment& env) {
  return std::make_unique<KexecBackend>(env);
}
std::unique_ptr<BootBackend> make_grub_backend(const LabEnvironment& env) {
  return std::make_unique<GrubBackend>(env);
}

}  // namespace schedlab::kernels
