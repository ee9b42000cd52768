#pragma once
// The command line of a campaign step: `schedlab run ...` on the running kernel, or `schedlab kernel
// boot RECIPE ... -- run ...` for a recipe (a qemu guest, or with boot = kexec | grub the lab box
// itself, staging its boot state in the attempt directory).
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/campaign/campaign.hpp"

namespace schedlab {

// A qemu step's `kernel boot --timeout`: the campaign's budget for the step (its repetitions and
// warm-up at the per-repetition timeout, the settle wait) plus the guest's boot under TCG.
inline constexpr double kQemuBootAllowanceS = 300;
int qemu_step_timeout_s(const Campaign& c, const CampaignStep& s);

std::vector<std::string> step_argv(const Campaign& c, const CampaignStep& s,
                                   const std::filesystem::path& binary,
                                   const std::filesystem::path& attempt_dir);

}  // namespace schedlab
