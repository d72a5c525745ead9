// The deterministic generators: reproducible, and within the value ranges of
// the GPU MODE problems they imitate.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "common/nvfp4_codec.cuh"
#include "random.h"

namespace kestrel::testing {
namespace {

TEST(Random, SameSeedSameDataOtherSeedOtherData) {
  EXPECT_EQ(random_normal(100, 3), random_normal(100, 3));
  EXPECT_NE(random_normal(100, 3), random_normal(100, 4));
  const auto a = gpumode_nvfp4(GpuModeData::kGemm, 1, 8, 64, 9);
  const auto b = gpumode_nvfp4(GpuModeData::kGemm, 1, 8, 64, 9);
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.scales, b.scales);
}

TEST(Random, NormalHasUnitMoments) {
  const auto x = random_normal(200000, 1);
  double s = 0, s2 = 0;
  for (double v : x) s += v, s2 += v * v;
  EXPECT_NEAR(s / double(x.size()), 0.0, 0.01);
  EXPECT_NEAR(s2 / double(x.size()), 1.0, 0.01);
}

std::set<double> scale_values(const ref::HostNvfp4& t) {
  std::set<double> s;
  for (uint8_t c : t.scales) s.insert(e4m3_to_float(c));
  return s;
}
std::set<unsigned> byte_values(const ref::HostNvfp4& t) {
  return std::set<unsigned>(t.values.begin(), t.values.end());
}

TEST(Random, GpuModeRanges) {
  const auto gemv = gpumode_nvfp4(GpuModeData::kGemv, 2, 64, 256, 1);
  EXPECT_EQ(byte_values(gemv), (std::set<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(scale_values(gemv), (std::set<double>{0.0, 1.0, 2.0}));
  EXPECT_EQ(int64_t(gemv.values.size()), 2 * 64 * 128);
  EXPECT_EQ(int64_t(gemv.scales.size()), 2 * 64 * 16);

  const auto gemm = gpumode_nvfp4(GpuModeData::kGemm, 1, 128, 512, 2);
  EXPECT_EQ(byte_values(gemm).size(), 256u);
  EXPECT_EQ(scale_values(gemm), (std::set<double>{0.0, 1.0, 2.0, 3.0}));

  const auto dual = gpumode_nvfp4(GpuModeData::kDual, 1, 128, 512, 3);
  for (uint8_t b : dual.values) ASSERT_EQ(b & ~0xBB, 0);
  EXPECT_EQ(byte_values(dual).size(), 64u);  // 6 free bits
  bool subnormal = false;
  for (uint8_t c : dual.scales) {
    ASSERT_LE(e4m3_to_float(c), 1.0f);
    subnormal |= c > 0 && c < 8;
  }
  EXPECT_TRUE(subnormal);

  const auto grouped = gpumode_nvfp4(GpuModeData::kGrouped, 1, 130, 256, 4);
  for (uint8_t b : grouped.values) ASSERT_EQ(b & ~0xBB, 0);
  EXPECT_EQ(scale_values(grouped), (std::set<double>{1.0, 2.0}));
}

TEST(Random, RealisticNvfp4UsesTheWholeScaleRange) {
  std::vector<double> x;
  const auto t = realistic_nvfp4(1, 64, 256, 5, ScaleLayout::kLinear, 1.0, &x);
  double amax = 0;
  for (double v : x) amax = std::fmax(amax, std::fabs(v));
  EXPECT_EQ(t.global_scale, float(amax / (6 * 448)));
  unsigned top = 0;
  for (uint8_t c : t.scales) top = std::max<unsigned>(top, c);
  EXPECT_GE(top, 0x7du);  // the block holding amax sits at (or next to) 448
  EXPECT_GE(scale_values(t).size(), 10u);
  const auto blocked = realistic_nvfp4(1, 64, 256, 5, ScaleLayout::kBlocked);
  EXPECT_EQ(blocked.values, t.values);
}

TEST(Random, E4m3Bf16AndTargets) {
  for (uint8_t c : random_e4m3(1000, 6, 100.0)) ASSERT_NE(c & 0x7f, 0x7f) << "no NaN codes";
  const auto r = random_bf16(1000, 7);
  for (uint16_t b : r) ASSERT_NE(b & 0x7f80, 0x7f80);
  const auto t = random_targets(10, 5, 8, -100, 4);
  ASSERT_EQ(t.size(), 10u);
  for (size_t i = 0; i < t.size(); ++i) {
    if ((i + 1) % 4 == 0) EXPECT_EQ(t[i], -100);
    else EXPECT_TRUE(t[i] >= 0 && t[i] < 5);
  }
}

}  // namespace
}  // namespace kestrel::testing
