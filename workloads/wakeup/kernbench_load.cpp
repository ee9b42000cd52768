#include "workloads/wakeup/kernbench_load.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "workloads/kernbench/build_tree.hpp"
#include "workloads/kernbench/cache_dir.hpp"
#include "workloads/kernbench/process.hpp"
#include "workloads/kernbench/tree_generator.hpp"

namespace schedlab {

KernbenchLoad::KernbenchLoad(const WorkloadContext& ctx, int nice) {
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
  // make's compilers outlive a killed make for a moment; as their subreaper this process reaps them in
  // stop(), so the repetition ends with none left (the runner would count them as strays). It runs in
  // the repetition's own process, so nothing outlives the setting.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // The loop's nice value is set by the loop itself, before make starts, and its outcome reported
  // back: a load that silently ran at the wrong priority would measure another experiment.
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) throw SystemError("pipe for wakeup.load=kernbench", errno);
  pid_ = ::fork();
  if (pid_ < 0) {
    const int e = errno;
    ::close(status_pipe[0]);
    ::close(status_pipe[1]);
    throw SystemError("fork for wakeup.load=kernbench", e);
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::close(status_pipe[0]);
    const int nice_errno = ::setpriority(PRIO_PROCESS, 0, nice) == 0 ? 0 : errno;
    if (nice_errno != 0) {
      (void)!::write(status_pipe[1], &nice_errno, sizeof nice_errno);
      ::_exit(1);
    }
    ::close(status_pipe[1]);
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
  ::close(status_pipe[1]);
  int nice_errno = 0;
  ssize_t got;
  while ((got = ::read(status_pipe[0], &nice_errno, sizeof nice_errno)) < 0 && errno == EINTR) {
  }
  ::close(status_pipe[0]);
  if (got != 0) {
    stop();
    throw SystemError("setpriority(" + std::to_string(nice) + ") of the kernbench load (wakeup.load_nice)",
                      got == static_cast<ssize_t>(sizeof nice_errno) ? nice_errno : EIO);
  }
  describe_ = {{"kind", "kernbench"},
               {"tree", tree.make_dir.string()},
               {"tree_hash", tree.tree_hash},
               {"jobs", 2 * cpus},
               {"nice", nice},
               {"files", kernbench::kDefaultFiles}};
}

KernbenchLoad::~KernbenchLoad() {
  stop();
}

void KernbenchLoad::stop() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  // The loop, make and every compiler: all are in the group, and all are (or become, once their parent
  // dies) our children.
  int status = 0;
  while (::waitpid(-pid_, &status, 0) > 0 || errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace schedlab
