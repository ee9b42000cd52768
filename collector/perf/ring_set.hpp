#pragma once
// The mmap rings of a set of sampling perf events, drained by one thread that sleeps until a ring
// reaches its watermark (the kernel wakes it) or stop() is called: not a poller beside the workload.
#include <cstddef>
#include <thread>
#include <vector>

#include "collector/perf/sample_ring.hpp"

namespace schedlab {

class RingSet {
 public:
  RingSet() = default;
  ~RingSet();
  RingSet(const RingSet&) = delete;
  RingSet& operator=(const RingSet&) = delete;

  // Takes ownership of `perf_fd` (closed by clear()); maps `data_pages` pages; throws SystemError.
  void add(int perf_fd, std::size_t data_pages);
  // Takes ownership of `perf_fd` and sends its records into the ring added last (same CPU), so
  // that one ring holds several events in time order; throws SystemError.
  void add_to_last_ring(int perf_fd);
  // Enables every event and starts the drainer; `on_record` runs on the drainer thread, and after
  // stop() on the caller's.
  void start(SampleRing::RecordFn on_record);
  // Disables every event, stops the drainer and drains what is left.
  void stop();
  void clear();
  bool empty() const { return fds_.empty(); }
  std::size_t rings() const { return rings_.size(); }

 private:
  void drain_all();
  void drain_until_stopped();

  std::vector<int> fds_;       // every event
  std::vector<int> ring_fds_;  // the events that own a ring
  std::vector<SampleRing> rings_;
  SampleRing::RecordFn on_record_;
  int stop_fd_ = -1;
  std::thread drainer_;
};

}  // namespace schedlab
