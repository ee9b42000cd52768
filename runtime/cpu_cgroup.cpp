#include "runtime/cpu_cgroup.hpp"

#include <algorithm>
#include <sstream>

namespace schedlab::runtime {
namespace fs = std::filesystem;

long shares_for_weight(long weight) {
  return std::max(2L, weight * 1024 / 100);
}

std::optional<CpuController> find_cpu_controller(const HostPaths& paths, std::string& why) {
  auto mountinfo = read_text(paths.proc / "self/mountinfo");
  if (!mountinfo) {
    why = (paths.proc / "self/mountinfo").string() + ": unreadable";
    return std::nullopt;
  }
  fs::path v1, v2;
  std::istringstream in(*mountinfo);
  for (std::string line; std::getline(in, line);) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    auto after = split_ws(line.substr(dash + 3));  // fstype source super-options
    auto before = split_ws(line.substr(0, dash));
    if (after.size() < 3 || before.size() < 5) continue;
    if (after[0] == "cgroup") {
      std::istringstream opts(after[2]);
      for (std::string o; std::getline(opts, o, ',');)
        if (o == "cpu") v1 = before[4];
    } else if (after[0] == "cgroup2" && v2.empty()) {
      v2 = before[4];
    }
  }
  if (!v1.empty()) {
    // Our own group in that hierarchy ("4:cpu,cpuacct:/user.slice"), so a container's limits still hold.
    fs::path own = v1;
    if (auto cg = read_text(paths.proc / "self/cgroup")) {
      std::istringstream lines(*cg);
      for (std::string l; std::getline(lines, l);) {
        auto a = l.find(':'), b = l.find(':', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        std::istringstream ctrls(l.substr(a + 1, b - a - 1));
        bool cpu = false;
        for (std::string c; std::getline(ctrls, c, ',');) cpu |= c == "cpu";
        if (cpu && fs::is_directory(v1 / l.substr(b + 2))) own = v1 / l.substr(b + 2);
      }
    }
    return CpuController{1, own, v1};
  }
  if (!v2.empty()) {
    auto controllers = split_ws(read_text(v2 / "cgroup.controllers").value_or(""));
    if (std::find(controllers.begin(), controllers.end(), "cpu") != controllers.end())
      return CpuController{2, v2, v2};
    why = (v2 / "cgroup.controllers").string() +
          " has no cpu controller, and no cgroup v1 cpu hierarchy is mounted";
    return std::nullopt;
  }
  why = "no cgroup hierarchy with the cpu controller is mounted";
  return std::nullopt;
}

}  // namespace schedlab::runtime
