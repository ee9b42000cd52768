#include "core/cgroup_hierarchy.hpp"

#include <algorithm>
#include <sstream>

namespace schedlab {
namespace fs = std::filesystem;
namespace {

struct Mounts {
  std::string error;
  fs::path v2;
  std::vector<std::pair<fs::path, std::vector<std::string>>> v1;  // mount point, its controllers
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; std::getline(in, word, ',');) out.push_back(word);
  return out;
}

Mounts read_mounts(const HostPaths& paths) {
  Mounts mounts;
  const auto mountinfo = read_text(paths.proc / "self/mountinfo");
  if (!mountinfo) {
    mounts.error = (paths.proc / "self/mountinfo").string() + ": unreadable";
    return mounts;
  }
  std::istringstream in(*mountinfo);
  for (std::string line; std::getline(in, line);) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    const auto after = split_ws(line.substr(dash + 3));  // fstype source super-options
    const auto before = split_ws(line.substr(0, dash));
    if (after.empty() || before.size() < 5) continue;
    if (after[0] == "cgroup" && after.size() >= 3)
      mounts.v1.emplace_back(before[4], split_commas(after[2]));
    else if (after[0] == "cgroup2" && mounts.v2.empty())
      mounts.v2 = before[4];
  }
  return mounts;
}

// This process's group in the v1 hierarchy of `controller` ("4:cpu,cpuacct:/user.slice"), or "".
std::string own_v1_group(const HostPaths& paths, const std::string& controller) {
  std::istringstream lines(read_text(paths.proc / "self/cgroup").value_or(""));
  for (std::string line; std::getline(lines, line);) {
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const auto controllers = split_commas(line.substr(a + 1, b - a - 1));
    if (std::find(controllers.begin(), controllers.end(), controller) != controllers.end())
      return line.substr(b + 1);
  }
  return {};
}

}  // namespace

fs::path cgroup2_mount(const HostPaths& paths) {
  return read_mounts(paths).v2;
}

std::optional<ControllerHierarchy> find_controller_hierarchy(const HostPaths& paths,
                                                             const std::string& controller,
                                                             std::string& why) {
  const auto mounts = read_mounts(paths);
  if (!mounts.error.empty()) {
    why = mounts.error;
    return std::nullopt;
  }
  for (const auto& [mount, controllers] : mounts.v1) {
    if (std::find(controllers.begin(), controllers.end(), controller) == controllers.end()) continue;
    fs::path parent = mount;
    const auto own = own_v1_group(paths, controller);
    if (!own.empty() && own != "/" && fs::is_directory(mount / own.substr(1))) parent = mount / own.substr(1);
    return ControllerHierarchy{1, mount, parent};
  }
  if (!mounts.v2.empty()) {
    const auto offered = split_ws(read_text(mounts.v2 / "cgroup.controllers").value_or(""));
    if (std::find(offered.begin(), offered.end(), controller) != offered.end())
      return ControllerHierarchy{2, mounts.v2, mounts.v2};
    why = (mounts.v2 / "cgroup.controllers").string() + " has no " + controller +
          " controller, and no cgroup v1 " + controller + " hierarchy is mounted";
    return std::nullopt;
  }
  why = "no cgroup hierarchy with the " + controller + " controller is mounted";
  return std::nullopt;
}

}  // namespace schedlab
