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

fs::path grubenv_path(const LabEnvironment& env) {
  return env.paths.boot / "grub/grubenv";
}
fs::path custom_cfg_path(const LabEnvironment& env) {
  return env.paths.boot / "grub/custom.cfg";
}

// The first line of the custom.cfg the grub backend writes: a custom.cfg without it is the admin's.
constexpr const char* kCustomCfgMarker = "# Written by `schedlab kernel boot --backend grub`";
constexpr const char* kOneShotId = "schedlab-once";

void run_tool(const std::vector<std::string>& c, std::ostream& log) {
  log << "+ " << command_line(c) << "\n" << std::flush;
  ProcessOptions inherit;
  inherit.merge_stderr = false;
  run_checked(c, inherit);
}

json default_boot_json(const DefaultBoot& d) {
  return {{"grub_default", d.grub_default},
          {"saved_entry", d.saved_entry},
          {"entry", d.entry},
          {"release", d.release}};
}

// After an install (or a failed staging): the box boots by default what it booted before, or this
// throws. Under GRUB_DEFAULT=saved a changed default is put back with grub-editenv; a positional
// GRUB_DEFAULT (0, the newest kernel first) cannot be put back without editing the configuration.
void keep_default_boot(const DefaultBoot& before, const LabEnvironment& env, std::ostream& log) {
  if (!before.grub) return;
  auto now = default_boot(env);
  // saved_entry matters only where GRUB_DEFAULT=saved reads it.
  if (now.release == before.release &&
      (before.grub_default != "saved" || now.saved_entry == before.saved_entry))
    return;
  if (before.grub_default != "saved")
    throw Error("the box's default boot changed from " + before.describe() + " to " + now.describe() +
                ": GRUB_DEFAULT=" + before.grub_default +
                " names its entry by position, so it cannot be put back without editing the grub "
                "configuration (set GRUB_DEFAULT=saved, run update-grub and grub-set-default the "
                "known-good entry)");
  // The saved entry as found; else the entry that kernel has now (the install may have moved it, or
  // given the entry it was found in, such as entry 0, another kernel).
  const auto release_entry =
      grub_entry_for(read_text(env.paths.boot / "grub/grub.cfg").value_or(""), before.release);
  for (const auto& value : {before.saved_entry, release_entry.value_or("")}) {
    if (value.empty()) continue;
    run_tool({"grub-editenv", grubenv_path(env).string(), "set", "saved_entry=" + value}, log);
    now = default_boot(env);
    if (now.release == before.release) {
      log << "restored the default boot: " << now.describe() << "\n";
      return;
    }
  }
  throw Error("the box's default boot is " + now.describe() + ", not " + before.describe() +
              " as found, and grub-editenv could not put it back");
}

// keep_default_boot for an undo: what it found, never an exception (the staging's own error comes first).
std::string put_back_default_boot(const DefaultBoot& before, const LabEnvironment& env, std::ostream& log) {
  try {
    keep_default_boot(before, env, log);
    return "the default boot is " + before.describe();
  } catch (const std::exception& e) {
    return std::string("the default boot is not as found: ") + e.what();
  }
}

json state_json(const BootRequest& r, const std::string& backend, const LabEnvironment& env,
                const DefaultBoot& before) {
  json s = {{"schema", "schedlab.boot-state/1"},
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
            {"release_before", trim(read_text(env.paths.proc / "sys/kernel/osrelease").value_or(""))},
            // What resume looks for on /proc/cmdline: the boot that was staged, not a fallback.
            {"expected_cmdline", lab_boot_args(r.recipe, r.append)}};
  if (before.grub) s["default_boot_before"] = default_boot_json(before);
  if (backend == "grub") s["grub_custom_cfg"] = custom_cfg_path(env).string();
  return s;
}

// One thing a staging does: how a dry run shows it, and the doing.
struct Step {
  std::string shown;
  std::function<void()> run;
};

Step command_step(const std::vector<std::string>& c, std::ostream& log, bool* started = nullptr) {
  return {command_line(c), [c, &log, started] {
            if (started) *started = true;
            run_tool(c, log);
          }};
}

// Runs (or, for a dry run, lists) the steps after writing the state file. When a step fails, `undo`
// takes back what the earlier ones left (it returns what it did) and the state file goes: no reboot
// comes, and nothing may resume a boot that never happened.
BootResult stage(const BootRequest& r, const std::string& backend, const LabEnvironment& env,
                 const DefaultBoot& before, const std::vector<Step>& steps,
                 const std::function<std::string()>& undo) {
  BootResult result;
  result.record = r.state_file;
  result.commands.push_back("# write " + r.state_file.string() +
                            " (read by `schedlab kernel resume` after the reboot)");
  for (const auto& s : steps) result.commands.push_back(s.shown);
  if (r.dry_run) {
    result.status = "dry-run";
    return result;
  }
  if (::geteuid() != 0)
    throw InputError("kernel boot --backend " + backend + ": needs root (it reboots the machine)");
  fs::create_directories(r.state_file.parent_path());
  write_file_atomic(r.state_file, state_json(r, backend, env, before).dump(2) + "\n", /*replace=*/true);
  try {
    for (const auto& s : steps) s.run();
  } catch (const std::exception& e) {
    std::string undone;
    try {
      undone = undo();
    } catch (const std::exception& u) {
      undone = std::string("undoing it failed: ") + u.what();
    }
    std::error_code ec;
    fs::remove(r.state_file, ec);
    throw Error("kernel boot --backend " + backend + " " + r.recipe.name + ": staging failed: " + e.what() +
                "\n  removed " + r.state_file.string() + (undone.empty() ? "" : "; " + undone));
  }
  result.status = "staged";
  return result;
}

std::string default_boot_step(const DefaultBoot& before) {
  return "# check the default boot is still " + before.describe() +
         " (put back with grub-editenv set saved_entry=... when the install changed it)";
}

class KexecBackend : public BootBackend {
 public:
  explicit KexecBackend(LabEnvironment env) : env_(std::move(env)) {}
  std::string name() const override { return "kexec"; }
  BootResult boot(const BootRequest& r, std::ostream& log) override {
    const DefaultBoot before = default_boot(env_);
    const auto install = install_commands(r, env_);
    const auto running = trim(read_text(env_.paths.proc / "cmdline").value_or(""));
    const std::string boot = "/boot/";
    bool install_started = false, load_started = false;
    std::vector<Step> steps;
    for (const auto& c : install) steps.push_back(command_step(c, log, &install_started));
    // apt-get's update-grub puts the newest kernel first: under GRUB_DEFAULT=0 that is the new default.
    if (!install.empty() && before.grub)
      steps.push_back({default_boot_step(before), [&] { keep_default_boot(before, env_, log); }});
    steps.push_back(command_step({"kexec", "-l", boot + "vmlinuz-" + r.kernel.release,
                                  "--initrd=" + boot + "initrd.img-" + r.kernel.release,
                                  "--append=" + kexec_cmdline(running, r.recipe, r.append)},
                                 log, &load_started));
    steps.push_back(command_step({"sync"}, log));
    // systemd shuts down cleanly before the jump; without it, kexec -e jumps at once.
    if (fs::exists(env_.run / "systemd/system"))
      steps.push_back(command_step({"systemctl", "kexec"}, log));
    else
      steps.push_back(command_step({"kexec", "-e"}, log));
    return stage(r, "kexec", env_, before, steps, [&] {
      std::string done;
      if (load_started) {
        const auto u = run_process({"kexec", "-u"});
        done += u.exit_code == 0 ? "unloaded the kernel (kexec -u)"
                                 : "kexec -u failed (exit " + std::to_string(u.exit_code) +
                                       "): the staged kernel may still be loaded";
      }
      if (install_started && before.grub)
        done += (done.empty() ? "" : "; ") + put_back_default_boot(before, env_, log);
      return done;
    });
  }

 private:
  LabEnvironment env_;
};

// A word of a grub linux line: grub's script splits on blanks and expands $ and quotes.
std::string grub_word(const std::string& w) {
  if (!w.empty() &&
      w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._,=:/+-") ==
          std::string::npos)
    return w;
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// grub-reboot boots an entry's own command line, so the recipe's arguments and its identity marker go
// into a one-shot copy of the release's entry in /boot/grub/custom.cfg, which Debian's grub.cfg
// sources at boot time (/etc/grub.d/41_custom): no update-grub, and a fallback to the default entry
// boots without the marker, which is what resume checks.
std::string custom_cfg_text(const GrubEntry& entry, const Recipe& recipe, const std::string& append) {
  std::string args;
  for (const auto& w : split_ws(lab_boot_args(recipe, append))) args += " " + grub_word(w);
  std::string body, title = "schedlab " + recipe.name + " (Linux " + entry.release + ")";
  std::replace(title.begin(), title.end(), '\'', '_');
  std::istringstream in(entry.body);
  for (std::string line; std::getline(in, line);) {
    const auto words = split_ws(line);
    // GRUB_SAVEDEFAULT's savedefault would make the one-shot entry the saved default.
    if (!words.empty() && words[0] == "savedefault") continue;
    body += line + (!words.empty() && (words[0] == "linux" || words[0] == "linuxefi") ? args : "") + "\n";
  }
  return std::string(kCustomCfgMarker) + " for one boot (grub-reboot " + kOneShotId +
         "); `schedlab kernel resume` removes it.\nmenuentry '" + title + "' --id " + kOneShotId + " {\n" +
         body + "}\n";
}

bool ours(const fs::path& custom_cfg) {
  return read_text(custom_cfg).value_or("").rfind(kCustomCfgMarker, 0) == 0;
}

class GrubBackend : public BootBackend {
 public:
  explicit GrubBackend(LabEnvironment env) : env_(std::move(env)) {}
  std::string name() const override { return "grub"; }
  BootResult boot(const BootRequest& r, std::ostream& log) override {
    const DefaultBoot before = default_boot(env_);
    const auto install = install_commands(r, env_);
    const auto cfg_path = env_.paths.boot / "grub/grub.cfg";
    auto cfg = read_text(cfg_path);
    std::optional<std::string> entry = cfg ? grub_entry_for(*cfg, r.kernel.release) : std::nullopt;
    if (!entry) {
      // Before the install has run, the entry does not exist yet: it is looked up again after it.
      if (install.empty())
        throw Error(cfg ? cfg_path.string() + ": no menu entry loads vmlinuz-" + r.kernel.release
                        : cfg_path.string() + ": cannot read it (is this a grub machine?)");
    }
    auto refuse = [&](const std::string& why) {
      if (!r.dry_run) throw Error(why);
      log << "note: " << why << "\n";
    };
    if (before.grub_default != "saved")
      refuse((env_.etc / "default/grub").string() + " (with default/grub.d/*.cfg): GRUB_DEFAULT is " +
             before.grub_default +
             ", not `saved`, so the one-shot boot does not leave a known-good default "
             "(set GRUB_DEFAULT=saved, run update-grub and grub-set-default with the known-good entry)");
    if (cfg && cfg->find("custom.cfg") == std::string::npos)
      refuse(cfg_path.string() +
             ": does not source custom.cfg (Debian's /etc/grub.d/41_custom), where the grub backend "
             "puts its one-shot entry carrying the recipe's kernel arguments; restore 41_custom and run "
             "update-grub");
    const auto custom = custom_cfg_path(env_);
    if (fs::exists(custom) && !ours(custom))
      refuse(custom.string() +
             ": the box's own custom.cfg; the grub backend writes its one-shot entry "
             "there and will not replace it");
    bool install_started = false, custom_written = false, reboot_set = false;
    std::vector<Step> steps;
    for (const auto& c : install) steps.push_back(command_step(c, log, &install_started));
    if (!install.empty() && before.grub)
      steps.push_back({default_boot_step(before), [&] { keep_default_boot(before, env_, log); }});
    steps.push_back({"# write " + custom.string() + ": menuentry --id " + kOneShotId + ", a copy of " +
                         entry.value_or("the entry loading vmlinuz-" + r.kernel.release) + " with `" +
                         lab_boot_args(r.recipe, r.append) + "` on its linux line",
                     [&] {
                       const auto now = read_text(cfg_path).value_or("");
                       for (const auto& e : grub_entries(now))
                         if (e.release == r.kernel.release && !e.recovery) {
                           custom_written = true;
                           write_file_atomic(custom, custom_cfg_text(e, r.recipe, r.append), true);
                           return;
                         }
                       throw Error(cfg_path.string() + ": no menu entry loads vmlinuz-" + r.kernel.release);
                     }});
    steps.push_back(command_step({"grub-reboot", kOneShotId}, log, &reboot_set));
    steps.push_back(command_step({"reboot"}, log));
    return stage(r, "grub", env_, before, steps, [&] {
      std::string done;
      auto add = [&](const std::string& s) { done += (done.empty() ? "" : "; ") + s; };
      if (reboot_set) {
        // A reboot for any other reason must not boot the kernel under test.
        const auto u = run_process({"grub-editenv", grubenv_path(env_).string(), "unset", "next_entry"});
        add(u.exit_code == 0 ? "cleared next_entry (grub-editenv unset next_entry)"
                             : "grub-editenv unset next_entry failed (exit " + std::to_string(u.exit_code) +
                                   "): the next reboot may boot " + kOneShotId);
      }
      if (custom_written && ours(custom)) {
        fs::remove(custom);
        add("removed " + custom.string());
      }
      if (install_started && before.grub) add(put_back_default_boot(before, env_, log));
      return done;
    });
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

std::string lab_boot_args(const Recipe& recipe, const std::string& append) {
  std::string out;
  for (const auto& part : {identity_args(recipe), recipe.cmdline, append})
    if (!part.empty()) out += (out.empty() ? "" : " ") + part;
  return out;
}

std::string kexec_cmdline(const std::string& running, const Recipe& recipe, const std::string& append) {
  std::string out;
  for (const auto& w : split_ws(running)) {
    // An earlier lab boot's additions start at its marker: its recipe's arguments (preempt=full, say)
    // and --append belong to that boot, not to this one.
    if (w == "--" || w.rfind("schedlab.recipe=", 0) == 0) break;
    if (w.rfind("BOOT_IMAGE=", 0) == 0 || w.rfind("initrd=", 0) == 0 || w.rfind("schedlab.", 0) == 0)
      continue;
    out += (out.empty() ? "" : " ") + w;
  }
  const auto added = lab_boot_args(recipe, append);
  return out + (out.empty() || added.empty() ? "" : " ") + added;
}

std::vector<GrubEntry> grub_entries(const std::string& cfg) {
  // Debian's 10_linux writes: submenu 'Advanced options for X' $menuentry_id_option 'gnulinux-advanced-UUID'
  // {
  //   menuentry 'X, with Linux R' ... $menuentry_id_option 'gnulinux-R-advanced-UUID' { ... linux
  //   /boot/vmlinuz-R ...
  const std::regex open_re(R"(^\s*(submenu|menuentry)\s+'([^']*)'(.*))");
  const std::regex id_re(R"((\$menuentry_id_option|--id)\s+'?([^'\s]+)'?)");
  struct Open {
    bool submenu;
    int depth;  // the depth outside its braces
    std::string index, id, title;
  };
  std::vector<GrubEntry> out;
  std::vector<Open> open;
  std::vector<int> counters{0};  // the next index at each menu level
  std::string body;
  std::istringstream in(cfg);
  int depth = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    bool opened = false;
    if (std::regex_search(line, m, open_re)) {
      std::smatch idm;
      const std::string rest = m[3];
      const std::string id = std::regex_search(rest, idm, id_re) ? std::string(idm[2]) : std::string(m[2]);
      const std::size_t level = open.size();
      if (counters.size() <= level) counters.resize(level + 1, 0);
      open.push_back({m[1] == "submenu", depth, std::to_string(counters[level]++), id, m[2]});
      if (open.back().submenu) counters.resize(level + 2), counters[level + 1] = 0;
      if (!open.back().submenu) body.clear();
      opened = true;
    }
    if (!opened && !open.empty() && !open.back().submenu) {
      // Its lines, without the closing brace.
      const auto close = line.find_first_not_of(" \t");
      if (close == std::string::npos || line[close] != '}') body += line + "\n";
    }
    for (char c : line) {
      if (c == '{') ++depth;
      if (c == '}' && --depth >= 0 && !open.empty() && depth == open.back().depth) {
        if (!open.back().submenu) {
          GrubEntry e;
          for (const auto& o : open) {
            e.indexes.push_back(o.index);
            e.ids.push_back(o.id);
            e.titles.push_back(o.title);
            e.id_path += (e.id_path.empty() ? "" : ">") + o.id;
          }
          e.body = body;
          e.recovery = open.back().id.find("recovery") != std::string::npos ||
                       open.back().title.find("recovery") != std::string::npos;
          std::istringstream b(body);
          for (std::string l; std::getline(b, l);) {
            const auto words = split_ws(l);
            if (words.size() >= 2 && (words[0] == "linux" || words[0] == "linuxefi")) {
              const auto file = fs::path(words[1]).filename().string();
              if (file.rfind("vmlinuz-", 0) == 0) e.release = file.substr(8);
              break;
            }
          }
          out.push_back(std::move(e));
        }
        open.pop_back();
      }
    }
  }
  return out;
}

std::optional<std::string> grub_entry_for(const std::string& cfg, const std::string& release) {
  for (const auto& e : grub_entries(cfg))
    if (e.release == release && !e.recovery) return e.id_path;
  return std::nullopt;
}

std::string DefaultBoot::describe() const {
  return (entry.empty() ? std::string("no entry") : "vmlinuz-" + release + " (" + entry + ")") +
         " by GRUB_DEFAULT=" + grub_default +
         (grub_default == "saved" ? " saved_entry=" + (saved_entry.empty() ? "(unset)" : saved_entry) : "");
}

DefaultBoot default_boot(const LabEnvironment& env) {
  DefaultBoot d;
  const auto cfg = read_text(env.paths.boot / "grub/grub.cfg");
  if (!cfg) return d;
  d.grub = true;
  // grub-mkconfig sources /etc/default/grub, then each /etc/default/grub.d/*.cfg in name order.
  std::vector<fs::path> files{env.etc / "default/grub"};
  std::vector<fs::path> dropins;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(env.etc / "default/grub.d", ec))
    if (f.path().extension() == ".cfg") dropins.push_back(f.path());
  std::sort(dropins.begin(), dropins.end());
  files.insert(files.end(), dropins.begin(), dropins.end());
  d.grub_default = "0";
  const std::regex assign(R"(^\s*(export\s+)?GRUB_DEFAULT=(.*)$)");
  for (const auto& f : files) {
    std::istringstream in(read_text(f).value_or(""));
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_match(line, m, assign)) continue;
      std::string v = trim(m[2]);
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
        v = v.substr(1, v.size() - 2);
      d.grub_default = v;
    }
  }
  std::istringstream env_block(read_text(grubenv_path(env)).value_or(""));
  for (std::string line; std::getline(env_block, line);)
    if (line.rfind("saved_entry=", 0) == 0) d.saved_entry = line.substr(12);
  const std::string target =
      d.grub_default == "saved" ? (d.saved_entry.empty() ? "0" : d.saved_entry) : d.grub_default;
  std::vector<std::string> parts;
  std::istringstream t(target);
  for (std::string p; std::getline(t, p, '>');) parts.push_back(p);
  for (const auto& e : grub_entries(*cfg)) {
    if (e.ids.size() != parts.size()) continue;
    bool match = true;
    for (std::size_t i = 0; i < parts.size() && match; ++i)
      match = parts[i] == e.indexes[i] || parts[i] == e.ids[i] || parts[i] == e.titles[i];
    if (match) {
      d.entry = e.id_path;
      d.release = e.release;
      break;
    }
  }
  return d;
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
  const std::string backend = state.value("backend", "?");
  // The grub backend's one-shot entry has served (or the boot fell back): it goes first.
  if (const auto custom = state.value("grub_custom_cfg", ""); !custom.empty() && ours(custom)) {
    std::error_code ec;
    fs::remove(custom, ec);
  }
  // The default boot as the staging found it (a boot may change it: GRUB_SAVEDEFAULT, say).
  std::string default_note;
  if (const auto d = state.find("default_boot_before"); d != state.end() && d->is_object()) {
    DefaultBoot before;
    before.grub = true;
    before.grub_default = d->value("grub_default", "");
    before.saved_entry = d->value("saved_entry", "");
    before.entry = d->value("entry", "");
    before.release = d->value("release", "");
    std::ostringstream quiet;
    default_note = put_back_default_boot(before, env, quiet);
  }
  ResumeOutcome o;
  const json* started = state.contains("resume_started") ? &state["resume_started"] : nullptr;
  std::vector<std::string> missing;
  if (!started && running == expected) {
    // A state from before expected_cmdline was recorded checks the release only.
    std::vector<std::string> have = split_ws(read_text(env.paths.proc / "cmdline").value_or(""));
    for (const auto& w : split_ws(state.value("expected_cmdline", "")))
      if (std::find(have.begin(), have.end(), w) == have.end()) missing.push_back(w);
  }
  auto joined = [](const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
  };
  if (started) {
    const auto in_boot = started->value("boot_id", "");
    if (in_boot == this_boot)
      throw InputError(state_file.string() + ": its resume began in this boot (at " +
                       started->value("at", "?") +
                       ") and has not ended: it is still running or was cut short (remove the file to "
                       "give it up)");
    o.status = "failed";
    o.reason = "crashed during the suite: the resume began at " + started->value("at", "?") + " in boot " +
               in_boot + " running " + started->value("release", "?") +
               ", and the machine went down before it ended (now boot " + this_boot + ", running " + running +
               ")";
  } else if (running != expected) {
    o.status = "boot-failed";
    o.reason = "running " + running + ", expected " + expected + ": the kernel did not come up (" + backend +
               " fell back to the default entry)";
  } else if (!missing.empty()) {
    o.status = "boot-failed";
    o.reason = "running " + running + " as expected, but /proc/cmdline lacks `" + joined(missing) +
               "`: not the boot that was staged (" + backend +
               (backend == "kexec" ? " fell back to a reboot" : " fell back to the default entry") +
               " of the same release)";
  } else {
    // Marked before anything runs in the kernel under test: when the machine goes down from here on,
    // the next resume records a crash during the suite instead of a kernel that did not come up.
    json marked = state;
    marked["resume_started"] = {{"boot_id", this_boot}, {"at", now_utc()}, {"release", running}};
    write_file_atomic(state_file, marked.dump(2) + "\n", /*replace=*/true);
    if (auto refused = apply_sched_settings(state, env); !refused.empty()) {
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
  }
  if (default_note.find("not as found") != std::string::npos)
    o.reason += (o.reason.empty() ? "" : "; ") + default_note;
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
              {"run_args", staged_state.value("run_args", json())},
              {"default_boot", default_note.empty() ? json(nullptr) : json(default_note)}};
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
