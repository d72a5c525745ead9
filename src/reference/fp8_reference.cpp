// FP8 (e4m3) GEMM with a fused bf16 add, in float64. e4m3 products are exact
// in double and so are the sums (4 significant bits each, K in the millions
// before rounding), so acc is exact before the alpha multiply.
#include <cmath>

#include "common/nvfp4_codec.cuh"
#include "reference/binary16.h"
#include "reference/checks.h"
#include "reference/reference.h"

namespace kestrel::ref {

Fp8GemmAddResult fp8_gemm_add(const uint8_t* a, const uint8_t* b, const uint16_t* r, int64_t m,
                              int64_t n, int64_t k, double alpha) {
  detail::require(m >= 0 && n >= 0 && k >= 0, "fp8_gemm_add: negative shape");
  // Decode once: a per-element decode inside the triple loop would dominate.
  std::vector<double> da(static_cast<size_t>(m * k)), db(size_t(n * k));
  for (size_t i = 0; i < da.size(); ++i) da[i] = e4m3_to_float(a[i]);
  for (size_t i = 0; i < db.size(); ++i) db[i] = e4m3_to_float(b[i]);
  Fp8GemmAddResult out;
  out.acc.resize(size_t(m * n));
  out.d_bf16.resize(size_t(m * n));
  out.acc_abs.resize(size_t(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const double* ra = &da[size_t(i * k)];
      const double* rb = &db[size_t(j * k)];
      double s = 0.0, s_abs = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) {
        s += ra[kk] * rb[kk];
        s_abs += std::fabs(ra[kk] * rb[kk]);
      }
      const size_t o = size_t(i * n + j);
      out.acc[o] = alpha * s;
      out.acc_abs[o] = std::fabs(alpha) * s_abs;
      // d = bf16(bf16(acc) + r): the sum of two bf16 values is exact in double,
      // so each bf16() is a single rounding from the exact value.
      out.d_bf16[o] = bf16_bits(bf16_value(bf16_bits(out.acc[o])) + bf16_value(r[o]));
    }
  }
  return out;
}

}  // namespace kestrel::ref
