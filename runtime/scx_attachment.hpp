#pragma once
// A sched_ext scheduler attached for one trial: schedulers/'s loader (schedlab-scx) runs as our child
// while the trial runs. It dies with us (PR_SET_PDEATHSIG), and the kernel detaches a struct_ops
// scheduler when its last link closes, so a killed schedlab leaves the built-in scheduler behind.
// The loader speaks one JSON object per line (schedulers/README.md).
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace schedlab::runtime {

class ScxAttachment {
 public:
  // Starts the loader on `object` and waits (up to `timeout_s`) for its "attached" line, which it prints
  // only once `sysfs`/state is enabled, root/ops names ours and enable_seq moved. Throws Error with the
  // loader's own words otherwise.
  ScxAttachment(const std::filesystem::path& loader, const std::filesystem::path& object,
                const std::filesystem::path& sysfs, const std::string& ops_name, double timeout_s);
  ~ScxAttachment();
  ScxAttachment(const ScxAttachment&) = delete;
  ScxAttachment& operator=(const ScxAttachment&) = delete;

  const nlohmann::json& attached() const { return attached_; }
  // The kernel's reason once it ejected ours (watchdog, error exit), or the loader's death; nullopt
  // while ours runs.
  std::optional<std::string> ejected();
  // SIGTERM, and the loader's "detached" line (state back to disabled); throws if it does not come.
  nlohmann::json detach(double timeout_s = 30);

 private:
  std::optional<nlohmann::json> next_event(double timeout_s);
  std::string loader_words() const;
  void reap(bool kill_first);

  std::filesystem::path sysfs_;
  std::string ops_name_;
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_buf_, err_buf_;
  nlohmann::json attached_;
  std::optional<std::string> ejected_;
  int exit_status_ = -1;
};

}  // namespace schedlab::runtime
