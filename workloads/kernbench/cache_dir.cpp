#include "workloads/kernbench/cache_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace schedlab::kernbench {
namespace {

const std::string kTempPrefix = ".tmp-";

bool pid_alive(long pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// ".tmp-NAME-PID" siblings of `final_dir` whose process is gone.
void remove_stale_temporaries(const std::filesystem::path& final_dir) {
  const std::string prefix = kTempPrefix + final_dir.filename().string() + "-";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(final_dir.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (!pid_alive(pid)) std::filesystem::remove_all(e.path(), ec);
  }
}

}  // namespace

bool publish_directory(const std::filesystem::path& final_dir,
                       const std::function<void(const std::filesystem::path& tmp)>& fill) {
  if (std::filesystem::exists(final_dir)) return false;
  remove_stale_temporaries(final_dir);
  const auto tmp = final_dir.parent_path() /
                   (kTempPrefix + final_dir.filename().string() + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  try {
    fill(tmp);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(tmp, ec);
    throw;
  }
  // Durable before it becomes visible: a power cut must not leave a complete-looking tree either.
  if (int dir_fd = ::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    ::syncfs(dir_fd);
    ::close(dir_fd);
  }
  if (::rename(tmp.c_str(), final_dir.c_str()) != 0) {
    const int err = errno;
    std::error_code ec;
    std::filesystem::remove_all(tmp, ec);
    if (err == EEXIST || err == ENOTEMPTY) return false;  // made by someone else meanwhile
    throw SystemError("rename " + tmp.string() + " to " + final_dir.string(), err);
  }
  return true;
}

}  // namespace schedlab::kernbench
