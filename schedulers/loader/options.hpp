#pragma once
// The command line of schedlab-scx: [--sysfs DIR] [--attach-timeout SECONDS] OBJECT.bpf.o
#include <chrono>
#include <filesystem>
#include <span>
#include <string>

namespace schedlab::scx {

struct LoaderOptions {
  // A seam: the tests point it at a fixture directory shaped like the kernel's.
  std::filesystem::path sysfs_dir = "/sys/kernel/sched_ext";
  // Verification under TCG took up to 0.9 s here (shared/KERNELS.md); 10 s leaves room for slow hosts.
  std::chrono::milliseconds attach_timeout{10'000};
  std::filesystem::path object;
  bool help = false;
};

std::string usage();
// Throws LoaderError(refused, "usage", ...) naming the offending argument.
LoaderOptions parse_options(std::span<char* const> args);
// NAME.bpf.o -> NAME: the name the scheduler's ops must carry (checked against root/ops).
std::string ops_name_of(const std::filesystem::path& object);

}  // namespace schedlab::scx
