// Order statistics and L2 rotation arithmetic of the benchmark timer.
#include <gtest/gtest.h>

#include "bench/stats.h"
#include "bench/timer.h"

namespace kestrel::bench {
namespace {

TEST(BenchStats, MedianOfOddCountIsTheMiddleValue) {
  const Stats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
}

TEST(BenchStats, MedianOfEvenCountAveragesTheMiddlePair) {
  EXPECT_DOUBLE_EQ(summarize({4, 1, 3, 2}).median, 2.5);
  EXPECT_DOUBLE_EQ(summarize({7, 9}).median, 8);
}

TEST(BenchStats, OneOutlierDoesNotMoveTheMedian) {
  EXPECT_DOUBLE_EQ(summarize({10, 10, 10, 10, 1e6}).median, 10);
}

TEST(BenchStats, PercentilesInterpolateBetweenRanks) {
  // 0..10: rank position q * 10 is the value itself.
  std::vector<double> v;
  for (int i = 10; i >= 0; --i) v.push_back(i);
  const Stats s = summarize(v);
  EXPECT_DOUBLE_EQ(s.p10, 1);
  EXPECT_DOUBLE_EQ(s.p90, 9);
  EXPECT_DOUBLE_EQ(percentile({0, 10}, 0.25), 2.5);
  EXPECT_DOUBLE_EQ(percentile({0, 10}, 2.0), 10);  // clamped
}

TEST(BenchStats, EmptyAndSingleSamples) {
  EXPECT_EQ(summarize({}).count, 0);
  EXPECT_DOUBLE_EQ(summarize({}).median, 0);
  const Stats one = summarize({42});
  EXPECT_DOUBLE_EQ(one.min, 42);
  EXPECT_DOUBLE_EQ(one.p10, 42);
  EXPECT_DOUBLE_EQ(one.p90, 42);
}

TEST(BenchTimer, RotationCoversTwiceTheL2) {
  const int64_t l2 = 50 << 20;
  EXPECT_EQ(rotation_slots(200 << 20, l2), 1);  // one call already exceeds 2 x L2
  EXPECT_EQ(rotation_slots(100 << 20, l2), 1);
  EXPECT_EQ(rotation_slots(10 << 20, l2), 10);
  EXPECT_EQ(rotation_slots(3 << 20, l2), 34);  // ceil(100 / 3)
  EXPECT_EQ(rotation_slots(1, l2), 256);       // capped
  EXPECT_EQ(rotation_slots(1, l2, 8), 8);
  EXPECT_EQ(rotation_slots(0, l2), 1);
}

}  // namespace
}  // namespace kestrel::bench
