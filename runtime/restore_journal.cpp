#include "runtime/restore_journal.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"

namespace schedlab::runtime {
namespace fs = std::filesystem;

RestoreJournal::RestoreJournal(fs::path dir, std::string boot_id) : boot_id_(std::move(boot_id)) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create the restore journal's directory " + dir.string() + ": " + ec.message());
  file_ = dir / ("restore-" + std::to_string(::getpid()) + ".json");
}

RestoreJournal::~RestoreJournal() {
  std::error_code ec;
  if (actions_.empty()) fs::remove(file_, ec);
}

void RestoreJournal::save() const {
  nlohmann::json j = {{"pid", ::getpid()}, {"boot_id", boot_id_}, {"actions", actions_}};
  write_file_atomic(file_, j.dump(2) + "\n", /*replace=*/true);
}

void RestoreJournal::add(nlohmann::json action) {
  actions_.push_back(std::move(action));
  save();
}

std::string undo(const nlohmann::json& a) {
  const std::string kind = a.value("kind", ""), path = a.value("path", ""), what = a.value("what", path);
  if (kind == "write") {
    std::string error;
    if (!write_kernel_file(path, a.value("value", ""), error)) return what + ": " + error;
    return {};
  }
  if (kind == "rmdir") {
    // The repetition's processes are gone, but the kernel frees a cgroup a moment after its last task.
    for (int i = 0; i < 100; ++i) {
      if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return {};
      if (errno != EBUSY) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return what + ": rmdir " + path + ": " + errno_text(errno);
  }
  return what + ": unknown restore action '" + kind + "'";
}

std::vector<std::string> RestoreJournal::restore() {
  std::vector<std::string> failed;
  for (auto it = actions_.rbegin(); it != actions_.rend(); ++it)
    if (auto why = undo(*it); !why.empty()) failed.push_back(why);
  actions_ = nlohmann::json::array();
  std::error_code ec;
  if (failed.empty()) fs::remove(file_, ec);
  return failed;
}

std::vector<std::string> restore_leftovers(const fs::path& dir, const std::string& boot_id,
                                           const fs::path& proc) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const auto name = e.path().filename().string();
    if (!name.starts_with("restore-") || !name.ends_with(".json")) continue;
    auto text = read_text(e.path());
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text.value_or(""));
    } catch (const nlohmann::json::exception&) {
      lines.push_back(e.path().string() + ": unreadable, left in place: " + text.value_or("").substr(0, 80));
      continue;
    }
    const long pid = j.value("pid", 0L);
    if (pid == ::getpid()) continue;
    if (pid > 0 && fs::exists(proc / std::to_string(pid)) && j.value("boot_id", "") == boot_id) continue;
    const auto actions = j.value("actions", nlohmann::json::array());
    if (j.value("boot_id", "") != boot_id) {
      fs::remove(e.path(), ec);
      lines.push_back(e.path().string() + ": from another boot (" + j.value("boot_id", "?") +
                      "), whose settings the reboot undid: removed");
      continue;
    }
    std::vector<std::string> failed;
    std::string undone;
    for (auto it = actions.rbegin(); it != actions.rend(); ++it) {
      if (auto why = undo(*it); !why.empty())
        failed.push_back(why);
      else
        undone += (undone.empty() ? "" : ", ") + it->value("what", it->value("path", ""));
    }
    if (failed.empty()) fs::remove(e.path(), ec);
    std::string line = "restored what schedlab pid " + std::to_string(pid) + " left changed (" +
                       e.path().string() + "): " + (undone.empty() ? std::string("nothing") : undone);
    for (const auto& f : failed) line += "; NOT restored: " + f;
    lines.push_back(line);
  }
  return lines;
}

}  // namespace schedlab::runtime
