#pragma once
// What a runtime configuration changed, written down BEFORE each change, so that a schedlab that is
// killed (SIGKILL, a power cut of the process, an OOM kill) leaves a record the next start restores
// from. One file per process: parallel runs do not share one.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace schedlab::runtime {

class RestoreJournal {
 public:
  RestoreJournal(std::filesystem::path dir, std::string boot_id);
  ~RestoreJournal();  // removes the file if restore() was not called (nothing was left changed)
  RestoreJournal(const RestoreJournal&) = delete;
  RestoreJournal& operator=(const RestoreJournal&) = delete;

  // {"kind": "write", "path", "value", "what"}: write `value` back; {"kind": "rmdir", "path", "what"}:
  // remove a cgroup we made. Recorded (fsync'd, renamed) before the caller makes the change.
  void add(nlohmann::json action);
  // Undoes every action, the last first; returns what could not be undone (empty: all of it), and
  // removes the file.
  std::vector<std::string> restore();
  const std::filesystem::path& file() const { return file_; }

 private:
  void save() const;
  std::filesystem::path file_;
  std::string boot_id_;
  nlohmann::json actions_ = nlohmann::json::array();
};

// Journals left by schedlab processes that are gone: in this boot, undone (what could not be is
// reported); from an earlier boot, removed (a reboot undid them). Returns a line per journal handled.
// Journals of live processes are left alone.
std::vector<std::string> restore_leftovers(const std::filesystem::path& dir, const std::string& boot_id,
                                           const std::filesystem::path& proc = "/proc");

// Undoes one action; "" or what failed.
std::string undo(const nlohmann::json& action);

}  // namespace schedlab::runtime
