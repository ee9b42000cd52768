#include "kernels/build_steps.hpp"

#include <unistd.h>

#include <algorithm>
#include <ostream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "kernels/config_check.hpp"
#include "kernels/source_build.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto nl = text.find('\n', at);
    out.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

// "CONFIG_X=y" lines of a fragment as requirements olddefconfig must keep; "CONFIG_X=n" and
// "# CONFIG_X is not set" as options it must leave off.
std::vector<ConfigRequirement> fragment_requirements(const fs::path& fragment) {
  std::vector<ConfigRequirement> out;
  if (fragment.empty()) return out;
  for (const auto& line : split_lines(text_of(fragment))) {
    constexpr std::string_view kNotSetPrefix = "# CONFIG_", kNotSetSuffix = " is not set";
    if (line.starts_with(kNotSetPrefix) && line.ends_with(kNotSetSuffix)) {
      out.push_back(
          {line.substr(kNotSetPrefix.size(), line.size() - kNotSetPrefix.size() - kNotSetSuffix.size()),
           {"n"}});
      continue;
    }
    auto eq = line.find('=');
    if (line.rfind("CONFIG_", 0) != 0 || eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
    if (value.empty()) continue;  // an emptied string option reads back as absent
    out.push_back({line.substr(7, eq - 7), {value}});
  }
  return out;
}

}  // namespace

std::string text_of(const fs::path& p) {
  auto t = read_text(p);
  if (!t) throw InputError(p.string() + ": cannot read it");
  return *t;
}

std::string compiler_identity() {
  ProcessOptions o;
  o.merge_stderr = true;
  const auto res = run_process({"gcc", "--version"}, o);
  if (res.exit_code != 0) return "no gcc (exit " + std::to_string(res.exit_code) + ")";
  return trim(res.output.substr(0, res.output.find('\n')));
}

fs::path only_subdirectory(const fs::path& parent) {
  for (const auto& e : fs::directory_iterator(parent))
    if (e.is_directory()) return e.path();
  throw Error(parent.string() + ": no source tree in it");
}

BuildLog::BuildLog(fs::path path) : path_(std::move(path)), out_(path_, std::ios::app) {
  if (!out_) throw Error(path_.string() + ": cannot write the build log");
}

ProcessResult BuildLog::run(const std::vector<std::string>& argv, const fs::path& cwd, bool check) {
  out_ << "$ " << command_line(argv) << "\n" << std::flush;
  ProcessOptions o;
  o.cwd = cwd;
  o.merge_stderr = true;
  o.on_line = [this](const std::string& line, double) {
    out_ << line << "\n";
    return true;
  };
  auto res = run_process(argv, o);
  out_ << "[exit " << res.exit_code << "]\n" << std::flush;
  if (check && res.exit_code != 0) {
    const auto first = first_error_line(res.output);
    throw Error(command_line(argv) + " failed (exit " + std::to_string(res.exit_code) + ") in " +
                cwd.string() + (first ? "\n  first error: " + *first : std::string()) + "\n" +
                last_lines(res.output, 8) + "\n  full log: " + path_.string());
  }
  return res;
}

std::vector<std::string> MakeTree::make(std::vector<std::string> targets) const {
  std::vector<std::string> argv{"make"};
  if (!objtree.empty()) argv.push_back("O=" + objtree.string());
  argv.insert(argv.end(), targets.begin(), targets.end());
  return argv;
}

void configure(const Recipe& r, const std::string& base_config, const MakeTree& tree, BuildLog& log,
               std::ostream& progress) {
  std::string config = base_config;
  if (!r.source.config_fragment.empty()) config += "\n" + text_of(r.source.config_fragment);
  fs::create_directories(tree.objects());
  write_file_atomic(tree.objects() / ".config", config, /*replace=*/true);
  log.run(tree.make({"olddefconfig"}), tree.source);
  if (!r.source.loadable_modules) {
    log.run(tree.make({"mod2noconfig"}), tree.source);
    progress << r.name << ": modules = false: every =m option that can be is now off (make mod2noconfig)\n";
  }
}

// Whether any Kconfig file of a real kernel tree defines SYMBOL (`config SYMBOL`); true for a tree
// without a top-level Kconfig (a stand-in), where every symbol counts as known.
bool kconfig_defines(const fs::path& source, const std::string& symbol) {
  if (!fs::exists(source / "Kconfig")) return true;
  ProcessOptions o;
  o.merge_stderr = false;
  const auto res =
      run_process({"grep", "-rqsE", "--include=Kconfig*",
                   "^[[:space:]]*(menu)?config[[:space:]]+" + symbol + "[[:space:]]*$", source.string()},
                  o);
  return res.exit_code == 0;
}

void check_configured(const Recipe& r, const MakeTree& tree, std::ostream& progress) {
  const fs::path config_path = tree.objects() / ".config";
  const std::string config_text = text_of(config_path);
  // A fragment written for many kernels may name an option a newer one dropped (SCHED_DEBUG in 6.14):
  // not the tree's to keep. Any option its Kconfig defines must be as the fragment says.
  std::vector<ConfigRequirement> wanted;
  for (auto& q : fragment_requirements(r.source.config_fragment)) {
    if (kconfig_defines(tree.source, q.option)) {
      wanted.push_back(std::move(q));
      continue;
    }
    progress << r.name << ": CONFIG_" << q.option << " of " << r.source.config_fragment.filename().string()
             << " is not an option of this tree (no Kconfig defines it): left out\n";
  }
  auto report = check_config(wanted, config_text);
  if (!report.ok()) {
    std::string list;
    for (const auto& m : report.missing()) list += "\n  " + m;
    throw InputError(r.source.config_fragment.string() + ": make olddefconfig did not keep:" + list);
  }
  if (auto required = check_config(r.require, config_text); !required.ok()) {
    std::string list;
    for (const auto& m : required.missing()) list += "\n  " + m;
    throw InputError(r.file.string() + ": [config] require: the configured " + config_path.string() +
                     " (base config, fragment, olddefconfig" +
                     (r.source.loadable_modules ? "" : ", mod2noconfig") + ") does not have:" + list);
  }
}

CompiledKernel compile_and_install(const Recipe& r, const MakeTree& tree, const fs::path& root,
                                   int jobs_wanted, BuildLog& log, std::ostream& progress) {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  const std::string jobs = std::to_string(jobs_wanted > 0 ? jobs_wanted : std::max(1L, cpus));
  progress << r.name << ": make -j" << jobs << " bzImage modules in " << tree.objects().string() << "\n"
           << r.name << ": its output goes to " << log.path().string() << "\n"
           << std::flush;
  log.run(tree.make({"-j" + jobs, "bzImage", "modules"}), tree.source);
  ProcessOptions in_tree;
  in_tree.cwd = tree.source;
  in_tree.merge_stderr = false;  // the release alone, not make's warnings
  const std::string release = trim(run_checked(tree.make({"-s", "kernelrelease"}), in_tree));
  fs::create_directories(root / "boot");
  log.run(
      tree.make({"-j" + jobs, "modules_install", "INSTALL_MOD_PATH=" + root.string(), "INSTALL_MOD_STRIP=1"}),
      tree.source);
  const fs::path objects = tree.objects();
  // overwrite: a resumed build may have got this far before
  constexpr auto kOverwrite = fs::copy_options::overwrite_existing;
  fs::copy_file(objects / "arch/x86/boot/bzImage", root / "boot" / ("vmlinuz-" + release), kOverwrite);
  fs::copy_file(objects / "System.map", root / "boot" / ("System.map-" + release), kOverwrite);
  fs::copy_file(objects / ".config", root / "boot" / ("config-" + release), kOverwrite);
  log.run({"depmod", "-b", root.string(), release}, root);
  return {release, elf_build_id(objects / "vmlinux"), jobs};
}

}  // namespace schedlab::kernels
