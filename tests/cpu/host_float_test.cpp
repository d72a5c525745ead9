// Host fp16 / bf16 conversions: exhaustive round trips of every bit pattern,
// the rounding corner cases, and (where the compiler has _Float16) agreement
// with the compiler's own double -> fp16 conversion on random values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "host_float.h"
#include "random.h"

namespace kestrel::testing {
namespace {

TEST(HostFloat, EveryFp16PatternRoundTrips) {
  for (unsigned b = 0; b < 65536; ++b) {
    const double v = ref::fp16_value(uint16_t(b));
    if (std::isnan(v)) {
      EXPECT_EQ(b & 0x7c00u, 0x7c00u);
      EXPECT_TRUE(std::isnan(fp16_bits_to_float(uint16_t(b))));
      continue;
    }
    ASSERT_EQ(float_to_fp16_bits(v), b) << "bits 0x" << std::hex << b;
  }
}

TEST(HostFloat, EveryBf16PatternRoundTripsAndMatchesFp32Truncation) {
  for (unsigned b = 0; b < 65536; ++b) {
    const double v = ref::bf16_value(uint16_t(b));
    if (std::isnan(v)) continue;
    ASSERT_EQ(float_to_bf16_bits(v), b) << "bits 0x" << std::hex << b;
    // bf16 is the top half of an fp32.
    const float f = bf16_bits_to_float(uint16_t(b));
    uint32_t u;
    std::memcpy(&u, &f, 4);
    ASSERT_EQ(u, uint32_t(b) << 16);
  }
}

TEST(HostFloat, Fp16RoundingCorners) {
  EXPECT_EQ(float_to_fp16_bits(1.0 + std::ldexp(1.0, -11)), 0x3c00u);      // tie -> even
  EXPECT_EQ(float_to_fp16_bits(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02u);  // tie -> even (up)
  EXPECT_EQ(float_to_fp16_bits(65519.99), 0x7bffu);                        // max finite 65504
  EXPECT_EQ(float_to_fp16_bits(65520.0), 0x7c00u);                         // tie past max -> inf
  EXPECT_EQ(float_to_fp16_bits(-1e10), 0xfc00u);
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0, -25)), 0x0000u);            // half the min subnormal
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.5, -25)), 0x0001u);
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0, -14)), 0x0400u);            // min normal
  EXPECT_EQ(float_to_fp16_bits(-std::ldexp(1.0, -30)), 0x8000u);           // -0
  EXPECT_EQ(float_to_fp16_bits(NAN) & 0x7e00u, 0x7e00u);                   // quiet NaN
}

TEST(HostFloat, Bf16RoundingCorners) {
  EXPECT_EQ(float_to_bf16_bits(1.0 + std::ldexp(1.0, -8)), 0x3f80u);      // tie -> even
  EXPECT_EQ(float_to_bf16_bits(1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82u);
  EXPECT_EQ(float_to_bf16_bits(3.4e38), 0x7f80u);                          // past max -> inf
  EXPECT_EQ(float_to_bf16_bits(std::ldexp(1.0, -134)), 0x0000u);           // half min subnormal: tie to 0
  EXPECT_EQ(float_to_bf16_bits(std::ldexp(1.0, -133)), 0x0001u);           // min subnormal
  EXPECT_EQ(float_to_bf16_bits(std::ldexp(1.0, -132)), 0x0002u);
  EXPECT_EQ(float_to_bf16_bits(-2.0), 0xc000u);
}

#if defined(__FLT16_MAX__)
TEST(HostFloat, Fp16AgreesWithTheCompilerOnRandomDoubles) {
  Rng rng(99);
  for (int i = 0; i < 200000; ++i) {
    const double x = std::ldexp(rng.normal(), int(rng.below(40)) - 28);
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(float_to_fp16_bits(x), want) << "x = " << x;
  }
}
#endif

}  // namespace
}  // namespace kestrel::testing
