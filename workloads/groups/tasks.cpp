#include "workloads/groups/tasks.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace schedlab::groups {
namespace {

void check_stop(const Gate& g, const TaskId& id) {
  if (g.stop && g.stop->load(std::memory_order_relaxed))
    throw Error(id.describe() + ": stopped (the time limit or another task's failure)");
}

// A message buffer on cache lines of its own. hackbench's are on each task's stack; heap buffers of
// threads sit next to each other in malloc's arenas, and two receivers on different CPUs writing into
// one line would make it bounce at every message.
class MessageBuffer {
 public:
  static constexpr std::size_t kLine = 64;
  MessageBuffer(std::size_t size, char fill) : storage_(size + 3 * kLine, fill) {
    const auto at = reinterpret_cast<std::uintptr_t>(storage_.data());
    data_ = storage_.data() + ((kLine - at % kLine) % kLine) + kLine;
  }
  char* data() { return data_; }

 private:
  std::vector<char> storage_;
  char* data_;
};

}  // namespace

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string TaskId::describe() const {
  return "group " + std::to_string(group) + (sender ? " sender " : " receiver ") + std::to_string(index);
}

TaskId task_id(const Options& o, int k) {
  const int in_group = k % (2 * o.fds);
  return {k / (2 * o.fds), in_group % o.fds, in_group >= o.fds};
}

void TaskSlot::fail(const char* what) {
  failed = true;
  std::strncpy(error, what, sizeof error - 1);
  error[sizeof error - 1] = '\0';
}

std::vector<Channel> open_channels(Transport t, int count) {
  std::vector<Channel> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    int fds[2];
    // hackbench's fdpair(): a stream socketpair by default, a pipe with -p; default buffer sizes.
    const bool ok = t == Transport::kPipe ? ::pipe2(fds, O_CLOEXEC) == 0
                                          : ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0;
    if (!ok) {
      const int err = errno;
      close_channels(out);
      throw SystemError(t == Transport::kPipe ? "pipe2" : "socketpair(AF_UNIX, SOCK_STREAM)", err);
    }
    out.push_back({fds[0], fds[1]});
  }
  return out;
}

void close_channels(std::vector<Channel>& channels) {
  for (auto& c : channels) {
    if (c.read >= 0) ::close(c.read);
    if (c.write >= 0) ::close(c.write);
    c = {};
  }
}

void announce_and_wait(const TaskId& id, const Gate& g) {
  const char r = 'R';
  ssize_t n;
  while ((n = ::write(g.ready_write, &r, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) throw SystemError("write (ready)", errno);
  pollfd p{g.wake_read, POLLIN, 0};
  for (;;) {
    const int ready = ::poll(&p, 1, -1);
    if (ready == 1) break;
    if (ready < 0 && errno != EINTR) throw SystemError("poll (wake)", errno);
    check_stop(g, id);
  }
  // A go that releases the tasks of a run that is being abandoned (a task failed during the start).
  if (g.stop && g.stop->load(std::memory_order_relaxed))
    throw Error(id.describe() + ": stopped before the start");
}

void receive_all(const TaskId& id, int in_fd, const Options& o, const Gate& g, TaskSlot& slot) {
  const auto size = static_cast<std::size_t>(o.message_bytes);
  MessageBuffer data(size, 0);
  const std::uint64_t expected = static_cast<std::uint64_t>(o.fds) * static_cast<std::uint64_t>(o.loops);
  announce_and_wait(id, g);
  std::uint64_t got = 0;
  for (; got < expected; ++got) {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::read(in_fd, data.data() + done, size - done);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
      } else if (n == 0) {
        slot.messages = got;
        throw Error(id.describe() + ": the stream ended after " + std::to_string(got) + " of " +
                    std::to_string(expected) + " messages");
      } else if (errno == EINTR) {
        check_stop(g, id);
      } else {
        slot.messages = got;
        throw SystemError(id.describe() + ": read", errno);
      }
    }
  }
  slot.done_ns = monotonic_ns();
  slot.messages = got;
}

void send_all(const TaskId& id, const std::vector<int>& out_fds, const Options& o, const Gate& g) {
  const auto size = static_cast<std::size_t>(o.message_bytes);
  MessageBuffer data(size, '-');
  announce_and_wait(id, g);
  for (int i = 0; i < o.loops; ++i) {
    for (const int fd : out_fds) {
      std::size_t done = 0;
      while (done < size) {
        const ssize_t n = ::write(fd, data.data() + done, size - done);
        if (n >= 0) {
          done += static_cast<std::size_t>(n);
        } else if (errno == EINTR) {
          check_stop(g, id);
        } else {
          throw SystemError(id.describe() + ": write", errno);
        }
      }
    }
  }
}

}  // namespace schedlab::groups
