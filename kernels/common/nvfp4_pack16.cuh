// Exact NVFP4 rounding of 2-byte inputs (bf16, fp16), two values per
// instruction, for the quantize kernel and its CPU tests.
//
// The float rule (common/nvfp4_codec.cuh) rounds |v| up past threshold i iff
// |v| > b_i, b_i = e2m1_round_up_bound(...). For an input a of a 2-byte
// format, a > b_i <=> a > B_i, where B_i is the largest value of that format
// that is <= b_i: if a > b_i >= B_i, fine; if a > B_i, a is at least the next
// value above B_i, which is > b_i. So the bounds are converted once per scale
// code (a table), and the rounding runs on two values per instruction: a
// packed compare per bound (set.gt.{bf16x2,f16x2}: 1.0 or 0.0 per half) and a
// packed add of the results onto an offset whose mantissa's low bits are then
// the code (128 + code in bf16, 1024 + code in fp16; exact, small integers).
// A thermometer sum rather than a binary search: the compares and the
// selects of a search both run on the half-rate integer pipe, the adds run
// on the FMA pipe. NaN compares false, so it passes no bound (code 0), and
// inf passes every finite bound (code 7), exactly as in the float rule.
//
// The block scale comes from the same table: the scale code is the number of
// e4m3 midpoints (times 6 * global scale) that amax exceeds, so from a guess g
// at most one step away it is g - 1 + [amax > step(g - 1)] + [amax > step(g)].
//
// On the host every packed operation is emulated half by half, so that the
// CPU tests can check the whole encoder exhaustively.
#pragma once
#include "common/nvfp4_codec.cuh"
#if defined(__CUDACC_RTC__)
#include <cuda/std/cstdint>
#else
#include <cstdint>
#endif

namespace kestrel {

enum class Half16 { kBf16, kFp16 };

constexpr unsigned kScaleCodes = 0x7f;  // e4m3 scale codes 0..0x7e (0x7f is NaN)

// Exact float value of a bf16 / fp16 bit pattern (low 16 bits of h).
template <Half16 F>
KESTREL_HD float half16_to_float(uint32_t h) {
  h &= 0xffffu;
#if defined(__CUDA_ARCH__)
  if constexpr (F == Half16::kFp16) return __half2float(__ushort_as_half((unsigned short)h));
#endif
  if constexpr (F == Half16::kBf16) {
    return float_from_bits(h << 16);
  } else {
    const uint32_t e = (h >> 10) & 31u, m = h & 1023u;
    uint32_t bits;
    if (e == 31u) {
      bits = 0x7f800000u | (m << 13);  // inf, NaN
    } else if (e != 0u) {
      bits = ((e + 112u) << 23) | (m << 13);
    } else {
      bits = float_bits(float(m) * (1.0f / 16777216.0f));  // subnormal: m * 2^-24, exact
    }
    return float_from_bits(bits | ((h & 0x8000u) << 16));
  }
}

// Bits of the largest bf16 / fp16 value <= b, for a finite b >= 0 (a rounding
// bound): truncation toward zero, saturating at the largest finite value.
template <Half16 F>
KESTREL_HD uint32_t half16_floor_bits(float b) {
  if constexpr (F == Half16::kBf16) {
    return float_bits(b) >> 16;  // bf16 is the top half of fp32
  } else {
    if (b >= 65504.0f) return 0x7bffu;
    if (b < 1.0f / 16384.0f) return uint32_t(b * 16777216.0f);  // subnormal grid 2^-24
    return (float_bits(b) >> 13) - (112u << 10);  // rebias 127 -> 15, drop 13 mantissa bits
  }
}

KESTREL_HD uint32_t pair16(uint32_t h) { return h | (h << 16); }

// Packed constants of format F.
template <Half16 F>
KESTREL_HD constexpr uint32_t half16_pair(uint32_t bf16_bits, uint32_t fp16_bits) {
  return F == Half16::kBf16 ? bf16_bits * 0x10001u : fp16_bits * 0x10001u;
}

// Per half: 1.0 if a > b (IEEE: false when either is NaN), else 0.
template <Half16 F>
KESTREL_HD uint32_t gt2(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  if constexpr (F == Half16::kBf16) {
    asm("set.gt.bf16x2.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  } else {
    asm("set.gt.f16x2.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  }
  return d;
#else
  const uint32_t one = half16_pair<F>(0x3f80u, 0x3c00u);
  uint32_t d = 0;
  for (int s = 0; s < 32; s += 16)
    if (half16_to_float<F>(a >> s) > half16_to_float<F>(b >> s)) d |= one & (0xffffu << s);
  return d;
#endif
}

// Per half: a * b + c, for operands whose result is exact in format F (small
// integers here), so the host needs no rounding.
template <Half16 F>
KESTREL_HD uint32_t fma2_exact(uint32_t a, uint32_t b, uint32_t c) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  if constexpr (F == Half16::kBf16) {
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  } else {
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  }
  return d;
#else
  uint32_t d = 0;
  for (int s = 0; s < 32; s += 16)
    d |= half16_floor_bits<F>(half16_to_float<F>(a >> s) * half16_to_float<F>(b >> s) +
                              half16_to_float<F>(c >> s))
         << s;
  return d;
#endif
}

// Per half: max(a, b) ignoring NaN (NaN only if both are).
template <Half16 F>
KESTREL_HD uint32_t max2(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  if constexpr (F == Half16::kBf16) {
    asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  } else {
    asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  }
  return d;
#else
  uint32_t d = 0;
  for (int s = 0; s < 32; s += 16) {
    const float x = half16_to_float<F>(a >> s), y = half16_to_float<F>(b >> s);
    d |= (((y != y || x > y) ? a : b) >> s & 0xffffu) << s;
  }
  return d;
#endif
}

// Per half |a|. fp16 uses abs.f16x2, which ptxas folds into the compares'
// operand modifiers; bf16 compares have none, so bf16 pays one LOP3.
template <Half16 F>
KESTREL_HD uint32_t abs2(uint32_t a) {
#if defined(__CUDA_ARCH__)
  if constexpr (F == Half16::kFp16) {
    uint32_t d;
    asm("abs.f16x2 %0, %1;" : "=r"(d) : "r"(a));
    return d;
  }
#endif
  return a & 0x7fff7fffu;
}

// Per half, the largest magnitude of the 8 values in w (NaN only where all
// four are NaN).
template <Half16 F>
KESTREL_HD uint32_t amax_pair8(const uint32_t (&w)[4]) {
  return max2<F>(max2<F>(abs2<F>(w[0]), abs2<F>(w[1])), max2<F>(abs2<F>(w[2]), abs2<F>(w[3])));
}

// Block amax as a float from a per-half max: NaN is ignored, and an all-NaN
// block has amax 0, as with fmaxf(0, ...) over the values.
template <Half16 F>
KESTREL_HD float amax_of_pair(uint32_t m) {
  const float lo = half16_to_float<F>(m), hi = half16_to_float<F>(m >> 16);
#if defined(__CUDA_ARCH__)
  return fmaxf(fmaxf(lo, hi), 0.0f);
#else
  // Spelled out: the host's fmax returns NaN for a signaling NaN (a bf16 NaN
  // can be one); the GPU's ignores every NaN.
  const float top = lo != lo ? hi : (hi != hi || lo > hi ? lo : hi);
  return top > 0.0f ? top : 0.0f;
#endif
}

// Threshold between scale codes j and j + 1 (j < 0x7e) as a float bound:
// amax > it <=> amax / (6 * global_scale) rounds above code j.
KESTREL_HD float scale_step_bound(unsigned j, float global_scale) {
  return e2m1_round_up_bound((e4m3_to_float(j) + e4m3_to_float(j + 1)) * 3.0f, global_scale,
                             (j & 1u) != 0);
}

// The table of scale code c: the step bounds below and above it (so that one
// 8-byte load serves the guess at c), with -1 and +inf at the ends.
KESTREL_HD void scale_steps_around(unsigned c, float global_scale, float* below, float* above) {
  *below = c == 0u ? -1.0f : scale_step_bound(c - 1u, global_scale);
  *above = c + 1u >= kScaleCodes ? float_from_bits(0x7f800000u) : scale_step_bound(c, global_scale);
}

// Exact scale code from a guess at most one step away and the steps around it.
KESTREL_HD unsigned scale_code_from_guess(unsigned guess, float amax, float below, float above) {
  return guess - 1u + unsigned(amax > below) + unsigned(amax > above);
}

// Word i of scale code c's bound table: i < 7, bound i as a packed pair; i = 7,
// -bound 0 (a value x < -B0 is negative with a nonzero code).
template <Half16 F>
KESTREL_HD uint32_t e2m1_bound_word(unsigned c, unsigned i, float global_scale) {
  const float mids[7] = KESTREL_E2M1_MIDPOINTS;
  const unsigned t = i < 7u ? i : 0u;
  const float b =
      e2m1_round_up_bound(rn_mul(mids[t], e4m3_to_float(c)), global_scale, (t & 1u) != 0);
  return pair16(half16_floor_bits<F>(b)) | (i < 7u ? 0u : 0x80008000u);
}

// Codes of 8 consecutive values, w[j] = values 2j (low half) and 2j + 1, with
// bound table `bt` (e2m1_bound_word 0..7): the 8 nibbles in output order.
template <Half16 F>
KESTREL_HD uint32_t e2m1_encode8(const uint32_t (&w)[4], const uint32_t (&bt)[8]) {
  const uint32_t one = half16_pair<F>(0x3f80u, 0x3c00u), eight = half16_pair<F>(0x4100u, 0x4800u);
  // 2^7 (bf16) / 2^10 (fp16): the mantissa's unit is 1, its low bits hold the sum.
  const uint32_t offset = half16_pair<F>(0x4300u, 0x6400u);
  uint32_t sum[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t a = abs2<F>(w[j]);
    uint32_t s = fma2_exact<F>(gt2<F>(a, bt[0]), one, offset);
#pragma unroll
    for (int i = 1; i < 7; ++i) s = fma2_exact<F>(gt2<F>(a, bt[i]), one, s);
    // Negative with a nonzero code (w < -B0): the sign bit, 8.
    sum[j] = fma2_exact<F>(gt2<F>(bt[7], w[j]), eight, s);
  }
  // Drop the offsets: x = codes 0 and 2 in bytes 0 and 1, codes 1 and 3 in
  // bytes 2 and 3 (low nibbles); x + (x >> 12) has codes 0..3 in order in its
  // low 16 bits. The same for codes 4..7.
  const uint32_t bias = offset + (offset << 8);
  const uint32_t x = sum[0] + (sum[1] << 8) - bias, y = sum[2] + (sum[3] << 8) - bias;
#if defined(__CUDA_ARCH__)
  return __byte_perm(x + (x >> 12), y + (y >> 12), 0x5410);  // one PRMT: both low halves
#else
  return ((x + (x >> 12)) & 0xffffu) | ((y + (y >> 12)) << 16);
#endif
}

}  // namespace kestrel
