// Scalar e2m1 / e4m3 codecs and the exact NVFP4 rounding rule, shared by the
// GPU kernels and the CPU references (bit-exact agreement by construction).
#pragma once
#include "common/host_device.cuh"
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif
#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <cstring>
#endif

namespace kestrel {

KESTREL_HD unsigned float_bits(float f) {
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
KESTREL_HD float float_from_bits(unsigned u) {
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
KESTREL_HD float rn_mul(float a, float b) {  // never contracted into an FMA
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
KESTREL_HD float exact_fma(float a, float b, float c) {
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// e2m1 magnitudes of codes 0..7 (code | 8 is the negative).
KESTREL_HD float e2m1_to_float(unsigned code) {
  const unsigned mag = code & 7u;
  // 0, 0.5, 1, 1.5, 2, 3, 4, 6: exponent e = mag >> 1, mantissa m = mag & 1.
  const float v = mag < 2 ? 0.5f * mag : float(1u << ((mag >> 1) - 1)) * (1.0f + 0.5f * (mag & 1u));
  return (code & 8u) ? -v : v;
}

// float8_e4m3fn: bias 7, no infinities, 0x7f / 0xff are NaN, max 448. On the
// GPU the hardware conversion (sm_89+) does it in two instructions.
KESTREL_HD float e4m3_to_float(unsigned code) {
#if defined(__CUDA_ARCH__)
  const __half_raw h = __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(code & 0xffu), __NV_E4M3);
  return __half2float(__half(h));
#else
  const unsigned e = (code >> 3) & 15u, m = code & 7u;
  float v;
  if (e == 15u && m == 7u) {
    v = float_from_bits(0x7fc00000u);
  } else if (e == 0u) {
    v = m * (1.0f / 512.0f);  // subnormal: m * 2^-9
  } else {
    const int shift = int(e) - 7;
    const float p = shift >= 0 ? float(1u << shift) : 1.0f / float(1u << -shift);
    v = p * (1.0f + m * 0.125f);
  }
  return (code & 0x80u) ? -v : v;
#endif
}

KESTREL_HD unsigned long long double_bits(double d) {
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
  return (unsigned long long)__double_as_longlong(d);
#else
  unsigned long long u;
  std::memcpy(&u, &d, 8);
  return u;
#endif
}
KESTREL_HD double double_from_bits(unsigned long long u) {
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
  return __longlong_as_double((long long)u);
#else
  double d;
  std::memcpy(&d, &u, 8);
  return d;
#endif
}
KESTREL_HD double round_half_even(double x) {
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
  return rint(x);
#else
  return std::nearbyint(x);  // default rounding mode: to nearest, ties to even
#endif
}

// Non-negative x (double) -> e4m3 code, round to nearest even, saturating at
// 448 (code 0x7e). Used for block scales, which are >= 0; NaN gives 0.
KESTREL_HD unsigned e4m3_from_nonneg(double x) {
  if (!(x > 0.0)) return 0u;
  if (x >= 448.0) return 0x7eu;
  // Binade exponent; below 2^-6 everything sits on the subnormal grid 2^-9.
  int e = int((double_bits(x) >> 52) & 0x7ff) - 1023;
  if (e < -6) e = -6;
  // q = x / 2^(e-3): the position on the 8-step grid of this binade (exact).
  const double q = x * double_from_bits((unsigned long long)(1023 + 3 - e) << 52);
  const unsigned r = unsigned(round_half_even(q));  // 0..16
  unsigned code;
  if (r >= 16u) {
    code = unsigned(e + 8) << 3;  // carried into the next binade, mantissa 0
  } else if (r < 8u) {
    code = r;  // subnormal (only when e == -6)
  } else {
    code = (unsigned(e + 7) << 3) | (r - 8u);
  }
  return code > 0x7eu ? 0x7eu : code;
}

// The block scale of the NVFP4 recipe: the e4m3 code nearest to
// amax / (6 * global_scale) in exact arithmetic (ties to the even code),
// saturating at 448. `candidate` may be any code at most one step away (a
// fast approximate conversion); the midpoint tests below make it exact. Each
// test is exact: a midpoint of two e4m3 values times 6 has at most 7
// significant bits, and its product with the fp32 global scale is resolved by
// the FMA residual (float amax) or is exact in double (double amax).
KESTREL_HD bool exceeds_scaled(float amax, float m6, float gs, bool tie_up) {
  const float p = rn_mul(m6, gs);
  const float err = exact_fma(m6, gs, -p);  // m6 * gs = p + err exactly
  return amax > p || (amax == p && (err < 0.0f || (err == 0.0f && tie_up)));
}
KESTREL_HD bool exceeds_scaled(double amax, float m6, float gs, bool tie_up) {
  const double t = double(m6) * double(gs);  // exact: 7 + 24 significant bits
  return amax > t || (amax == t && tie_up);
}
template <typename A>
KESTREL_HD unsigned e4m3_scale_fixup(unsigned c, A amax, float gs) {
  if (c < 0x7eu &&
      exceeds_scaled(amax, (e4m3_to_float(c) + e4m3_to_float(c + 1)) * 3.0f, gs, (c & 1u) != 0))
    return c + 1;
  if (c > 0u &&
      !exceeds_scaled(amax, (e4m3_to_float(c - 1) + e4m3_to_float(c)) * 3.0f, gs, (c & 1u) == 0))
    return c - 1;
  return c;
}

// Factor f of the kernels' scale guess e4m3(amax * f), f ~ 1 / (6 * global_scale),
// computed in double so that no global scale up to 3e38 makes it 0 (a guess
// of 0 for every block, or NaN for infinite amax). Below ~5e-40 it saturates
// at the largest float, and guesses can then be more than one step off.
KESTREL_HD float scale_guess_factor(float global_scale) {
  const double f = 1.0 / (6.0 * double(global_scale));
  return f < 3.4028234663852886e38 ? float(f) : 3.4028234663852886e38f;
}

// The seven rounding thresholds between consecutive e2m1 magnitudes are
// kE2m1Mid[i] * unit, unit = scale * global_scale. A magnitude v rounds up past
// threshold i when v > kE2m1Mid[i] * unit, or on a tie when i is odd (the upper
// code i + 1 is then the even one).
#define KESTREL_E2M1_MIDPOINTS {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}

// Largest float b such that (v > b) <=> v rounds up past the threshold
// t * unit, where t * unit is evaluated exactly (t = mid * scale is exact in
// fp32; the product with the global scale is resolved by its FMA residual).
KESTREL_HD float e2m1_round_up_bound(float t, float global_scale, bool tie_rounds_up) {
  const float p = rn_mul(t, global_scale);
  const float err = exact_fma(t, global_scale, -p);  // t*g = p + err exactly
  // v is a float: v > t*g  <=>  v > p (err >= 0)  or  v >= p (err < 0).
  const bool inclusive = err < 0.0f || (err == 0.0f && tie_rounds_up);
  if (!inclusive || p == 0.0f) return p;
  return float_from_bits(float_bits(p) - 1u);  // next float toward zero (p > 0)
}

// Signed e2m1 code of v in a block whose rounding bounds are `bound`
// (e2m1_round_up_bound of each midpoint): a branch-free binary search over the
// 7 sorted bounds. Values that round to zero keep code 0 (never -0), as the
// reference does; NaN passes no bound (code 0), +-inf passes all (code 7).
KESTREL_HD unsigned e2m1_code(float v, const float (&bound)[7]) {
#if defined(__CUDA_ARCH__)
  const float a = fabsf(v);
#else
  const float a = std::fabs(v);
#endif
  const bool hi = a > bound[3];
  const bool mid = a > (hi ? bound[5] : bound[1]);
  const bool lo = a > (mid ? (hi ? bound[6] : bound[2]) : (hi ? bound[4] : bound[0]));
  const unsigned mag = (unsigned(hi) << 2) | (unsigned(mid) << 1) | unsigned(lo);
  return mag | ((mag != 0u && v < 0.0f) ? 8u : 0u);
}

}  // namespace kestrel
