#include "collector/runner/workload_user.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "core/error.hpp"

namespace schedlab {

WorkloadUser resolve_workload_user(const std::string& name, const std::string& what) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  const int rc = ::getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (rc != 0) throw SystemError(what + ": look up user '" + name + "'", rc);
  if (!found) throw InputError(what + ": no user '" + name + "' on this machine");
  return {name, found->pw_uid, found->pw_gid};
}

std::filesystem::path cache_dir_for(const WorkloadUser& user, const std::filesystem::path& cache_dir) {
  const auto dir = cache_dir / ("user-" + user.name);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw SystemError("create the workload user's cache directory " + dir.string(), ec.value());
  // The cache directory itself must be passable; its other corners stay root's.
  std::filesystem::permissions(cache_dir, std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add, ec);
  if (::chown(dir.c_str(), user.uid, user.gid) != 0)
    throw SystemError("give " + dir.string() + " to user " + user.name, errno);
  return dir;
}

std::string become(const WorkloadUser& user) {
  if (::setgroups(0, nullptr) != 0) return "setgroups: " + errno_text(errno);
  if (::setgid(user.gid) != 0) return "setgid(" + std::to_string(user.gid) + "): " + errno_text(errno);
  if (::setuid(user.uid) != 0) return "setuid(" + std::to_string(user.uid) + "): " + errno_text(errno);
  return {};
}

}  // namespace schedlab
