#include "workloads/wakeup/kernbench_load.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "workloads/kernbench/build_tree.hpp"
#include "workloads/kernbench/cache_dir.hpp"
#include "workloads/kernbench/process.hpp"
#include "workloads/kernbench/tree_generator.hpp"

namespace schedlab {

KernbenchLoad::KernbenchLoad(const WorkloadContext& ctx) {
  if (ctx.cache_dir.empty()) throw InputError("wakeup.load=kernbench needs a cache directory (--cache-dir)");
  const auto cache_root = ctx.cache_dir / "kernbench";
  std::filesystem::create_directories(cache_root);
  kernbench::BuildTree tree;
  {
    FileLock lock(cache_root / ".lock", "using the kernbench cache " + cache_root.string() +
                                            "; run one at a time or give another --cache-dir");
    tree = kernbench::prepare_tree("generated", kernbench::kDefaultFiles, cache_root);
  }
  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  const auto clean = kernbench::make_command(tree, {"clean"});
  const auto build = kernbench::make_command(tree, {"-j" + std::to_string(2 * cpus)});
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw SystemError("fork for wakeup.load=kernbench", errno);
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    try {
      FileLock lock(cache_root / ".lock",
                    "using the kernbench cache " + cache_root.string() +
                        "; run one at a time or give another --cache-dir");  // no kernbench repetition builds
                                                                             // this tree meanwhile
      for (;;) {
        kernbench::run_process({clean, false, std::nullopt, 0});
        kernbench::run_process({build, false, std::nullopt, 0});
      }
    } catch (...) {
      ::_exit(1);
    }
  }
  ::setpgid(pid_, pid_);  // also here, so that the kill below reaches the group whoever ran first
  describe_ = {{"kind", "kernbench"},
               {"tree", tree.make_dir.string()},
               {"tree_hash", tree.tree_hash},
               {"jobs", 2 * cpus},
               {"files", kernbench::kDefaultFiles}};
}

KernbenchLoad::~KernbenchLoad() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace schedlab
