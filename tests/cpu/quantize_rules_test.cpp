// Self-checks of the reference quantizer that the golden cases do not reach:
// ties, signed zeros, saturation, zero scales, and the nearest-value property
// on random data.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/nvfp4_codec.cuh"
#include "random.h"
#include "reference/reference.h"

namespace kestrel {
namespace {

// Codes of one 16-element block quantized with global scale g.
std::vector<unsigned> codes_of(const std::vector<double>& block, float g = 1.0f) {
  const auto t = ref::quantize_nvfp4(block.data(), 1, 1, 16, g, ScaleLayout::kLinear);
  std::vector<unsigned> c(16);
  for (int i = 0; i < 16; ++i) c[size_t(i)] = (i & 1) ? t.values[size_t(i / 2)] >> 4 : t.values[size_t(i / 2)] & 15u;
  return c;
}

TEST(QuantizeRules, TiesGoToTheEvenCode) {
  // amax 6 with g = 1 gives scale 1.0: the thresholds are the midpoints themselves.
  std::vector<double> b = {6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0,
                           -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5.0, 0.0};
  const auto c = codes_of(b);
  const unsigned want[] = {7, 0, 2, 2, 4, 4, 6, 6, 0, 10, 10, 12, 12, 14, 14, 0};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(c[size_t(i)], want[i]) << "x = " << b[size_t(i)];
}

TEST(QuantizeRules, JustPastEachTieRoundsAway) {
  std::vector<double> b(16, 0.0);
  b[0] = 6.0;
  const double mids[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  for (int i = 0; i < 7; ++i) {
    b[size_t(1 + i)] = std::nextafter(mids[i], 10.0);
    b[size_t(8 + i)] = std::nextafter(mids[i], 0.0);
  }
  const auto c = codes_of(b);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(c[size_t(1 + i)], unsigned(i + 1)) << "just above " << mids[i];
    EXPECT_EQ(c[size_t(8 + i)], unsigned(i)) << "just below " << mids[i];
  }
}

TEST(QuantizeRules, SignedZerosAndTinyNegativesAreCodeZero) {
  std::vector<double> b(16, 0.0);
  b[0] = 6.0;
  b[1] = -0.0;
  b[2] = -0.1;    // rounds to magnitude 0
  b[3] = -0.25;   // the tie at the first threshold: stays 0
  b[4] = -0.26;   // rounds to -0.5
  const auto c = codes_of(b);
  EXPECT_EQ(c[1], 0u);
  EXPECT_EQ(c[2], 0u);
  EXPECT_EQ(c[3], 0u);
  EXPECT_EQ(c[4], 9u);
}

TEST(QuantizeRules, ScaleSaturatesAt448AndValuesAtCode7) {
  // amax / 6 / g = 1000 > 448: scale 448 (0x7e), the large values all code 7.
  std::vector<double> b(16, 1.0);
  b[0] = 6000.0;
  b[1] = -3000.0;
  const auto t = ref::quantize_nvfp4(b.data(), 1, 1, 16, 1.0f, ScaleLayout::kLinear);
  EXPECT_EQ(t.scales[0], 0x7e);
  EXPECT_EQ(t.values[0], 0xF7);  // low nibble 7 (6000 -> 2688), high nibble 15 (-3000 -> -2688)
  EXPECT_EQ(t.value(0, 0, 0), 2688.0);
}

TEST(QuantizeRules, ScaleCodeZeroMakesEveryNonzeroValueCode7) {
  // amax / 6 below half the smallest e4m3 subnormal: scale code 0, unit 0.
  std::vector<double> b(16, 0.0);
  b[0] = 1e-5;
  b[1] = -1e-6;
  const auto t = ref::quantize_nvfp4(b.data(), 1, 1, 16, 1.0f, ScaleLayout::kLinear);
  EXPECT_EQ(t.scales[0], 0);
  EXPECT_EQ(t.values[0], 0xF7);
  EXPECT_EQ(t.values[1], 0x00);
  EXPECT_EQ(t.value(0, 0, 0), 0.0);
}

TEST(QuantizeRules, ScaleIsE4m3OfAmaxOver6OverGlobal) {
  const auto x = testing::random_normal(64 * 64, 11, 3.0);
  const float g = 0.0371f;
  const auto t = ref::quantize_nvfp4(x.data(), 2, 32, 64, g, ScaleLayout::kLinear);
  for (int64_t blk = 0; blk < 2 * 32 * 4; ++blk) {
    double amax = 0.0;
    for (int i = 0; i < 16; ++i) amax = std::fmax(amax, std::fabs(x[size_t(blk * 16 + i)]));
    EXPECT_EQ(t.scales[size_t(blk)], e4m3_from_nonneg(amax / 6.0 / double(g))) << "block " << blk;
  }
}

// Every dequantized value is a nearest representable value of its block
// (value * scale * g over the 15 e2m1 values), so |x - dq| <= half a gap.
TEST(QuantizeRules, DequantizedIsANearestRepresentableValue) {
  std::vector<double> x;
  const auto t = testing::realistic_nvfp4(3, 40, 96, 5, ScaleLayout::kBlocked, 2.0, &x);
  const auto dq = ref::dequantize_nvfp4(t);
  ASSERT_EQ(dq.size(), x.size());
  double worst_rel = 0.0;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t r = 0; r < 40; ++r)
      for (int64_t kk = 0; kk < 96; ++kk) {
        const size_t i = size_t((b * 40 + r) * 96 + kk);
        const double unit = double(e4m3_to_float(t.scale_code(b, r, kk / 16))) * t.global_scale;
        const double err = std::fabs(x[i] - dq[i]);
        for (unsigned c = 0; c < 16; ++c)
          ASSERT_LE(err, std::fabs(x[i] - double(e2m1_to_float(c)) * unit))
              << "element " << i << ": code " << c << " is closer";
        worst_rel = std::fmax(worst_rel, err / unit);
      }
  // With amax / 6 rounded to e4m3 (<= 1/16 relative), |x| <= 6.375 units: the
  // largest gap is 2 units, so no error exceeds 1 unit.
  EXPECT_LE(worst_rel, 1.0);
}

TEST(QuantizeRules, RejectsKNotMultipleOf16) {
  std::vector<double> x(24, 1.0);
  EXPECT_THROW(ref::quantize_nvfp4(x.data(), 1, 1, 24, 1.0f, ScaleLayout::kLinear),
               std::invalid_argument);
}

}  // namespace
}  // namespace kestrel
