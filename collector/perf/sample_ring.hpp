#pragma once
// One perf_event mmap ring buffer (the metadata page plus 2^n data pages), read as perf does:
// acquire-load data_head, walk the records from data_tail (a record may wrap around the end of
// the buffer), release-store data_tail so the kernel can reuse the space.
#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace schedlab {

class SampleRing {
 public:
  // Maps `data_pages` (a power of two) pages of `perf_fd`'s buffer; throws SystemError.
  SampleRing(int perf_fd, std::size_t data_pages);
  ~SampleRing();
  SampleRing(SampleRing&& other) noexcept;
  SampleRing& operator=(SampleRing&&) = delete;
  SampleRing(const SampleRing&) = delete;
  SampleRing& operator=(const SampleRing&) = delete;

  // Calls fn(header, payload, payload_size) for every complete record, in order; returns how many.
  using RecordFn = std::function<void(const perf_event_header&, const unsigned char*, std::size_t)>;
  std::size_t drain(const RecordFn& fn);

  std::size_t data_bytes() const { return data_size_; }

 private:
  void* base_ = nullptr;
  std::size_t map_size_ = 0;
  std::size_t data_size_ = 0;
  std::string scratch_;  // a record that wraps around the end is copied here whole
};

}  // namespace schedlab
