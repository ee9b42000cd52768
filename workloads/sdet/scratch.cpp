#include "workloads/sdet/scratch.hpp"

#include <stdlib.h>
#include <sys/vfs.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"

namespace schedlab::sdet {

Scratch::Scratch() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "schedlab-sdet-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw SystemError("create the scratch directory " + tmpl, errno);
  path_ = tmpl;
}

Scratch::~Scratch() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    if (!ec || std::chrono::steady_clock::now() > until) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string filesystem_type(const std::filesystem::path& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return "unknown";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0x01021994UL:
      return "tmpfs";
    case 0xEF53UL:
      return "ext4";
    case 0x58465342UL:
      return "xfs";
    case 0x9123683EUL:
      return "btrfs";
    case 0x794C7630UL:
      return "overlayfs";
    default:
      return fmt::format("{:#x}", static_cast<unsigned long>(fs.f_type));
  }
}

}  // namespace schedlab::sdet
