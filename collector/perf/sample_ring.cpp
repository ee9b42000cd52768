#include "collector/perf/sample_ring.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace schedlab {

SampleRing::SampleRing(int perf_fd, std::size_t data_pages) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (data_pages == 0 || (data_pages & (data_pages - 1)) != 0)
    throw InputError("perf ring buffer: " + std::to_string(data_pages) + " data pages is not a power of two");
  data_size_ = data_pages * page;
  map_size_ = data_size_ + page;
  base_ = ::mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_SHARED, perf_fd, 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    throw SystemError("mmap of the perf ring buffer (" + std::to_string(map_size_ / 1024) +
                          " KiB; kernel.perf_event_mlock_kb limits unprivileged users)",
                      errno);
  }
}

SampleRing::~SampleRing() {
  if (base_) ::munmap(base_, map_size_);
}

SampleRing::SampleRing(SampleRing&& other) noexcept
    : base_(other.base_), map_size_(other.map_size_), data_size_(other.data_size_) {
  other.base_ = nullptr;
}

std::size_t SampleRing::drain(const RecordFn& fn) {
  auto* meta = static_cast<perf_event_mmap_page*>(base_);
  const auto* data = static_cast<const unsigned char*>(base_) + (map_size_ - data_size_);
  const std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  std::uint64_t tail = meta->data_tail;
  std::size_t records = 0;
  while (tail + sizeof(perf_event_header) <= head) {
    const std::size_t offset = tail % data_size_;
    perf_event_header header;
    if (offset + sizeof header <= data_size_) {
      std::memcpy(&header, data + offset, sizeof header);
    } else {
      const std::size_t first = data_size_ - offset;
      std::memcpy(&header, data + offset, first);
      std::memcpy(reinterpret_cast<unsigned char*>(&header) + first, data, sizeof header - first);
    }
    if (header.size < sizeof header || tail + header.size > head) break;  // not written completely yet
    const unsigned char* record = data + offset;
    if (offset + header.size > data_size_) {
      scratch_.resize(header.size);
      const std::size_t first = data_size_ - offset;
      std::memcpy(scratch_.data(), data + offset, first);
      std::memcpy(scratch_.data() + first, data, header.size - first);
      record = reinterpret_cast<const unsigned char*>(scratch_.data());
    }
    fn(header, record + sizeof header, header.size - sizeof header);
    tail += header.size;
    ++records;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
  return records;
}

}  // namespace schedlab
