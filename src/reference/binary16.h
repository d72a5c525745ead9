// fp16 and bf16 on the host: round a double to nearest even (one rounding,
// straight from double, so no double-rounding through fp32) and decode bit
// patterns. Shared by the references (fp8_gemm_add's bf16 output) and by the
// test support (tests/support/host_float.h) so there is one implementation.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

namespace kestrel::ref {
namespace binary16_detail {

// A 16-bit IEEE-style format: 1 sign bit, (15 - mant) exponent bits, mant
// mantissa bits, bias = emax, minimum normal exponent 1 - emax.
struct Format {
  int mant, emax;
  int emin() const { return 1 - emax; }
  uint16_t exp_mask() const { return uint16_t(((1u << (15 - mant)) - 1u) << mant); }
};
constexpr Format kHalf{10, 15};
constexpr Format kBf16{7, 127};

// |x| rounded to the format (RNE, overflow to inf); x finite and nonzero.
inline double round_magnitude(double a, Format f) {
  int e = std::ilogb(a);
  if (e > f.emax) return std::numeric_limits<double>::infinity();
  if (e < f.emin()) e = f.emin();  // subnormals share the smallest normal quantum
  const double quantum = std::ldexp(1.0, e - f.mant);
  const double r = std::nearbyint(a / quantum) * quantum;  // a / quantum is exact; ties to even
  return r >= std::ldexp(1.0, f.emax + 1) ? std::numeric_limits<double>::infinity() : r;
}

inline uint16_t encode(double x, Format f) {
  const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  if (std::isnan(x)) return uint16_t(sign | f.exp_mask() | (1u << (f.mant - 1)));  // quiet NaN
  if (x == 0.0) return sign;
  const double a = std::isinf(x) ? x : round_magnitude(std::fabs(x), f);
  if (std::isinf(a)) return uint16_t(sign | f.exp_mask());
  if (a == 0.0) return sign;
  const int e = std::ilogb(a);
  if (e < f.emin()) return uint16_t(sign | unsigned(a / std::ldexp(1.0, f.emin() - f.mant)));
  const unsigned m = unsigned(a / std::ldexp(1.0, e - f.mant)) - (1u << f.mant);
  return uint16_t(sign | (unsigned(e + f.emax) << f.mant) | m);
}

inline double decode(uint16_t bits, Format f) {
  const unsigned e = (bits & f.exp_mask()) >> f.mant, m = bits & ((1u << f.mant) - 1u);
  double v;
  if (e == unsigned(f.exp_mask() >> f.mant)) {
    v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (e == 0) {
    v = std::ldexp(double(m), f.emin() - f.mant);
  } else {
    v = std::ldexp(double(m + (1u << f.mant)), int(e) - f.emax - f.mant);
  }
  return (bits & 0x8000u) ? -v : v;
}

}  // namespace binary16_detail

inline uint16_t fp16_bits(double x) { return binary16_detail::encode(x, binary16_detail::kHalf); }
inline double fp16_value(uint16_t bits) { return binary16_detail::decode(bits, binary16_detail::kHalf); }
inline uint16_t bf16_bits(double x) { return binary16_detail::encode(x, binary16_detail::kBf16); }
inline double bf16_value(uint16_t bits) { return binary16_detail::decode(bits, binary16_detail::kBf16); }

}  // namespace kestrel::ref
