#pragma once
// A log-linear latency histogram: 1 us buckets up to 1 ms, then 100 buckets per decade up to
// 10 s (10 us wide from 1 ms, 100 us from 10 ms, ...), and an overflow bucket. Percentiles
// are read from it; the bundle stores it with explicit bounds.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace schedlab {

class LatencyHistogram {
 public:
  LatencyHistogram();
  void add(std::int64_t ns);  // negative values count as 0
  void merge(const LatencyHistogram& other);

  std::uint64_t count() const { return count_; }
  std::int64_t max_ns() const { return max_ns_; }
  // The lower bound, in us, of the bucket holding the q-quantile (q in (0, 1]); like
  // cyclictest's histogram, a value in [17 us, 18 us) reads as 17. 0 when empty.
  double percentile_us(double q) const;

  // {"unit": "us", "buckets": [[lower, upper, count], ...] (non-empty buckets only),
  //  "overflow_from_us", "overflow", "count", "max_us"}
  nlohmann::json to_json() const;

  static std::size_t bucket_of(std::int64_t ns);
  static double lower_us(std::size_t bucket);
  static double upper_us(std::size_t bucket);
  static std::size_t bucket_count();

 private:
  std::vector<std::uint64_t> counts_;  // the last one is the overflow bucket
  std::uint64_t count_ = 0;
  std::int64_t max_ns_ = 0;
};

}  // namespace schedlab
