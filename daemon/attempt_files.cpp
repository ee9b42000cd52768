#include "daemon/attempt_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <vector>

#include <fmt/format.h>

#include "core/bundle_io.hpp"
#include "core/error.hpp"

namespace schedlab {

namespace fs = std::filesystem;

std::optional<fs::path> find_bundle(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".json") continue;
    try {
      load_bundle(it->path());
      return it->path();
    } catch (const InputError&) {  // a boot record or console capture, not a bundle
    }
  }
  return std::nullopt;
}

void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw SystemError("opening " + dir.string(), errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw SystemError("fsync " + dir.string(), err);
}

void create_durable_directories(const fs::path& dir) {
  std::vector<fs::path> missing;
  for (fs::path p = dir; !p.empty() && !fs::exists(p); p = p.parent_path()) missing.push_back(p);
  fs::create_directories(dir);
  for (const auto& p : missing) sync_directory(p.parent_path().empty() ? "." : p.parent_path());
}

void sync_tree(const fs::path& dir) {
  std::vector<fs::path> dirs{dir};
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_directory()) dirs.push_back(it->path());
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) sync_directory(*d);
}

fs::path set_aside(const fs::path& attempt_dir) {
  fs::path kept = attempt_dir.string() + ".discarded";
  for (int n = 2; fs::exists(kept); ++n) kept = fmt::format("{}-{}.discarded", attempt_dir.string(), n);
  std::error_code ec;
  fs::rename(attempt_dir, kept, ec);
  if (ec) throw Error("cannot set aside " + attempt_dir.string() + ": " + ec.message());
  sync_directory(attempt_dir.parent_path());
  return kept;
}

}  // namespace schedlab
