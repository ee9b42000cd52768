#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "core/error.hpp"

namespace schedlab {
namespace {

void write_all(int fd, std::string_view content, const std::string& what) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("write " + what, errno);
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content, bool replace) {
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::string tmpl = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw SystemError("create temporary file in " + dir.string(), errno);
  try {
    // mkstemp makes 0600, which made every bundle private and a recipe rewritten by `kernel repin` too.
    if (::fchmod(fd, 0644) != 0) throw SystemError("chmod " + tmpl, errno);
    write_all(fd, content, tmpl);
    if (::fsync(fd) != 0) throw SystemError("fsync " + tmpl, errno);
    if (::close(fd) != 0) {
      fd = -1;
      throw SystemError("close " + tmpl, errno);
    }
    fd = -1;
    const unsigned flags = replace ? 0U : RENAME_NOREPLACE;
    if (::renameat2(AT_FDCWD, tmpl.c_str(), AT_FDCWD, path.c_str(), flags) != 0) {
      int err = errno;
      if (err == EEXIST) throw InputError(path.string() + ": already exists; refusing to overwrite it");
      throw SystemError("rename " + tmpl + " to " + path.string(), err);
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmpl.c_str());
    throw;
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: the rename is what must be durable
    ::close(dfd);
  }
}

std::string why_not_a_file_name_word(std::string_view word) {
  if (word.empty()) return "is empty";
  if (word.front() == '.') return "starts with '.'";
  for (const char c : word) {
    if (c == '/') return "contains '/'";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "contains a control character";
  }
  return {};
}

}  // namespace schedlab
