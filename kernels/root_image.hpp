#pragma once
// The read-only ext4 image of the host's /usr and /etc that `--root image` boots on: no 9p round
// trip per open(), so compile-heavy workloads block like on a disk (see shared KERNELS.md: make -j2
// 8 s against 16 s on 9p cache=loose). Built once per state of the host's packages.
#include <filesystem>
#include <iosfwd>

namespace schedlab::kernels {

// WORK/root-images/usr-etc-<mtime of /var/lib/dpkg/status>.ext4
std::filesystem::path root_image_path(const std::filesystem::path& work_dir);

// Builds the image unless it exists (about a minute and 3-4 GB for a developer's Debian).
void ensure_root_image(const std::filesystem::path& image, std::ostream& log);

}  // namespace schedlab::kernels
