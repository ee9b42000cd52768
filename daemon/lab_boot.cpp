#include "daemon/lab_boot.hpp"

#include <chrono>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "daemon/log.hpp"
#include "kernels/process.hpp"

namespace schedlab {

namespace fs = std::filesystem;

StagedBoot staged_boot(const fs::path& attempt_dir, const std::string& current_boot_id) {
  if (auto resumed_in = read_text(attempt_dir / kResumeMarker))
    return trim(*resumed_in) == current_boot_id ? StagedBoot::kResumeCut : StagedBoot::kWentDown;
  const auto state_file = attempt_dir / kBootStateFile;
  auto text = read_text(state_file);
  if (!text) return StagedBoot::kNone;
  std::string staged_in;
  try {
    staged_in = nlohmann::json::parse(*text).at("boot_id_before").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(state_file.string() + ": not the boot state `schedlab kernel boot` writes: " + e.what());
  }
  return staged_in == current_boot_id ? StagedBoot::kNotRebooted : StagedBoot::kRebooted;
}

std::string to_string(StagedBoot s) {
  switch (s) {
    case StagedBoot::kNone:
      return "nothing staged";
    case StagedBoot::kNotRebooted:
      return "staged in this boot, no reboot came";
    case StagedBoot::kRebooted:
      return "staged in an earlier boot";
    case StagedBoot::kResumeCut:
      return "its resume was cut short in this boot";
    case StagedBoot::kWentDown:
      return "the machine went down while the suite ran";
  }
  return "?";
}

std::string unstage_boot(const std::string& backend, const Log& log) {
  const std::vector<std::string> argv =
      backend == "kexec"
          ? std::vector<std::string>{"kexec", "-u"}
          : std::vector<std::string>{"grub-editenv", "/boot/grub/grubenv", "unset", "next_entry"};
  const auto tool = kernels::find_tool(argv[0]);
  auto resolved = argv;
  if (tool) resolved[0] = tool->string();
  kernels::ProcessOptions within;
  within.timeout = std::chrono::seconds(30);
  const auto r = tool ? kernels::run_process(resolved, within) : kernels::ProcessResult{};
  const std::string command = kernels::command_line(argv);
  if (r.exit_code == 0) {
    log.info("unstaged the boot: " + command);
    return "unstaged with `" + command + "`";
  }
  const std::string why = tool ? fmt::format("exit {}: {}", r.exit_code, kernels::last_lines(r.output, 2))
                               : argv[0] + " not found";
  log.error(fmt::format("cannot unstage the boot (`{}`, {}): the staged kernel may boot on the next reboot",
                        command, why));
  return fmt::format("`{}` failed ({}): the staged kernel may still boot on the next reboot", command, why);
}

}  // namespace schedlab
