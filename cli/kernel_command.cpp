#include "cli/kernel_command.hpp"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "kernels/boot_backend.hpp"
#include "kernels/config_check.hpp"
#include "kernels/guest_collect.hpp"
#include "kernels/lab_backends.hpp"
#include "kernels/package_cache.hpp"
#include "kernels/process.hpp"
#include "kernels/recipe.hpp"
#include "kernels/ref_recipes.hpp"
#include "kernels/source_build.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using namespace kernels;

constexpr int kExitCommandFailed = 1;

std::string source_text(const Recipe& r) {
  switch (r.kind) {
    case SourceKind::kPackage:
      return r.package.package + " " + r.package.version;
    case SourceKind::kSource:
      return "build of " + r.source.package + " " + r.source.version;
    case SourceKind::kGit:
      return "build of " + r.user.path.string() + " at " + r.user.ref;
    case SourceKind::kTree:
      return "build of the tree " + r.user.path.string();
    case SourceKind::kImage:
      return "image " + (r.image.deb.empty() ? r.image.kernel : r.image.deb).string();
  }
  return "";
}

void print_config(const Recipe& r, const KernelArtifacts& k) {
  auto text = read_text(k.config);
  if (!text) throw Error(k.config.string() + ": cannot read the kernel config");
  auto report = check_config(r.require, *text);
  fmt::print("config {} ({} requirements):\n", k.config.string(), r.require.size());
  for (const auto& f : report.findings) fmt::print("  {:<4} {}\n", f.ok ? "ok" : "MISS", f.text());
}

// A fetched kernel whose config lacks what the recipe requires is an error listing every miss.
void require_config(const Recipe& r, const KernelArtifacts& k) {
  auto text = read_text(k.config);
  if (!text) throw Error(k.config.string() + ": cannot read the kernel config");
  auto report = check_config(r.require, *text);
  if (report.ok()) return;
  std::string list;
  for (const auto& m : report.missing()) list += "\n  " + m;
  // Bad input (exit 2): the recipe asks for what the kernel it names was not configured with.
  throw InputError(fmt::format("{}: {} lacks {} required config option(s) ([config] require in {}):{}",
                               r.name, k.config.string(), report.missing().size(), r.file.string(), list));
}

}  // namespace

KernelCommand::KernelCommand(CLI::App& app) {
  command_ =
      app.add_subcommand("kernel", "Reference kernels: recipes, fetch, boot under qemu or on a lab box");
  command_->require_subcommand(1);
  command_->add_option("--recipes", recipes_dir_,
                       "Recipe directory (default: the source tree's kernels/recipes)");
  command_->add_option("--cache-dir", cache_dir_,
                       "Kernel cache (default /var/cache/schedlab as root, else ~/.cache/schedlab)");
  list_ = command_->add_subcommand("list", "Recipes: name, label, pinned source, cached or not");
  info_ = command_->add_subcommand("info", "A recipe in full, and its config check when fetched");
  fetch_ =
      command_->add_subcommand("fetch", "apt-get download the pinned package and unpack it into the cache");
  build_ = command_->add_subcommand("build", "Build a source recipe's kernel");
  update_ = command_->add_subcommand("update", "Re-pin a package recipe to the newest version its track has");
  for (auto* c : {info_, fetch_, update_}) c->add_option("NAME", name_, "Recipe name")->required();
  build_->add_option("NAME", name_, "Recipe name (or --git with --ref)");
  build_->add_flag("--prepare-only", prepare_only_, "Stop after the patches and make olddefconfig");
  build_->add_option("--jobs", jobs_, "make -j (default: every online CPU)");
  build_->add_flag("--allow-dirty", allow_dirty_,
                   "A tree recipe: build a repository with uncommitted changes");
  build_->add_option("--git", git_, "A git repository: write a recipe per --ref and build each, in order");
  build_->add_option("--ref", refs_, "With --git: a commit, branch, tag or HEAD~1 (repeat: --ref A --ref B)");
  build_
      ->add_option("--config", git_config_,
                   "With --git: defconfig, a recipe whose packaged config starts the build, or a config file")
      ->default_val("defconfig");
  build_->add_option(
      "--fragment", git_fragment_,
      "With --git: config options on top (default: fragments/schedlab-defconfig-guest.config, or "
      "schedlab-build-builtin.config on a packaged config)");
  build_->add_option("--name", git_name_,
                     "With --git: recipe names NAME-REF (default: the repository's name)");
  build_->add_option(
      "--recipes-out", git_recipes_out_,
      "With --git: where the recipes are written (default: --recipes, else ./schedlab-recipes)");

  boot_ = command_->add_subcommand(
      "boot", "Boot a recipe's kernel and run schedlab under it: ... boot NAME -- run ...");
  boot_->add_option("NAME", name_, "Recipe name")->required();
  boot_->add_option("RUN-ARGS", run_args_, "After `--`: the schedlab command line for the booted kernel");
  boot_->add_option("--backend", backend_, "qemu | kexec | grub")->default_val("qemu");
  boot_->add_option("--then", then_, "qemu: after the run, kexec into this recipe's kernel and run again");
  boot_->add_option("--then-label", then_label_,
                    "With --then: the second kernel's bundles' label (default: its recipe's label; a --label "
                    "in the run arguments labels the first kernel's only)");
  boot_->add_option("--smp", smp_, "Guest CPUs")->default_val(2);
  boot_->add_option("--memory", memory_mib_, "Guest memory, MiB")->default_val(2048);
  boot_->add_option("--append", append_, "Extra kernel arguments");
  boot_->add_option("--topology", topology_, "sockets=N,cores=N,threads=N (their product is --smp)");
  boot_->add_option("--numa", numa_, "NUMA nodes (CPUs and memory split evenly)")->default_val(0);
  boot_->add_option("--cpu", cpu_, "qemu CPU model (default qemu64; Nehalem when the topology has threads)");
  boot_->add_option("--accel", accel_, "tcg | kvm")->default_val("tcg");
  boot_->add_option("--tcg-thread", tcg_thread_,
                    "tcg: single (default: one host thread for all vCPUs) | multi (a thread per vCPU; "
                    "faster boots, but 6.12 guests can die of a stale int3)");
  boot_
      ->add_option("--root", root_,
                   "9p: the host's / over virtio-9p, cache=loose; image: ext4 image of /usr, /etc")
      ->default_val("9p");
  boot_->add_option("--timeout", timeout_s_, "Seconds from qemu start to the guest's end")->default_val(900);
  boot_->add_option("--boot-timeout", boot_timeout_s_, "Seconds from qemu start to the guest's /init")
      ->default_val(120);
  boot_
      ->add_option("--poweroff-grace", poweroff_grace_s_,
                   "qemu: seconds a guest may take to power off after its last run; then qemu is killed "
                   "(the boot stays ok, with a note)")
      ->default_val(30);
  boot_->add_option("--out", out_, "Host directory for bundles, console log and boot record")
      ->default_val("results");
  boot_->add_option("--state-file", state_file_, "kexec/grub: where the boot state waits for `kernel resume`")
      ->default_val("/var/lib/schedlab/boot-state.json");
  boot_->add_flag("--dry-run", dry_run_, "Print the commands; run and write nothing");

  resume_ = command_->add_subcommand("resume",
                                     "After a kexec/grub reboot: run the staged suite or record boot-failed");
  resume_
      ->add_option("--state-file", state_file_,
                   "The boot state written by `kernel boot --backend kexec|grub`")
      ->default_val("/var/lib/schedlab/boot-state.json");

  // Started by the qemu guest's /init, not by a person: hidden from --help (the empty group).
  guest_collect_ = command_->add_subcommand(
      "guest-collect", "In a qemu guest: copy each bundle the run finishes in FROM to the host's share TO");
  guest_collect_->group("");
  guest_collect_->add_option("FROM", collect_from_, "The run's --out (the guest's tmpfs)")->required();
  guest_collect_->add_option("TO", collect_to_, "The output share, mounted in the guest")->required();
}

int KernelCommand::run() const {
  const fs::path dir = recipes_dir_.empty() ? default_recipes_dir() : fs::path(recipes_dir_);
  const fs::path cache = fs::absolute(cache_dir_.empty() ? default_cache_dir() : fs::path(cache_dir_));

  if (list_->parsed()) {
    fmt::print("{:<26} {:<22} {:<48} {}\n", "recipe", "label", "source", "cached");
    for (const auto& r : load_recipes(dir))
      fmt::print("{:<26} {:<22} {:<48} {}\n", r.name, r.label, source_text(r),
                 r.kind == SourceKind::kPackage ? (cached_kernel(r, cache) ? "yes" : "no")
                                                : (cached_build(r, dir, cache) ? "built" : "no"));
    return 0;
  }
  if (guest_collect_->parsed())
    return collect_guest_files(collect_from_, collect_to_, std::cout) == 0 ? 0 : kExitCommandFailed;
  if (resume_->parsed()) {
    auto o = resume_boot(state_file_, LabEnvironment{}, [](const std::vector<std::string>& argv) {
      ProcessOptions echo;
      echo.merge_stderr = false;
      echo.on_line = [](const std::string& l, double) {
        std::cout << l << "\n";
        return true;
      };
      return run_process(argv, echo).exit_code;
    });
    fmt::print("{}: {}{}\n", o.record.string(), o.status, o.reason.empty() ? "" : " — " + o.reason);
    return o.status == "ok" ? 0 : kExitCommandFailed;
  }

  if (build_->parsed() && !git_.empty()) return build_refs();
  if (build_->parsed() && name_.empty())
    throw InputError("kernel build: name a recipe, or --git PATH --ref A --ref B");
  if (build_->parsed() && !refs_.empty()) throw InputError("--ref needs --git");
  const Recipe recipe = load_recipe(dir, name_);
  if (info_->parsed()) {
    fmt::print("recipe      {}\nfile        {}\n", recipe.name, recipe.file.string());
    for (const auto& b : recipe.chain) fmt::print("derives     {}\n", b.string());
    fmt::print("label       {}\ndescription {}\nsource      {}\n", recipe.label, recipe.description,
               source_text(recipe));
    if (recipe.kind == SourceKind::kPackage)
      fmt::print("release     {}\ntrack       {}\n", recipe.package.release,
                 recipe.package.track.empty() ? "(none)" : recipe.package.track);
    fmt::print("cmdline     {} {}\n", recipe.cmdline, identity_args(recipe));
    for (const auto& f : recipe.sched_features) fmt::print("feature     {}\n", f);
    for (const auto& [k, v] : recipe.sched_tunables) fmt::print("tunable     sched/{} = {}\n", k, v);
    if (recipe.kind == SourceKind::kGit)
      fmt::print("repository  {}\nref         {}\n", recipe.user.path.string(), recipe.user.ref);
    if (recipe.kind == SourceKind::kTree) fmt::print("tree        {}\n", recipe.user.path.string());
    const auto k =
        recipe.kind == SourceKind::kPackage ? cached_kernel(recipe, cache) : cached_build(recipe, dir, cache);
    if (k) {
      fmt::print("cached      {}\n", k->root.parent_path().string());
      for (const auto& [name, value] : k->identity) fmt::print("identity    {} = {}\n", name, value);
      print_config(recipe, *k);
    } else {
      fmt::print("cached      no (`schedlab kernel {} {}`); requires:",
                 recipe.kind == SourceKind::kPackage ? "fetch" : "build", recipe.name);
      for (const auto& q : recipe.require) fmt::print(" {}", q.option);
      fmt::print("\n");
    }
    return 0;
  }
  if (fetch_->parsed()) {
    auto k = fetch_kernel(recipe, cache, std::cerr);
    require_config(recipe, k);
    fmt::print("{}\n", k.root.parent_path().string());
    return 0;
  }
  if (update_->parsed()) {
    if (recipe.kind == SourceKind::kPackage && !recipe.chain.empty())
      throw InputError(recipe.name + " derives its kernel from " + recipe.chain.back().stem().string() +
                       ": update that recipe");
    auto pin = newest_pin(recipe);
    const auto& old = recipe.package;
    if (pin.package == old.package && pin.version == old.version) {
      fmt::print("{}: {} {} is the newest {} has; the pin is unchanged\n", recipe.name, old.package,
                 old.version, old.track);
      return 0;
    }
    repin_recipe_file(recipe.file, pin);
    fmt::print("{}: re-pinned {} {} -> {} {} (release {} -> {}) in {}\n", recipe.name, old.package,
               old.version, pin.package, pin.version, old.release, pin.release, recipe.file.string());
    return 0;
  }
  if (build_->parsed()) {
    SourceBuildOptions opts;
    opts.prepare_only = prepare_only_;
    opts.jobs = jobs_;
    opts.allow_dirty = allow_dirty_;
    auto k = build_kernel(recipe, dir, cache, opts, std::cerr);
    if (!prepare_only_) require_config(recipe, k);
    fmt::print("{}\n", prepare_only_ ? k.config.parent_path().string() : k.root.parent_path().string());
    return 0;
  }

  // boot
  BootRequest req;
  req.recipe = recipe;
  req.run_args = run_args_;
  req.out_dir = out_;
  req.append = append_;
  req.dry_run = dry_run_;
  req.smp = smp_;
  req.memory_mib = memory_mib_;
  if (!topology_.empty()) req.topology = parse_topology(topology_);
  req.numa_nodes = numa_;
  req.cpu_model = cpu_;
  req.accel = accel_;
  if (!tcg_thread_.empty()) req.tcg_thread = tcg_thread_;
  if (root_ != "9p" && root_ != "image") throw InputError("--root " + root_ + ": expected 9p or image");
  req.root = root_ == "image" ? RootMode::kImage : RootMode::k9p;
  req.timeout = std::chrono::seconds(timeout_s_);
  req.boot_timeout = std::chrono::seconds(boot_timeout_s_);
  req.poweroff_grace = std::chrono::seconds(poweroff_grace_s_);
  req.state_file = state_file_;
  req.schedlab_binary = fs::read_symlink("/proc/self/exe");
  req.work_dir = cache;
  auto backend = make_backend(backend_);
  if (recipe.kind == SourceKind::kImage) {
    if (backend_ != "qemu")
      throw InputError(recipe.name +
                       ": lab backends boot package recipes (install the image as a package first)");
    req.kernel = build_kernel(recipe, dir, cache, {}, std::cerr);  // installs it, or finds it installed
    require_config(recipe, req.kernel);
  } else if (recipe.kind != SourceKind::kPackage) {
    if (backend_ != "qemu")
      throw InputError(recipe.name + ": lab backends boot package recipes (install a built kernel first)");
    auto built = cached_build(recipe, dir, cache);
    if (!built)
      throw InputError(recipe.name + ": not built yet" +
                       (recipe.kind == SourceKind::kTree ? " (or the tree changed since its build)" : "") +
                       " (`schedlab kernel build " + recipe.name + "`)");
    req.kernel = *built;
  } else if (backend_ == "qemu" && !dry_run_) {
    req.kernel = fetch_kernel(recipe, cache, std::cerr);
    require_config(recipe, req.kernel);
  } else {
    req.kernel = cached_kernel(recipe, cache).value_or(KernelArtifacts{});
    if (req.kernel.release.empty()) {
      const auto& p = recipe.package;
      req.kernel = {p.package, p.version, p.release, cache / "kernels" / recipe.cache_key() / "root",
                    {},        {},        {},        {}};
      req.kernel.vmlinuz = req.kernel.root / "boot" / ("vmlinuz-" + p.release);
      req.kernel.modules = req.kernel.root / "lib/modules" / p.release;
    }
  }
  if (!then_label_.empty() && then_.empty()) throw InputError("--then-label needs --then");
  if (!then_.empty()) {
    if (backend_ != "qemu") throw InputError("--then works with --backend qemu");
    req.then_label = then_label_;
    req.then_recipe = load_recipe(dir, then_);
    if (req.then_recipe->kind != SourceKind::kPackage)
      throw InputError("--then " + then_ + ": a source recipe");
    if (!dry_run_) {
      req.then_kernel = fetch_kernel(*req.then_recipe, cache, std::cerr);
      require_config(*req.then_recipe, req.then_kernel);
    }
  }
  auto result = backend->boot(req, std::cerr);
  if (result.status == "dry-run" || result.status == "staged") {
    for (const auto& c : result.commands) fmt::print("{}\n", c);
    return 0;
  }
  auto secs = [](const std::optional<double>& v) {
    return v ? fmt::format("{:.1f} s", *v) : std::string("-");
  };
  fmt::print("{}: {} (init {}, suite start {}, first output {}, total {})\n", recipe.name, result.status,
             secs(result.init_s), secs(result.suite_start_s), secs(result.first_output_s),
             secs(result.total_s));
  for (const auto& b : result.bundles) fmt::print("bundle: {}\n", b.string());
  if (!result.note.empty()) fmt::print("note: {}\n", result.note);
  fmt::print("boot record: {}\n", result.record.string());
  if (result.status != "ok") {
    std::cerr << "schedlab: " << recipe.name << ": " << result.status << ": " << result.reason
              << "\nlast console lines:\n"
              << result.console_tail << "\n";
    return kExitCommandFailed;
  }
  return 0;
}

int KernelCommand::build_refs() const {
  const fs::path dir = recipes_dir_.empty() ? default_recipes_dir() : fs::path(recipes_dir_);
  const fs::path cache = fs::absolute(cache_dir_.empty() ? default_cache_dir() : fs::path(cache_dir_));
  if (!name_.empty()) throw InputError("kernel build: a recipe NAME or --git, not both");
  if (prepare_only_)
    throw InputError("--prepare-only works on one recipe: build --git writes them; then build NAME");
  RefRecipesRequest q;
  q.repository = git_;
  q.refs = refs_;
  q.config = git_config_;
  q.fragment = git_fragment_;
  q.prefix = git_name_;
  q.out_dir = fs::absolute(!git_recipes_out_.empty() ? fs::path(git_recipes_out_)
                           : !recipes_dir_.empty()   ? fs::path(recipes_dir_)
                                                     : fs::path("schedlab-recipes"));
  q.builtin_recipes = default_recipes_dir();
  const auto written = write_ref_recipes(q);
  for (const auto& w : written)
    fmt::print(stderr, "{}: {} ({})\n", w.name, w.file.string(), w.commit.substr(0, 12));
  SourceBuildOptions opts;
  opts.jobs = jobs_;
  std::vector<std::string> lines;
  for (const auto& w : written) {
    const auto recipe = load_recipe(q.out_dir, w.name);
    const auto k = build_kernel(recipe, q.out_dir, cache, opts, std::cerr);
    require_config(recipe, k);
    const auto record =
        nlohmann::json::parse(read_text(k.root.parent_path() / "built.json").value_or("{}"), nullptr, false);
    const double seconds = record.is_object() ? record.value("build_seconds", 0.0) : 0.0;
    lines.push_back(fmt::format("{:<28} {} {:>7.0f} s  {}", w.name, w.commit.substr(0, 12), seconds,
                                record.is_object() ? record.value("started", std::string()) : std::string()));
  }
  fmt::print("recipes in {}:\n", q.out_dir.string());
  for (const auto& l : lines) fmt::print("  {}\n", l);
  if (written.size() >= 2) {
    const auto between = commits_between(git_, written.front().commit, written.back().commit, 20);
    fmt::print("{} commit{} from {} to {}\n", between.count, between.count == 1 ? "" : "s", refs_.front(),
               refs_.back());
    for (const auto& l : between.lines) fmt::print("  {}\n", l);
  }
  fmt::print(
      "next: schedlab kernel --recipes {} boot NAME --out DIR -- run ...; then schedlab diff DIR_A DIR_B\n",
      q.out_dir.string());
  return 0;
}

}  // namespace schedlab
