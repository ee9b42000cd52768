#pragma once
// The seam through which kernel and hardware facts reach the code: tests point it at
// recorded captures under tests/fixtures/ instead of the live /proc and /sys.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace schedlab {

struct HostPaths {
  std::filesystem::path proc = "/proc";
  std::filesystem::path sys = "/sys";
  std::filesystem::path boot = "/boot";

  static HostPaths live() { return {}; }
  static HostPaths under(const std::filesystem::path& root) {
    return {root / "proc", root / "sys", root / "boot"};
  }
};

// Whole file, or nullopt when it does not exist or cannot be read.
std::optional<std::string> read_text(const std::filesystem::path& path);
// A gzip file's whole text (e.g. /proc/config.gz, compressed fixtures); nullopt as above, or when corrupt.
std::optional<std::string> read_gzip_text(const std::filesystem::path& path);
// First line without the newline; nullopt as above.
std::optional<std::string> read_line(const std::filesystem::path& path);
std::string trim(std::string s);

// Writes `value` and a newline to a kernel file (/proc/sys, /sys, debugfs) as `echo value > path`
// does. False, with `error` saying what failed and why, when the kernel refuses it.
bool write_kernel_file(const std::filesystem::path& path, const std::string& value, std::string& error);
// This boot's id (proc/sys/kernel/random/boot_id under `paths`); "" when unreadable.
std::string boot_id(const HostPaths& paths = HostPaths::live());
std::vector<std::string> split_ws(const std::string& s);

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; throws InputError on malformed lists.
std::vector<int> parse_cpu_list(const std::string& list);
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace schedlab
