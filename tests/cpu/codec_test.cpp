// The shared scalar codecs (kernels/common/nvfp4_codec.cuh) against the golden
// tables, and the e4m3 encoder against a brute-force nearest-even search.
#include <gtest/gtest.h>

#include <cmath>

#include "common/nvfp4_codec.cuh"
#include "golden_test.h"
#include "random.h"

namespace kestrel {
namespace {

TEST(Codec, E4m3DecodeMatchesGoldenForAll256Codes) {
  KESTREL_REQUIRE_GOLDEN();
  const auto c = testing::GoldenCase::load("codec_e4m3");
  const auto codes = c.bytes("codes");
  const auto values = c.doubles("values");
  ASSERT_EQ(codes.size(), 256u);
  for (size_t i = 0; i < codes.size(); ++i) {
    const double got = e4m3_to_float(codes[i]);
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << int(codes[i]);
    } else {
      // Bit-level equality, so that -0 (0x80) is checked too.
      EXPECT_EQ(got, values[i]) << "code 0x" << std::hex << int(codes[i]);
      EXPECT_EQ(std::signbit(got), std::signbit(values[i])) << "code 0x" << std::hex << int(codes[i]);
    }
  }
}

TEST(Codec, E2m1x2DecodeMatchesGoldenForAll256Bytes) {
  KESTREL_REQUIRE_GOLDEN();
  const auto c = testing::GoldenCase::load("codec_e2m1x2");
  const auto bytes = c.bytes("bytes");
  const auto e0 = c.doubles("element0"), e1 = c.doubles("element1");
  ASSERT_EQ(bytes.size(), 256u);
  for (size_t i = 0; i < bytes.size(); ++i) {
    const double lo = e2m1_to_float(bytes[i] & 15u), hi = e2m1_to_float(bytes[i] >> 4);
    EXPECT_EQ(lo, e0[i]) << "byte " << i;
    EXPECT_EQ(hi, e1[i]) << "byte " << i;
    EXPECT_EQ(std::signbit(lo), std::signbit(e0[i])) << "byte " << i;
    EXPECT_EQ(std::signbit(hi), std::signbit(e1[i])) << "byte " << i;
  }
}

// Nearest e4m3 code to x >= 0 by exhaustive search, ties to the even code,
// values past the largest finite (448) saturating to it.
unsigned brute_e4m3(double x) {
  unsigned best = 0;
  for (unsigned c = 1; c < 0x7f; ++c) {
    const double d = std::fabs(e4m3_to_float(c) - x), bd = std::fabs(e4m3_to_float(best) - x);
    if (d < bd || (d == bd && (c & 1u) == 0)) best = c;
  }
  return best;
}

TEST(Codec, E4m3EncodeRoundTripsEveryFiniteNonnegativeCode) {
  for (unsigned c = 0; c < 0x7f; ++c) EXPECT_EQ(e4m3_from_nonneg(e4m3_to_float(c)), c) << c;
}

TEST(Codec, E4m3EncodeRoundsMidpointsToEven) {
  for (unsigned c = 0; c + 1 < 0x7f; ++c) {
    const double lo = e4m3_to_float(c), hi = e4m3_to_float(c + 1), mid = 0.5 * (lo + hi);
    EXPECT_EQ(e4m3_from_nonneg(mid), (c & 1u) ? c + 1 : c) << "between codes " << c << " and " << c + 1;
    EXPECT_EQ(e4m3_from_nonneg(std::nextafter(mid, 0.0)), c);
    EXPECT_EQ(e4m3_from_nonneg(std::nextafter(mid, 1e9)), c + 1);
  }
}

TEST(Codec, E4m3EncodeSaturatesAndHandlesZeroAndTiny) {
  EXPECT_EQ(e4m3_from_nonneg(0.0), 0u);
  EXPECT_EQ(e4m3_from_nonneg(-0.0), 0u);
  EXPECT_EQ(e4m3_from_nonneg(std::ldexp(1.0, -10)), 0u);  // half the smallest subnormal: tie to 0
  EXPECT_EQ(e4m3_from_nonneg(std::nextafter(std::ldexp(1.0, -10), 1.0)), 1u);
  EXPECT_EQ(e4m3_from_nonneg(448.0), 0x7eu);
  EXPECT_EQ(e4m3_from_nonneg(463.99), 0x7eu);  // torch would give NaN from 464 on; we saturate
  EXPECT_EQ(e4m3_from_nonneg(1e30), 0x7eu);
  EXPECT_EQ(e4m3_from_nonneg(INFINITY), 0x7eu);
}

TEST(Codec, E4m3EncodeMatchesBruteForceOnRandomMagnitudes) {
  testing::Rng rng(7);
  for (int i = 0; i < 20000; ++i) {
    // Log-uniform over [2^-12, 2^10]: every binade, the subnormals and past 448.
    const double x = std::ldexp(1.0 + rng.uniform(), int(rng.below(22)) - 12);
    ASSERT_EQ(e4m3_from_nonneg(x), brute_e4m3(x)) << "x = " << x;
  }
}

}  // namespace
}  // namespace kestrel
