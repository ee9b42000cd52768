#include "collector/perf/ring_set.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <cerrno>
#include <cstdint>

#include "core/error.hpp"

namespace schedlab {

RingSet::~RingSet() {
  clear();
}

void RingSet::add(int perf_fd, std::size_t data_pages) {
  fds_.push_back(perf_fd);
  rings_.emplace_back(perf_fd, data_pages);
  ring_fds_.push_back(perf_fd);
}

void RingSet::add_to_last_ring(int perf_fd) {
  fds_.push_back(perf_fd);
  if (ring_fds_.empty()) throw SystemError("PERF_EVENT_IOC_SET_OUTPUT without a ring", EINVAL);
  if (::ioctl(perf_fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fds_.back()) != 0)
    throw SystemError("PERF_EVENT_IOC_SET_OUTPUT", errno);
}

void RingSet::drain_all() {
  for (auto& ring : rings_) ring.drain(on_record_);
}

void RingSet::drain_until_stopped() {
  std::vector<pollfd> fds;
  for (int fd : ring_fds_) fds.push_back({fd, POLLIN, 0});
  fds.push_back({stop_fd_, POLLIN, 0});
  for (;;) {
    const int rc = ::poll(fds.data(), fds.size(), -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || (fds.back().revents & POLLIN)) return;
    for (std::size_t i = 0; i + 1 < fds.size(); ++i)
      if (fds[i].revents & POLLHUP) fds[i].fd = -1;  // its task exited: it would wake us forever
    drain_all();
  }
}

void RingSet::start(SampleRing::RecordFn on_record) {
  if (fds_.empty()) return;
  on_record_ = std::move(on_record);
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) throw SystemError("eventfd for the perf ring drainer", errno);
  drainer_ = std::thread([this] { drain_until_stopped(); });
  for (int fd : fds_) ::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

void RingSet::stop() {
  for (int fd : fds_) ::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  if (drainer_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_fd_, &one, sizeof one);
    drainer_.join();
  }
  if (on_record_) drain_all();
}

void RingSet::clear() {
  if (drainer_.joinable()) stop();
  rings_.clear();
  ring_fds_.clear();
  for (int fd : fds_) ::close(fd);
  fds_.clear();
  if (stop_fd_ >= 0) ::close(stop_fd_);
  stop_fd_ = -1;
}

}  // namespace schedlab
