// schedlab-grp-tasks: the groups workload's tasks (processes or threads), run in a process as small as
// hackbench's (see run_in_helper). Arguments and report: helper_protocol.cpp. Exit 0 with the outcome on
// standard output, or 1 with the error's text there.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <exception>
#include <string>
#include <vector>

#include "workloads/groups/tasks.hpp"

namespace {

void write_all(const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(1, s.data() + off, s.size() - off);
    if (n <= 0) return;  // the workload is gone: nobody to tell
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace schedlab::groups;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  try {
    std::vector<int> cpus;
    pid_t parent = -1;
    const auto o = options_from_arguments(std::vector<std::string>(argv + 1, argv + argc), cpus, parent);
    if (::getppid() != parent) return 125;  // the workload died before PDEATHSIG was set
    write_all(
        encode_outcome(o.tasks == TaskKind::kThread ? run_in_threads(o, cpus) : run_in_processes(o, cpus)));
    return 0;
  } catch (const std::exception& e) {
    write_all(e.what());
    return 1;
  }
}
