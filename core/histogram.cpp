#include "core/histogram.hpp"

#include <algorithm>
#include <cmath>

namespace schedlab {
namespace {

constexpr std::int64_t kLinearLimitNs = 1'000'000;  // 1 ms of 1 us buckets
constexpr std::size_t kLinearBuckets = 1000;
constexpr std::size_t kPerDecade = 900;  // [L, 10L) in steps of L/100
constexpr int kDecades = 4;              // 1 ms .. 10 s
constexpr std::size_t kOverflow = kLinearBuckets + kPerDecade * kDecades;

}  // namespace

LatencyHistogram::LatencyHistogram() : counts_(kOverflow + 1, 0) {}

std::size_t LatencyHistogram::bucket_count() {
  return kOverflow + 1;
}

std::size_t LatencyHistogram::bucket_of(std::int64_t ns) {
  if (ns < kLinearLimitNs) return static_cast<std::size_t>(std::max<std::int64_t>(ns, 0) / 1000);
  std::int64_t lower = kLinearLimitNs;
  for (int d = 0; d < kDecades; ++d, lower *= 10) {
    if (ns < lower * 10) {
      auto step = lower / 100;
      return kLinearBuckets + static_cast<std::size_t>(d) * kPerDecade +
             static_cast<std::size_t>((ns - lower) / step);
    }
  }
  return kOverflow;
}

double LatencyHistogram::lower_us(std::size_t b) {
  if (b < kLinearBuckets) return static_cast<double>(b);
  if (b >= kOverflow) return 1e7;
  const auto d = (b - kLinearBuckets) / kPerDecade;
  const auto i = (b - kLinearBuckets) % kPerDecade;
  const double lower = 1000.0 * std::pow(10.0, static_cast<double>(d));
  return lower + static_cast<double>(i) * lower / 100;
}

double LatencyHistogram::upper_us(std::size_t b) {
  if (b < kLinearBuckets) return static_cast<double>(b + 1);
  if (b >= kOverflow) return INFINITY;
  const auto d = (b - kLinearBuckets) / kPerDecade;
  return lower_us(b) + 1000.0 * std::pow(10.0, static_cast<double>(d)) / 100;
}

void LatencyHistogram::add(std::int64_t ns) {
  ++counts_[bucket_of(ns)];
  ++count_;
  max_ns_ = std::max(max_ns_, ns);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
}

double LatencyHistogram::percentile_us(double q) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < counts_.size(); ++b) {
    seen += counts_[b];
    if (seen >= std::max<std::uint64_t>(rank, 1)) return lower_us(b);
  }
  return lower_us(kOverflow);
}

nlohmann::json LatencyHistogram::to_json() const {
  nlohmann::json buckets = nlohmann::json::array();
  for (std::size_t b = 0; b < kOverflow; ++b)
    if (counts_[b]) buckets.push_back({lower_us(b), upper_us(b), counts_[b]});
  return {{"unit", "us"},
          {"buckets", buckets},
          {"overflow_from_us", lower_us(kOverflow)},
          {"overflow", counts_[kOverflow]},
          {"count", count_},
          {"max_us", static_cast<double>(max_ns_) / 1000.0}};
}

}  // namespace schedlab
