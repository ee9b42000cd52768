#pragma once
// The unprivileged user a workload's process runs as under a root runner: the runner keeps root for
// what needs it (counters on CPUs, cgroups, tunables, schedstats, the profile), the workload does not
// get it unless its parameters need it (Workload::needs_root).
#include <sys/types.h>

#include <filesystem>
#include <string>

namespace schedlab {

struct WorkloadUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

// From the user database; InputError naming `what` (the option or key) when there is no such user.
WorkloadUser resolve_workload_user(const std::string& name, const std::string& what);

// The user's own corner of the cache directory (`cache_dir`/user-NAME), made and given to the user: the
// workload writes its generated inputs there, never into root's.
std::filesystem::path cache_dir_for(const WorkloadUser& user, const std::filesystem::path& cache_dir);

// In the workload's process, before it starts: drops every group, then the gid, then the uid. Returns
// "" or what failed and why.
std::string become(const WorkloadUser& user);

}  // namespace schedlab
