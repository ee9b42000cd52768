#pragma once
// The kernel's view of sched_ext (kernel/sched/ext.c, 6.12): DIR/state ("disabled", "enabling",
// "enabled", "disabling"), DIR/enable_seq (counts every successful enable) and, while a scheduler
// is attached, DIR/root/ops (its ops name).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace schedlab::scx {

class SchedExtSysfs {
 public:
  explicit SchedExtSysfs(std::filesystem::path dir) : dir_(std::move(dir)) {}
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path file(const std::string& relative) const { return dir_ / relative; }

  // Each is nullopt when the file is absent or unreadable (root/ops is absent while disabled).
  std::optional<std::string> state() const { return read("state"); }
  std::optional<std::string> root_ops() const { return read("root/ops"); }
  std::optional<std::uint64_t> enable_seq() const;

 private:
  std::optional<std::string> read(const std::string& relative) const;  // first line, no newline
  std::filesystem::path dir_;
};

}  // namespace schedlab::scx
