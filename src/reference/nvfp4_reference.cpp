// NVFP4 format reference: element access, quantization, dequantization and
// scale-layout conversion, in float64. Decoding and the e4m3 scale rounding
// come from the codec header the GPU kernels use, so both sides agree on
// every bit by construction; the e2m1 rounding is done here in double, where
// every threshold mid * scale * global_scale is exact.
#include <cmath>

#include "common/nvfp4_codec.cuh"
#include "reference/checks.h"
#include "reference/reference.h"

namespace kestrel::ref {

// Signed e2m1 code of v for a block whose unit is scale * global_scale.
// The code of a magnitude is the number of thresholds mid[i] * unit it passes;
// a tie passes only odd thresholds, which lands on the even code. A value whose
// magnitude rounds to 0 gets code 0 (+0) whatever its sign: the golden vectors
// never hold the -0 code 8 (checked in tests/cpu/quantize_golden_test.cpp).
// NaN passes no threshold (code 0); +-inf passes all of them (code 7).
unsigned e2m1_code(double v, double unit) {
  static constexpr float kMid[] = KESTREL_E2M1_MIDPOINTS;
  const double mag = std::fabs(v);
  unsigned code = 0;
  if (unit == 0.0) {
    code = mag > 0.0 ? 7u : 0u;  // any nonzero value saturates; it decodes to 0 anyway
  } else {
    for (unsigned i = 0; i < 7; ++i) {
      const double t = double(kMid[i]) * unit;
      if (mag > t || (mag == t && (i & 1u))) ++code;
    }
  }
  return (code != 0 && v < 0.0) ? (code | 8u) : code;
}

// e4m3(amax / 6 / global_scale), exactly rounded (ties to even), saturating.
unsigned nvfp4_scale_code(double amax, float global_scale) {
  return e4m3_scale_fixup(e4m3_from_nonneg((amax / 6.0) / double(global_scale)), amax,
                          global_scale);
}

uint8_t HostNvfp4::scale_code(int64_t b, int64_t r, int64_t kblock) const {
  if (layout == ScaleLayout::kLinear) return scales[size_t((b * rows + r) * (k / 16) + kblock)];
  return scales[size_t(blocked_scale_offset(b, r, kblock, rows, k))];
}

double HostNvfp4::value(int64_t b, int64_t r, int64_t kk) const {
  const uint8_t byte = values[size_t((b * rows + r) * (k / 2) + kk / 2)];
  const unsigned code = (kk & 1) ? (byte >> 4) : (byte & 15u);
  return double(e2m1_to_float(code)) * double(e4m3_to_float(scale_code(b, r, kk / 16))) *
         double(global_scale);
}

HostNvfp4 quantize_nvfp4(const double* x, int64_t batches, int64_t rows, int64_t k,
                         float global_scale, ScaleLayout layout) {
  detail::require(batches >= 1 && rows >= 0, "quantize_nvfp4: bad shape");
  detail::require(k % 16 == 0, "quantize_nvfp4: K must be a multiple of 16");
  HostNvfp4 t;
  t.batches = batches;
  t.rows = rows;
  t.k = k;
  t.layout = layout;
  t.global_scale = global_scale;
  t.values.assign(size_t(batches * rows * (k / 2)), 0);
  // Zero fill: blocked padding must read as 0, and every real entry is written below.
  t.scales.assign(size_t(detail::scale_bytes(batches, rows, k, layout)), 0);
  const double g = global_scale;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      const double* row = x + (b * rows + r) * k;
      uint8_t* out = t.values.data() + (b * rows + r) * (k / 2);
      for (int64_t kb = 0; kb < k / 16; ++kb) {
        const double* blk = row + kb * 16;
        double amax = 0.0;
        for (int i = 0; i < 16; ++i) amax = std::fmax(amax, std::fabs(blk[i]));  // NaN ignored
        const unsigned sc = nvfp4_scale_code(amax, global_scale);
        const size_t soff = layout == ScaleLayout::kLinear
                                ? size_t((b * rows + r) * (k / 16) + kb)
                                : size_t(blocked_scale_offset(b, r, kb, rows, k));
        t.scales[soff] = uint8_t(sc);
        const double unit = double(e4m3_to_float(sc)) * g;  // exact: 4 + 24 significant bits
        for (int i = 0; i < 16; i += 2) {
          const unsigned lo = e2m1_code(blk[i], unit), hi = e2m1_code(blk[i + 1], unit);
          out[kb * 8 + i / 2] = uint8_t(lo | (hi << 4));
        }
      }
    }
  }
  return t;
}

std::vector<double> dequantize_nvfp4(const HostNvfp4& t) {
  detail::check_nvfp4(t, "dequantize_nvfp4");
  std::vector<double> y(static_cast<size_t>(t.batches * t.rows * t.k));
  size_t i = 0;
  for (int64_t b = 0; b < t.batches; ++b)
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t kk = 0; kk < t.k; ++kk) y[i++] = t.value(b, r, kk);
  return y;
}

std::vector<uint8_t> convert_scales(const std::vector<uint8_t>& src, ScaleLayout from,
                                    ScaleLayout to, int64_t rows, int64_t k, int64_t batches) {
  detail::require(batches >= 1 && rows >= 0 && k % 16 == 0, "convert_scales: bad shape");
  detail::require(int64_t(src.size()) == detail::scale_bytes(batches, rows, k, from),
                  "convert_scales: src has the wrong byte count for its layout");
  if (from == to) return src;
  std::vector<uint8_t> dst(static_cast<size_t>(detail::scale_bytes(batches, rows, k, to)), 0);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t kb = 0; kb < k / 16; ++kb) {
        const size_t lin = size_t((b * rows + r) * (k / 16) + kb);
        const size_t blk = size_t(blocked_scale_offset(b, r, kb, rows, k));
        if (to == ScaleLayout::kBlocked) dst[blk] = src[lin];
        else dst[lin] = src[blk];
      }
  return dst;
}

}  // namespace kestrel::ref
