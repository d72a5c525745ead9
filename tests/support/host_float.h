// fp16 / bf16 conversions on the host, round to nearest even, for building
// kernel inputs and reading kernel outputs in tests. Thin names over the one
// implementation in src/reference/binary16.h (double input: a float argument
// converts exactly, so float -> bits is a single rounding too).
#pragma once
#include <cstdint>
#include <vector>

#include "reference/binary16.h"

namespace kestrel::testing {

inline uint16_t float_to_fp16_bits(double x) { return ref::fp16_bits(x); }
inline float fp16_bits_to_float(uint16_t h) { return float(ref::fp16_value(h)); }  // exact
inline uint16_t float_to_bf16_bits(double x) { return ref::bf16_bits(x); }
inline float bf16_bits_to_float(uint16_t h) { return float(ref::bf16_value(h)); }  // exact

// Whole arrays, for comparisons against float64 references.
inline std::vector<double> fp16_to_doubles(const std::vector<uint16_t>& h) {
  std::vector<double> out(h.size());
  for (size_t i = 0; i < h.size(); ++i) out[i] = ref::fp16_value(h[i]);
  return out;
}
inline std::vector<double> bf16_to_doubles(const std::vector<uint16_t>& h) {
  std::vector<double> out(h.size());
  for (size_t i = 0; i < h.size(); ++i) out[i] = ref::bf16_value(h[i]);
  return out;
}
inline std::vector<uint16_t> to_fp16_bits(const std::vector<double>& x) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = ref::fp16_bits(x[i]);
  return out;
}
inline std::vector<uint16_t> to_bf16_bits(const std::vector<double>& x) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = ref::bf16_bits(x[i]);
  return out;
}

}  // namespace kestrel::testing
