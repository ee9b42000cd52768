// The qemu backend: boots a recipe's kernel as an SMP guest with a busybox initramfs, runs the suite
// on the host's userland (9p root, or an ext4 image), and collects the bundles from a 9p share.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <ostream>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "kernels/boot_backend.hpp"
#include "kernels/bundle_identity.hpp"
#include "kernels/console.hpp"
#include "kernels/guest_init.hpp"
#include "kernels/initramfs.hpp"
#include "kernels/process.hpp"
#include "kernels/root_image.hpp"

namespace schedlab::kernels {
namespace {

// Where a user's kernel came from ({"source": "git", "commit": ...}), or null for the suite's own.
nlohmann::json identity_json(const KernelArtifacts& k) {
  if (k.identity.empty()) return nullptr;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : k.identity) out[name] = value;
  return out;
}

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::size_t kConsoleTailLines = 25;

std::vector<std::string> module_roots(const BootRequest& r) {
  std::vector<std::string> roots{"virtio_pci", "9pnet_virtio", "9p"};
  if (r.root == RootMode::kImage)
    roots.insert(roots.end(), {"virtio_blk", "crc32c_generic", "ext4", "overlay"});
  roots.insert(roots.end(), r.recipe.extra_modules.begin(), r.recipe.extra_modules.end());
  return roots;
}

std::string utc_stamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// The guest writes into a folder of its own (the 9p output share), so a boot claims exactly the files
// its guest wrote, never another boot's. Afterwards its finished files move up into --out (temporary
// ".name.XXXXXX" files of a copy a crash cut short are dropped); a name --out already has stays.
std::vector<fs::path> move_guest_files(const fs::path& share, const fs::path& out, std::ostream& log) {
  std::vector<fs::path> bundles;
  std::vector<fs::path> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(share, ec))
    if (e.is_regular_file() || e.is_directory()) names.push_back(e.path());
  std::sort(names.begin(), names.end());
  bool kept = false;
  for (const auto& f : names) {
    const auto name = f.filename().string();
    if (name.front() == '.') {
      fs::remove(f, ec);
      continue;
    }
    const fs::path target = out / name;
    if (fs::exists(target)) {
      log << "warning: " << target.string() << " exists already; the guest's " << name << " stays in "
          << share.string() << "\n";
      kept = true;
      continue;
    }
    fs::rename(f, target);
    if (fs::is_directory(target)) {
      // An experiment's or rounds' folder (OUT/<id>/<side>/...): moved whole, its trial bundles counted.
      for (fs::recursive_directory_iterator it(target, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file() && it->path().extension() == ".json" &&
            it->path().filename().string().find("-trial") != std::string::npos)
          bundles.push_back(it->path());
    } else if (target.extension() == ".json") {
      bundles.push_back(target);
    }
  }
  if (!kept) fs::remove(share, ec);
  return bundles;
}

// A value inside a qemu option list ("path=...,mount_tag=..."): qemu reads ",," as a literal comma,
// so a path or a recipe name with a comma stays one value instead of ending the option early.
std::string qemu_opt_value(const std::string& value) {
  std::string out;
  for (char c : value) out += c == ',' ? std::string(",,") : std::string(1, c);
  return out;
}

// The boot's own staging folder: its initramfs (and the --then kernel's) are read by qemu and, for
// --then, by the guest minutes later, so no other boot (another recipe of the same release, or the
// same recipe twice at once) may write there. Removed when the boot ends, however it ends.
class BootFolder {
 public:
  BootFolder(const fs::path& parent, const std::string& name) {
    fs::create_directories(parent);
    for (int n = 1;; ++n) {
      path_ = parent / (n == 1 ? name : fmt::format("{}-{}", name, n));
      if (fs::create_directory(path_)) break;
    }
  }
  ~BootFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  BootFolder(const BootFolder&) = delete;
  BootFolder& operator=(const BootFolder&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Parses "KEY=VALUE" words of a marker line such as "SCHEDLAB-DONE rc=0 files=1 uptime 9.1".
std::optional<int> marker_int(const std::string& line, const std::string& key) {
  for (const auto& w : split_ws(line))
    if (w.rfind(key + "=", 0) == 0) {
      try {
        return std::stoi(w.substr(key.size() + 1));
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  return std::nullopt;
}

class QemuBackend : public BootBackend {
 public:
  std::string name() const override { return "qemu"; }

  BootResult boot(const BootRequest& r, std::ostream& log) override {
    validate(r);
    const std::string stamp = utc_stamp();
    const std::string boot_name = fmt::format("{}-{}-{}", r.recipe.name, stamp, ::getpid());
    std::optional<BootFolder> folder;
    if (!r.dry_run) folder.emplace(r.work_dir / "boot", boot_name);
    const fs::path work = folder ? folder->path() : r.work_dir / "boot" / boot_name;
    const fs::path initrd = work / "initramfs.cpio";
    std::optional<fs::path> image;
    if (r.root == RootMode::kImage) image = root_image_path(r.work_dir);
    const fs::path share =
        fs::absolute(r.out_dir) / fmt::format(".guest-{}-{}-{}", r.recipe.name, stamp, ::getpid());
    auto argv = qemu_command(r, initrd, image, share);

    BootResult result;
    if (r.dry_run) {
      result.status = "dry-run";
      result.commands.push_back("# initramfs: busybox, /init, modules " + join(module_roots(r)) +
                                " (+ dependencies) from " + r.kernel.modules.string() + " -> " +
                                initrd.string());
      const auto run = guest_run_script(r);  // refuses run arguments that cannot work in the guest
      result.commands.push_back("# the guest runs: " + last_lines(run, 1));
      if (image)
        result.commands.push_back("# root image: " + image->string() + " (built once from /usr and /etc)");
      result.commands.push_back(command_line(argv));
      return result;
    }

    fs::create_directories(share);
    if (image) ensure_root_image(*image, log);
    std::string next_script;
    if (r.then_recipe) {
      const BootRequest next = next_request(r);
      const fs::path next_work = work / "then";
      build_guest_initramfs(next, next_work / "initramfs.cpio", next_work, "", log);
      next_script = guest_kexec_script(next, next_work / "initramfs.cpio", guest_append(next));
    }
    auto modules = build_guest_initramfs(r, initrd, work, next_script, log);

    log << r.recipe.name << ": booting (timeout " << r.timeout.count() << " s): " << command_line(argv)
        << "\n"
        << std::flush;
    result.commands.push_back(command_line(argv));

    std::optional<std::string> failure;
    ConsoleWatcher watcher;
    bool started = false, done = false, killed_after_done = false;
    double done_at = 0;
    const int runs = r.then_recipe ? 2 : 1;
    ProcessOptions opts;
    opts.timeout = r.timeout;
    opts.on_line = [&](const std::string& line, double t) {
      // The first line carries the serial console's terminal resets before the marker.
      if (line.find(kMarkInit) != std::string::npos && !result.init_s) result.init_s = t;
      if (line.rfind(kMarkStart, 0) == 0) {
        started = true;
        if (!result.suite_start_s) result.suite_start_s = t;
      } else if (started && !done && !result.first_output_s && line.rfind("SCHEDLAB-", 0) != 0) {
        result.first_output_s = t;
      }
      if (line.rfind(kMarkDone, 0) == 0) {
        auto rc = marker_int(line, "rc");
        result.guest_rc = std::max(result.guest_rc.value_or(0), rc.value_or(-1) < 0 ? 255 : *rc);
        done = ++result.runs_done == runs;
        if (done) done_at = t;
      }
      if (line.rfind(kMarkKexec, 0) == 0) result.kexec_s = t;
      if (started || line.find("SCHEDLAB-") != std::string::npos)
        log << fmt::format("[{:7.2f}] {}\n", t, normalise_console(line)) << std::flush;
      if (done || !watcher.feed(line)) return true;
      failure = watcher.failure();
      return false;
    };
    opts.on_tick = [&](double t) {
      if (done) {  // the results are in: a guest that does not power off is not waited for
        if (t - done_at < static_cast<double>(r.poweroff_grace.count())) return true;
        killed_after_done = true;
        return false;
      }
      if (result.init_s || t < static_cast<double>(r.boot_timeout.count())) return true;
      failure = fmt::format("no {} within the {} s boot timeout (the kernel hung or did not start)",
                            kMarkInit, r.boot_timeout.count());
      return false;
    };
    auto proc = run_process(argv, opts);
    result.total_s = proc.seconds;

    const fs::path console = r.out_dir / ("console-" + r.recipe.name + "-" + stamp + ".log");
    const std::string console_text = normalise_console(proc.output);
    write_file_atomic(console, console_text, /*replace=*/true);
    result.console_tail = last_lines(console_text, kConsoleTailLines);
    result.bundles = move_guest_files(share, r.out_dir, log);

    if (failure) {
      result.status = "boot-failed";
      result.reason = *failure;
    } else if (proc.timed_out) {
      result.status = started ? "timeout" : "boot-failed";
      result.reason =
          fmt::format("no {} within the {} s timeout{}", started ? kMarkDone : kMarkStart, r.timeout.count(),
                      started ? " (the suite started but did not finish)" : "");
    } else if (!done) {
      result.status = started ? "failed" : "boot-failed";
      result.reason =
          fmt::format("qemu exited (status {}) before the guest reported {}", proc.exit_code, kMarkDone);
    } else if (result.bundles.size() < static_cast<std::size_t>(runs)) {
      result.status = "failed";
      result.reason = "the guest run ended (rc=" + std::to_string(result.guest_rc.value_or(-1)) + ") but " +
                      std::to_string(result.bundles.size()) + " of " + std::to_string(runs) +
                      " bundle(s) came back";
    } else if (result.guest_rc.value_or(1) != 0) {
      result.status = "failed";
      result.reason =
          "schedlab in the guest exited with status " + std::to_string(result.guest_rc.value_or(-1));
    } else if (!watcher.first_oops()) {
      result.status = "ok";
    }
    if (killed_after_done)
      result.note = fmt::format("the guest did not power off within {} s of its last {}; qemu was killed",
                                r.poweroff_grace.count(), kMarkDone);
    if (watcher.first_oops() && !failure) {  // a fatal Oops is in `failure` already
      if (result.status.empty()) {
        result.status = "failed";
        result.reason = "the guest kernel oopsed and carried on: \"" + *watcher.first_oops() +
                        "\" (the results come from a damaged kernel)";
      } else {
        result.reason += "; the guest kernel oopsed first: \"" + *watcher.first_oops() + "\"";
      }
    }
    // Results traced to their kernel: a bundle from another recipe, or another build of this one.
    std::vector<BootedKernel> booted{{r.recipe.name, r.kernel}};
    if (r.then_recipe) booted.push_back({r.then_recipe->name, r.then_kernel});
    if (auto why = bundles_identity_mismatch(result.bundles, booted); why && result.status == "ok") {
      result.status = "failed";
      result.reason = "a bundle does not come from the kernel booted: " + *why;
    }
    result.record = r.out_dir / ("boot-" + r.recipe.name + "-" + stamp + ".json");
    write_file_atomic(result.record, record(r, result, argv, console, modules).dump(2) + "\n");
    return result;
  }

 private:
  static std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
    return out;
  }

  static BootRequest next_request(const BootRequest& r) {
    BootRequest next = r;
    next.recipe = *r.then_recipe;
    next.kernel = r.then_kernel;
    next.then_recipe.reset();
    // The run arguments' --label names the first kernel's bundles; the next kernel's get their own.
    std::vector<std::string> args;
    for (std::size_t i = 0; i < next.run_args.size(); ++i) {
      const auto& a = next.run_args[i];
      if (a == "--label") {
        ++i;
        continue;
      }
      if (a.rfind("--label=", 0) == 0) continue;
      args.push_back(a);
    }
    const bool had_label = args.size() != next.run_args.size();
    next.run_args = args;
    if (!r.then_label.empty() || had_label)
      next.run_args.insert(next.run_args.end(),
                           {"--label", r.then_label.empty() ? next.recipe.label : r.then_label});
    return next;
  }

  static std::vector<std::string> build_guest_initramfs(const BootRequest& r, const fs::path& initrd,
                                                        const fs::path& work, const std::string& next_script,
                                                        std::ostream& log) {
    fs::create_directories(work);
    InitramfsSpec spec;
    spec.modules_dir = r.kernel.modules;
    spec.module_roots = module_roots(r);
    spec.files["/init"] = guest_init_script();
    spec.files["/etc/schedlab/boot.conf"] = guest_boot_conf(r);
    spec.files["/etc/schedlab/run.sh"] = guest_run_script(r);
    spec.files["/etc/schedlab/sched"] = guest_sched_settings(r.recipe);
    if (!next_script.empty()) spec.files["/etc/schedlab/next.sh"] = next_script;
    spec.copies["/boot/config-" + r.kernel.release] = r.kernel.config;
    auto modules = build_initramfs(spec, initrd, work);
    log << r.recipe.name << ": initramfs " << initrd.string() << " (" << fs::file_size(initrd) / 1024
        << " KiB; modules: " << (modules.empty() ? "none" : join(modules)) << ")\n";
    return modules;
  }

  // The kernel command line: serial console, panic ends qemu (-no-reboot), the recipe's own
  // arguments, its identity and the accelerator (recorded in the bundle), then --append.
  static std::string guest_append(const BootRequest& r) {
    std::string append = "console=ttyS0 panic=-1 " + r.recipe.cmdline + " " +
                         identity_args(r.recipe, r.kernel) + " schedlab.accel=" + r.accel;
    if (!r.append.empty()) append += " " + r.append;
    return append;
  }

  static void validate(const BootRequest& r) {
    if (r.then_recipe && r.root == RootMode::kImage)
      throw InputError(
          "--then needs --root 9p: the next kernel and initramfs are read through the host root");
    if (r.accel != "tcg" && r.accel != "kvm")
      throw InputError("--accel " + r.accel + ": expected tcg or kvm");
    if (r.tcg_thread != "multi" && r.tcg_thread != "single")
      throw InputError("--tcg-thread " + r.tcg_thread + ": expected single or multi");
    if (r.accel == "kvm" && ::access("/dev/kvm", R_OK | W_OK) != 0)
      throw InputError("--accel kvm: /dev/kvm is not usable here");
    if (r.smp < 1) throw InputError("--smp must be at least 1");
    if (r.memory_mib < 256) throw InputError("--memory must be at least 256 MiB");
    if (r.topology && r.topology->cpus() != r.smp)
      throw InputError(fmt::format("--topology gives {} CPUs but --smp is {}", r.topology->cpus(), r.smp));
    if (r.numa_nodes < 0 || r.numa_nodes > r.smp)
      throw InputError(fmt::format("--numa {}: between 0 and the CPU count ({})", r.numa_nodes, r.smp));
    if (r.numa_nodes > 0 && r.smp % r.numa_nodes != 0)
      throw InputError(fmt::format("--numa {}: does not divide {} CPUs evenly", r.numa_nodes, r.smp));
    if (!find_tool("qemu-system-x86_64"))
      throw Error("qemu-system-x86_64 missing (apt-get install qemu-system-x86)");
  }

  static std::vector<std::string> qemu_command(const BootRequest& r, const fs::path& initrd,
                                               const std::optional<fs::path>& image, const fs::path& share) {
    std::string smp = std::to_string(r.smp);
    if (r.topology)
      smp += fmt::format(",sockets={},cores={},threads={}", r.topology->sockets, r.topology->cores,
                         r.topology->threads);
    // qemu64 is an AMD model and TCG cannot emulate topoext: with it a guest sees no SMT siblings.
    std::string cpu =
        !r.cpu_model.empty() ? r.cpu_model : (r.topology && r.topology->threads > 1 ? "Nehalem" : "qemu64");
    const std::string append = guest_append(r);
    std::vector<std::string> argv{"qemu-system-x86_64",
                                  "-accel",
                                  r.accel == "tcg" ? "tcg,thread=" + r.tcg_thread : r.accel,
                                  "-name",
                                  qemu_opt_value("schedlab-" + r.recipe.name) + ",debug-threads=on",
                                  "-cpu",
                                  cpu,
                                  "-smp",
                                  smp,
                                  "-m",
                                  std::to_string(r.memory_mib),
                                  "-nographic",
                                  "-no-reboot",
                                  "-nic",
                                  "none",
                                  "-kernel",
                                  r.kernel.vmlinuz.string(),
                                  "-initrd",
                                  initrd.string(),
                                  "-append",
                                  append};
    if (r.numa_nodes > 0) {
      const int per_cpu = r.smp / r.numa_nodes;
      const int per_mem = r.memory_mib / r.numa_nodes;
      for (int n = 0; n < r.numa_nodes; ++n) {
        argv.insert(
            argv.end(),
            {"-object", fmt::format("memory-backend-ram,id=m{},size={}M", n, per_mem), "-numa",
             fmt::format("node,nodeid={},cpus={}-{},memdev=m{}", n, n * per_cpu, (n + 1) * per_cpu - 1, n)});
      }
    }
    if (image) {
      argv.insert(argv.end(), {"-drive", "file=" + qemu_opt_value(image->string()) +
                                             ",format=raw,if=virtio,readonly=on"});
    } else {
      argv.insert(
          argv.end(),
          {"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"});
    }
    // The suite's build directory on its own share in both modes: the guest mounts it last, over its
    // own /tmp and /run, where a CI checkout's build tree would otherwise be hidden.
    argv.insert(argv.end(),
                {"-virtfs", "local,path=" + qemu_opt_value(r.schedlab_binary.parent_path().string()) +
                                ",mount_tag=suite,security_model=none,readonly=on"});
    argv.insert(argv.end(), {"-virtfs", "local,path=" + qemu_opt_value(share.string()) +
                                            ",mount_tag=out,security_model=none"});
    return argv;
  }

  static json record(const BootRequest& r, const BootResult& res, const std::vector<std::string>& argv,
                     const fs::path& console, const std::vector<std::string>& modules) {
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    json bundles = json::array();
    for (const auto& b : res.bundles) bundles.push_back(b.filename().string());
    return {
        {"schema", "schedlab.boot/1"},
        {"backend", "qemu"},
        {"status", res.status},
        {"reason", res.reason.empty() ? json(nullptr) : json(res.reason)},
        {"note", res.note.empty() ? json(nullptr) : json(res.note)},
        {"recipe", {{"name", r.recipe.name}, {"label", r.recipe.label}, {"file", r.recipe.file.string()}}},
        {"kernel",
         {{"package", r.kernel.package},
          {"version", r.kernel.version},
          {"release", r.kernel.release},
          {"hash", r.kernel.hash.empty() ? json(nullptr) : json(r.kernel.hash)},
          {"build_id", r.kernel.build_id.empty() ? json(nullptr) : json(r.kernel.build_id)},
          {"identity", identity_json(r.kernel)}}},
        {"guest",
         {{"accel", r.accel},
          {"tcg_thread", r.accel == "tcg" ? json(r.tcg_thread) : json(nullptr)},
          {"smp", r.smp},
          {"memory_mib", r.memory_mib},
          {"topology", r.topology ? json{{"sockets", r.topology->sockets},
                                         {"cores", r.topology->cores},
                                         {"threads", r.topology->threads}}
                                  : json(nullptr)},
          {"numa_nodes", r.numa_nodes},
          {"root", r.root == RootMode::kImage ? "ext4-image" : "9p-loose"},
          {"modules", modules}}},
        {"run_args", r.run_args},
        {"qemu_command", argv},
        {"seconds",
         {{"init", opt(res.init_s)},
          {"suite_start", opt(res.suite_start_s)},
          {"first_output", opt(res.first_output_s)},
          {"total", opt(res.total_s)}}},
        {"guest_rc", res.guest_rc ? json(*res.guest_rc) : json(nullptr)},
        {"runs_done", res.runs_done},
        {"then", r.then_recipe ? json{{"recipe", r.then_recipe->name},
                                      {"release", r.then_kernel.release},
                                      {"kexec_s", res.kexec_s ? json(*res.kexec_s) : json(nullptr)}}
                               : json(nullptr)},
        {"bundles", bundles},
        {"console_log", console.filename().string()},
        {"console_tail", res.console_tail}};
  }
};

}  // namespace

std::unique_ptr<BootBackend> make_qemu_backend() {
  return std::make_unique<QemuBackend>();
}

}  // namespace schedlab::kernels
