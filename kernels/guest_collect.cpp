#include "kernels/guest_collect.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <ostream>
#include <utility>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;

struct OwnedFd {
  int fd = -1;
  explicit OwnedFd(int f) : fd(f) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() {
    if (fd >= 0) ::close(fd);
  }
};

class Collector {
 public:
  Collector(fs::path from, fs::path to, std::ostream& console)
      : from_(std::move(from)), to_(std::move(to)), console_(console) {}

  // Copies `name` (relative to `from`: an experiment writes OUT/<id>/a/...) unless the same version (size
  // and modification time) was copied already.
  void copy(const std::string& name) {
    if (name.empty() || name.front() == '.' || name.find("/.") != std::string::npos) return;
    struct stat st {};
    const fs::path source = from_ / name;
    if (::stat(source.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    const Version version{st.st_size, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
    if (auto it = copied_.find(name); it != copied_.end() && it->second == version) return;
    try {
      auto content = read_text(source);
      if (!content) throw Error("cannot read " + source.string());
      if (name.find('/') != std::string::npos) fs::create_directories((to_ / name).parent_path());
      write_file_atomic(to_ / name, *content, /*replace=*/true);  // a plain rename: 9p accepts it
      copied_[name] = version;
      failed_.erase(name);
      console_ << kMarkCopied << " " << name << " " << content->size() << std::endl;
    } catch (const std::exception& e) {
      failed_[name] = e.what();
      console_ << "SCHEDLAB-WARN copy " << name << " to the output share: " << e.what() << std::endl;
    }
  }

  // Subdirectories too: inotify watches one directory, so those are found by this walk (each second).
  void copy_all() {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(from_, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) copy(fs::relative(it->path(), from_, ec).string());
  }

  int failures() const { return static_cast<int>(failed_.size()); }

 private:
  using Version = std::pair<long long, long long>;
  fs::path from_, to_;
  std::ostream& console_;
  std::map<std::string, Version> copied_;
  std::map<std::string, std::string> failed_;
};

}  // namespace

int collect_guest_files(const fs::path& from, const fs::path& to, std::ostream& console) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  if (::sigprocmask(SIG_BLOCK, &stop, nullptr) != 0) throw SystemError("sigprocmask", errno);
  OwnedFd signals(::signalfd(-1, &stop, SFD_CLOEXEC));
  if (signals.fd < 0) throw SystemError("signalfd", errno);
  OwnedFd watch(::inotify_init1(IN_CLOEXEC));
  if (watch.fd < 0) throw SystemError("inotify_init1", errno);
  if (::inotify_add_watch(watch.fd, from.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE) < 0)
    throw SystemError("watch " + from.string(), errno);

  Collector collector(from, to, console);
  collector.copy_all();  // anything finished before the watch was set
  alignas(inotify_event) char events[16384];
  for (;;) {
    pollfd fds[2] = {{watch.fd, POLLIN, 0}, {signals.fd, POLLIN, 0}};
    const int ready = ::poll(fds, 2, 1000);
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw SystemError("poll", errno);
    }
    if (ready == 0) {
      collector.copy_all();  // what went into subdirectories, which the watch does not see
      continue;
    }
    if (fds[1].revents & POLLIN) break;
    if (!(fds[0].revents & POLLIN)) continue;
    const ssize_t got = ::read(watch.fd, events, sizeof events);
    if (got <= 0) continue;
    for (ssize_t at = 0; at < got;) {
      const auto* event = reinterpret_cast<const inotify_event*>(events + at);
      if (event->mask & IN_Q_OVERFLOW) collector.copy_all();  // events were lost: look at everything
      if (event->len > 0) collector.copy(event->name);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
  collector.copy_all();  // the run has ended: whatever it left, finished or not
  return collector.failures();
}

}  // namespace schedlab::kernels
