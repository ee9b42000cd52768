#include "collector/runner/memory_limit.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "collector/runner/isolation.hpp"
#include "core/error.hpp"

namespace schedlab {
namespace fs = std::filesystem;
namespace {

void write_limit_file(const fs::path& file, const std::string& value) {
  std::string error;
  if (!write_kernel_file(file, value, error)) throw Error("set the repetition's memory limit: " + error);
}

// A key's number in a "key value" file (memory.events, memory.oom_control), or nullopt.
std::optional<long long> keyed_value(const fs::path& file, const std::string& key) {
  std::istringstream in(read_text(file).value_or(""));
  std::string name;
  long long value = 0;
  while (in >> name >> value)
    if (name == key) return value;
  return std::nullopt;
}

std::optional<long long> number_in(const fs::path& file) {
  const auto line = read_line(file);
  if (!line) return std::nullopt;
  try {
    return std::stoll(*line);
  } catch (const std::exception&) {
    return std::nullopt;  // "max"
  }
}

}  // namespace

std::uint64_t parse_memory_size(const std::string& text, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return InputError((what.empty() ? "" : what + ": ") + "'" + text + "' " + why +
                      " (a size such as 512M, 2G or a number of bytes)");
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string number = text.substr(0, i);
  std::string unit = text.substr(i);
  if (number.empty() || number.front() == '.' || number.back() == '.' ||
      number.find('.') != number.rfind('.'))
    throw bad("is not a size");
  for (const char* tail : {"iB", "B"})
    if (unit.size() > std::string(tail).size() && unit.ends_with(tail))
      unit.resize(unit.size() - std::string(tail).size());
  double scale = 1;
  if (unit.size() == 1) {
    const std::string units = "KMGT";
    const auto at = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    if (at == std::string::npos) throw bad("has an unknown unit");
    scale = std::pow(1024.0, static_cast<double>(at + 1));
  } else if (!unit.empty() && unit != "B") {
    throw bad("has an unknown unit");
  }
  const double bytes = std::stod(number) * scale;
  if (!(bytes >= 1)) throw bad("is not a positive size");
  if (bytes >= 9.2e18) throw bad("is too large");
  return static_cast<std::uint64_t>(bytes);
}

std::string format_memory_size(std::uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int u = 0;
  while (value >= 1024 && u < 4) {
    value /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.4g} {}", value, units[u]);
}

std::optional<ControllerHierarchy> find_memory_controller(const HostPaths& paths, std::string& why) {
  return find_controller_hierarchy(paths, "memory", why);
}

MemoryLimit::MemoryLimit(std::uint64_t bytes, ControllerHierarchy where, const std::string& leaf_name)
    : bytes_(bytes), where_(std::move(where)) {
  if (where_.version != 1) return;
  dir_ = where_.parent / leaf_name;
  if (::mkdir(dir_.c_str(), 0755) != 0) throw SystemError("create the memory cgroup " + dir_.string(), errno);
  own_group_ = true;
  write_limit_file(dir_ / "memory.limit_in_bytes", std::to_string(bytes_));
  // Swap accounting (swapaccount=1): memory + swap no larger than memory alone, so no swap at all.
  if (fs::exists(dir_ / "memory.memsw.limit_in_bytes"))
    write_limit_file(dir_ / "memory.memsw.limit_in_bytes", std::to_string(bytes_));
}

MemoryLimit::~MemoryLimit() {
  if (!own_group_) return;
  remove_cgroup_dir(dir_, 1);  // a group empties a moment after its last process was reaped
}

void MemoryLimit::apply_to_leaf(const fs::path& cgroup2_leaf) {
  if (where_.version != 2) return;
  if (cgroup2_leaf.empty())
    throw Error(
        "a memory limit on cgroup v2 needs the repetition in a cgroup: process-group isolation was used");
  const auto offered = split_ws(read_text(cgroup2_leaf / "cgroup.controllers").value_or(""));
  if (std::find(offered.begin(), offered.end(), "memory") == offered.end())
    throw Error("a memory limit needs the memory controller in " + cgroup2_leaf.string() +
                ", and its parent's cgroup.subtree_control does not enable it");
  dir_ = cgroup2_leaf;
  write_limit_file(dir_ / "memory.max", std::to_string(bytes_));
  if (fs::exists(dir_ / "memory.swap.max")) write_limit_file(dir_ / "memory.swap.max", "0");
  // The whole repetition dies together at its limit, as it does at its time limit.
  if (fs::exists(dir_ / "memory.oom.group")) write_limit_file(dir_ / "memory.oom.group", "1");
}

void MemoryLimit::adopt(pid_t pid) {
  if (where_.version == 1) write_limit_file(dir_ / "cgroup.procs", std::to_string(pid));
}

long MemoryLimit::oom_kills() const {
  const auto kills = where_.version == 1 ? keyed_value(dir_ / "memory.oom_control", "oom_kill")  // 4.13+
                                         : keyed_value(dir_ / "memory.events", "oom_kill");
  return kills ? static_cast<long>(*kills) : -1;
}

nlohmann::json MemoryLimit::describe() const {
  nlohmann::json j{{"bytes", bytes_}, {"cgroup", dir_.string()}, {"version", where_.version}};
  const auto peak = where_.version == 1 ? number_in(dir_ / "memory.max_usage_in_bytes")
                                        : number_in(dir_ / "memory.peak");  // 5.19+
  if (peak) j["peak_bytes"] = *peak;
  const long kills = oom_kills();
  if (kills >= 0) j["oom_kills"] = kills;
  if (where_.version == 1)
    if (const auto failcnt = number_in(dir_ / "memory.failcnt")) j["limit_hits"] = *failcnt;
  if (where_.version == 2)
    if (const auto max = keyed_value(dir_ / "memory.events", "max")) j["limit_hits"] = *max;
  return j;
}

}  // namespace schedlab
