#include "daemon/lab_boot.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/host_paths.hpp"

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

}  // namespace schedlab
