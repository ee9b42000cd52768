#include <gtest/gtest.h>

#include "core/histogram.hpp"

namespace schedlab {
namespace {

TEST(Histogram, MicrosecondBucketsBelowOneMillisecond) {
  EXPECT_EQ(LatencyHistogram::bucket_of(0), 0u);
  EXPECT_EQ(LatencyHistogram::bucket_of(999), 0u);
  EXPECT_EQ(LatencyHistogram::bucket_of(17'400), 17u);
  EXPECT_EQ(LatencyHistogram::bucket_of(-5), 0u);
  EXPECT_DOUBLE_EQ(LatencyHistogram::lower_us(17), 17.0);
  EXPECT_DOUBLE_EQ(LatencyHistogram::upper_us(17), 18.0);
}

TEST(Histogram, CoarserBucketsPerDecadeUpToTenSeconds) {
  // 1 ms .. 10 ms in 10 us steps, 10 ms .. 100 ms in 100 us steps.
  auto b = LatencyHistogram::bucket_of(1'234'000);  // 1234 us
  EXPECT_DOUBLE_EQ(LatencyHistogram::lower_us(b), 1230.0);
  EXPECT_DOUBLE_EQ(LatencyHistogram::upper_us(b), 1240.0);
  b = LatencyHistogram::bucket_of(60'000'000);  // 60 ms, the place_entity report's worst case
  EXPECT_DOUBLE_EQ(LatencyHistogram::lower_us(b), 60000.0);
  EXPECT_DOUBLE_EQ(LatencyHistogram::upper_us(b), 60100.0);
  b = LatencyHistogram::bucket_of(9'999'999'999);
  EXPECT_DOUBLE_EQ(LatencyHistogram::lower_us(b), 9'990'000.0);
  EXPECT_EQ(LatencyHistogram::bucket_of(10'000'000'000), LatencyHistogram::bucket_count() - 1);  // overflow
  // Every bucket's upper bound is the next one's lower bound: no gaps, no overlaps.
  for (std::size_t i = 0; i + 2 < LatencyHistogram::bucket_count(); ++i)
    ASSERT_DOUBLE_EQ(LatencyHistogram::upper_us(i), LatencyHistogram::lower_us(i + 1)) << i;
}

TEST(Histogram, PercentilesAreMonotonicAndCountAll) {
  LatencyHistogram h;
  for (int us = 1; us <= 100; ++us) h.add(us * 1000 + 500);  // 1.5 us .. 100.5 us
  h.add(50'000'000);                                         // one 50 ms outlier
  EXPECT_EQ(h.count(), 101u);
  EXPECT_DOUBLE_EQ(h.percentile_us(0.5), 51.0);  // rank 51 of 101
  EXPECT_DOUBLE_EQ(h.percentile_us(0.99), 100.0);
  EXPECT_DOUBLE_EQ(h.percentile_us(1.0), 50000.0);
  EXPECT_EQ(h.max_ns(), 50'000'000);
  double last = 0;
  for (double q : {0.01, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    EXPECT_GE(h.percentile_us(q), last) << q;
    last = h.percentile_us(q);
  }
}

TEST(Histogram, MergeAndJsonKeepEverySample) {
  LatencyHistogram a, b;
  a.add(3'000);
  b.add(3'200);
  b.add(20'000'000'000);  // 20 s: overflow
  a.merge(b);
  auto j = a.to_json();
  EXPECT_EQ(j["count"], 3);
  EXPECT_EQ(j["overflow"], 1);
  ASSERT_EQ(j["buckets"].size(), 1u);
  EXPECT_EQ(j["buckets"][0], nlohmann::json({3.0, 4.0, 2}));
  EXPECT_DOUBLE_EQ(j["max_us"].get<double>(), 20'000'000.0);
}

TEST(Histogram, EmptyReadsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.percentile_us(0.5), 0.0);
  EXPECT_EQ(h.count(), 0u);
}

}  // namespace
}  // namespace schedlab
