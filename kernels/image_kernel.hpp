#pragma once
// Image recipes: a kernel built elsewhere (a build farm's bzImage with its System.map, vmlinux,
// .config and modules, or a `make bindeb-pkg` .deb), checked and copied into the cache as the files
// were when installed: CACHE/images/<name>-<first 16 hex of its sha256>/root/{boot,lib/modules}. The
// sha256 of the kernel image is its identity: every bundle booted from it records it.
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include "kernels/package_cache.hpp"
#include "kernels/recipe.hpp"

namespace schedlab::kernels {

// What the x86 boot protocol header of a bzImage says (Documentation/arch/x86/boot.rst): the boot
// flag 0xAA55 at 0x1FE, "HdrS" at 0x202, and the version string kernel_version points at.
struct BzImageHeader {
  unsigned protocol = 0;  // 0x020f for boot protocol 2.15
  std::string version;    // "6.1.0-50-amd64 (debian-kernel@lists.debian.org) #1 SMP ..."
  std::string release;    // its first word: the `uname -r` of the kernel
};

// The header, or an InputError naming the file and what is missing ("no x86 boot signature: not a
// kernel image").
BzImageHeader read_bzimage_header(const std::filesystem::path& image);

// The hex sha256 of a file (sha256sum).
std::string file_sha256(const std::filesystem::path& file);

// The installed image if this recipe's files (by the kernel's or the deb's hash) are in the cache.
std::optional<KernelArtifacts> cached_image(const Recipe& recipe, const std::filesystem::path& cache_dir);

// Checks and installs the image: a file that is not a bzImage, a deb without exactly one
// boot/vmlinuz-*, a modules directory named for another release, or a vmlinux without a build id are
// InputErrors naming the file. Progress lines go to `log`.
KernelArtifacts install_image(const Recipe& recipe, const std::filesystem::path& cache_dir,
                              std::ostream& log);

}  // namespace schedlab::kernels
