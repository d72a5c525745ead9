// The packed 2-byte quantization path (kernels/common/nvfp4_pack16.cuh), run on
// the host with every packed operation emulated half by half, checked
// exhaustively: every bf16 and fp16 bit pattern, every scale code, a set of
// global scales from the subnormal to the huge, against the float rule of the
// fp32 path and the float64 reference.
#include "common/nvfp4_pack16.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "reference/binary16.h"
#include "reference/reference.h"

namespace kestrel {
namespace {

// Typical scales, scales whose thresholds need the FMA residual, and extremes
// that push the products towards subnormals (1e-38 * 2^-9 * 0.25) or beyond
// the 2-byte ranges (3e38).
const float kGlobalScales[] = {1.0f,  0.5f,    3.0f,           1.0f / 3.0f, 1e-3f,
                               0.37f, 3.5e-3f, 1.0f / 2688.0f, 2688.0f,     1e30f,
                               3e38f, 1e-30f,  1e-38f,         0x1p-126f};

template <Half16 F>
double exact_value(uint32_t h) {
  return F == Half16::kBf16 ? ref::bf16_value(uint16_t(h)) : ref::fp16_value(uint16_t(h));
}

template <Half16 F>
void check_half_to_float() {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = exact_value<F>(h);
    const float got = half16_to_float<F>(h);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(double(got), want) << std::hex << h;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << h;
    }
  }
}

TEST(Nvfp4Pack16, HalfToFloatIsExact) {
  check_half_to_float<Half16::kBf16>();
  check_half_to_float<Half16::kFp16>();
}

// half16_floor_bits(b) is the largest finite value <= b, at every value of the
// format and one float either side of it.
template <Half16 F>
void check_floor_bits() {
  const uint32_t max_finite = F == Half16::kBf16 ? 0x7f7fu : 0x7bffu;
  for (uint32_t h = 0; h <= max_finite; ++h) {
    const float v = float(exact_value<F>(h));
    ASSERT_EQ(half16_floor_bits<F>(v), h) << std::hex << h;
    ASSERT_EQ(half16_floor_bits<F>(std::nextafter(v, INFINITY)), h) << std::hex << h;
    if (h > 0) ASSERT_EQ(half16_floor_bits<F>(std::nextafter(v, 0.0f)), h - 1) << std::hex << h;
  }
  EXPECT_EQ(half16_floor_bits<F>(std::numeric_limits<float>::max()), max_finite);
}

TEST(Nvfp4Pack16, FloorBitsIsTheLargestValueBelow) {
  check_floor_bits<Half16::kBf16>();
  check_floor_bits<Half16::kFp16>();
}

template <Half16 F>
void check_encoder(float g) {
  const float mids[7] = KESTREL_E2M1_MIDPOINTS;
  std::vector<unsigned> want(65536);
  std::vector<double> value(65536);
  for (uint32_t h = 0; h < 65536; ++h) value[h] = exact_value<F>(h);
  int failures = 0;
  for (unsigned c = 0; c < kScaleCodes; ++c) {
    // The float rule of the fp32 path, and the reference (exact in double).
    float bound[7];
    for (int i = 0; i < 7; ++i)
      bound[i] = e2m1_round_up_bound(rn_mul(mids[i], e4m3_to_float(c)), g, (i & 1) != 0);
    const double unit = double(e4m3_to_float(c)) * double(g);
    for (uint32_t h = 0; h < 65536; ++h) {
      want[h] = e2m1_code(float(value[h]), bound);
      ASSERT_EQ(want[h], ref::e2m1_code(value[h], unit))
          << "float rule vs reference: g " << g << " scale code " << c << " input " << std::hex
          << h;
    }
    uint32_t table[8];
    for (unsigned i = 0; i < 8; ++i) table[i] = e2m1_bound_word<F>(c, i, g);
    // Each call encodes 8 patterns; the rotation by c puts every pattern at
    // every position over the scale codes.
    for (uint32_t base = 0; base < 65536; base += 8) {
      uint32_t pattern[8], w[4];
      for (uint32_t k = 0; k < 8; ++k) pattern[k] = base + ((k + c) & 7u);
      for (int j = 0; j < 4; ++j) w[j] = pattern[2 * j] | (pattern[2 * j + 1] << 16);
      const uint32_t codes = e2m1_encode8<F>(w, table);
      for (uint32_t k = 0; k < 8; ++k) {
        const unsigned got = (codes >> (4 * k)) & 15u;
        if (got != want[pattern[k]] && ++failures <= 10)
          ADD_FAILURE() << "g " << g << " scale code " << c << " input " << std::hex << pattern[k]
                        << " at position " << k << ": got " << got << ", want " << want[pattern[k]];
      }
    }
    ASSERT_EQ(failures, 0);
  }
}

TEST(Nvfp4Pack16, Bf16EncoderMatchesTheFloatRuleExhaustively) {
  for (float g : kGlobalScales) check_encoder<Half16::kBf16>(g);
}

TEST(Nvfp4Pack16, Fp16EncoderMatchesTheFloatRuleExhaustively) {
  for (float g : kGlobalScales) check_encoder<Half16::kFp16>(g);
}

// The scale code from the table matches the reference for every amax a 2-byte
// block can have, from any guess within one step, and the hardware guess (an
// e4m3 conversion of amax * scale_guess_factor, round to nearest, saturating)
// is within one step.
template <Half16 F>
void check_scale_codes(float g) {
  const float factor = scale_guess_factor(g);
  const uint32_t inf = F == Half16::kBf16 ? 0x7f80u : 0x7c00u;
  for (uint32_t h = 0; h <= inf; ++h) {
    const float amax = half16_to_float<F>(h);
    const unsigned want = ref::nvfp4_scale_code(amax, g);
    const unsigned hw_guess = e4m3_from_nonneg(double(rn_mul(amax, factor)));
    ASSERT_LE(hw_guess, want + 1) << "g " << g << " amax " << amax;
    ASSERT_LE(want, hw_guess + 1) << "g " << g << " amax " << amax;
    for (unsigned guess = want == 0 ? 0 : want - 1; guess <= want + 1 && guess < kScaleCodes;
         ++guess) {
      float below, above;
      scale_steps_around(guess, g, &below, &above);
      ASSERT_EQ(scale_code_from_guess(guess, amax, below, above), want)
          << "g " << g << " amax " << amax << " guess " << guess;
    }
  }
}

TEST(Nvfp4Pack16, ScaleCodeFromTheTableMatchesTheReference) {
  for (float g : kGlobalScales) {
    check_scale_codes<Half16::kBf16>(g);
    check_scale_codes<Half16::kFp16>(g);
  }
}

// amax over 8 values ignores NaN and signs, as fmaxf(0, |v|...) does.
template <Half16 F>
void check_amax() {
  const uint32_t specials[] = {0x0000u,
                               0x8000u,
                               0x0001u,
                               0x8001u,
                               0x7fffu,
                               0xffffu,
                               F == Half16::kBf16 ? 0x7f80u : 0x7c00u,
                               F == Half16::kBf16 ? 0xff80u : 0xfc00u,
                               0x3c00u,
                               0xbf80u};
  uint32_t state = 12345u;
  for (int trial = 0; trial < 20000; ++trial) {
    uint32_t v[8], w[4];
    for (uint32_t& x : v) {
      state = state * 1664525u + 1013904223u;
      x = (state >> 8) % 4 == 0 ? specials[(state >> 12) % 10] : state >> 16;
    }
    for (int j = 0; j < 4; ++j) w[j] = v[2 * j] | (v[2 * j + 1] << 16);
    double want = 0.0;  // the reference's rule: quiet NaNs, which fmax ignores
    for (uint32_t x : v) want = std::fmax(want, std::fabs(exact_value<F>(x)));
    ASSERT_EQ(double(amax_of_pair<F>(amax_pair8<F>(w))), want) << "trial " << trial;
  }
}

TEST(Nvfp4Pack16, AmaxIgnoresNaNAndSign) {
  check_amax<Half16::kBf16>();
  check_amax<Half16::kFp16>();
}

}  // namespace
}  // namespace kestrel
