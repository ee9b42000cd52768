#pragma once
// The guest's initramfs: static busybox, the kernel modules a boot needs (their modules.dep
// closure, decompressed so busybox insmod can load them), /init, and small text files.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace schedlab::kernels {

// The modules to load for `roots` (names such as "9pnet_virtio"), dependencies first, as paths
// relative to `modules_dir`; roots built into the kernel (modules.builtin) are skipped.
// InputError naming modules_dir for a root that is neither a module nor built in.
std::vector<std::string> module_closure(const std::filesystem::path& modules_dir,
                                        const std::vector<std::string>& roots);

struct InitramfsSpec {
  std::filesystem::path modules_dir;  // lib/modules/RELEASE of the unpacked kernel
  std::vector<std::string> module_roots;
  std::map<std::string, std::string> files;  // path in the image -> content ("/init" is made executable)
  std::map<std::string, std::filesystem::path> copies;  // path in the image -> host file
  std::filesystem::path busybox = "/bin/busybox";       // must be static (busybox-static)
};

// Builds the image as an uncompressed newc cpio at `out` (staging under `scratch`); returns the
// module names in load order, as written to /etc/schedlab/modules.
std::vector<std::string> build_initramfs(const InitramfsSpec& spec, const std::filesystem::path& out,
                                         const std::filesystem::path& scratch);

}  // namespace schedlab::kernels
