// NVFP4 products in float64: GEMV, GEMM, gated dual GEMM, grouped GEMM.
// Each element e2m1 * e4m3 has at most 6 significant bits and lies in
// [2^-10, 2688], so products of two are exact in double and sums over K up to
// ~1000 are exact too (beyond, they lose a few double ulps); the two fp32
// global scales are applied once at the end. So the reference does not depend
// on a summation order, and kernels are judged against the true value.
#include <cmath>

#include "common/fp4_decode.cuh"
#include "common/nvfp4_codec.cuh"
#include "common/nvfp4_weight_order.cuh"
#include "reference/checks.h"
#include "reference/reference.h"

namespace kestrel::ref {
namespace {

// Rows of e2m1 * block scale (no global scale) of batch b: [rows][K].
std::vector<double> unscaled(const HostNvfp4& t, int64_t b) {
  std::vector<double> out(static_cast<size_t>(t.rows * t.k));
  for (int64_t r = 0; r < t.rows; ++r) {
    const uint8_t* bytes = t.values.data() + (b * t.rows + r) * (t.k / 2);
    for (int64_t kk = 0; kk < t.k; ++kk) {
      const unsigned code = (kk & 1) ? (bytes[kk / 2] >> 4) : (bytes[kk / 2] & 15u);
      out[size_t(r * t.k + kk)] =
          double(e2m1_to_float(code)) * double(e4m3_to_float(t.scale_code(b, r, kk / 16)));
    }
  }
  return out;
}

double dot(const double* a, const double* b, int64_t k) {
  double s = 0.0;
  for (int64_t i = 0; i < k; ++i) s += a[i] * b[i];
  return s;
}

// C[l][m][n] = g_a * g_b * sum_k A[l][m][k] B[l][n][k], B's rows limited to n_rows.
std::vector<double> gemm_rows(const HostNvfp4& a, const HostNvfp4& b, int64_t n_rows) {
  const double g = double(a.global_scale) * double(b.global_scale);
  std::vector<double> c(static_cast<size_t>(a.batches * a.rows * n_rows));
  for (int64_t l = 0; l < a.batches; ++l) {
    const std::vector<double> ua = unscaled(a, l), ub = unscaled(b, l);
    for (int64_t m = 0; m < a.rows; ++m)
      for (int64_t n = 0; n < n_rows; ++n)
        c[size_t((l * a.rows + m) * n_rows + n)] =
            g * dot(ua.data() + m * a.k, ub.data() + n * b.k, a.k);
  }
  return c;
}

void check_pair(const HostNvfp4& a, const HostNvfp4& b, const char* op) {
  detail::check_nvfp4(a, (std::string(op) + ": A").c_str());
  detail::check_nvfp4(b, (std::string(op) + ": B").c_str());
  detail::require(a.k == b.k, std::string(op) + ": A and B must have the same K");
  detail::require(a.batches == b.batches, std::string(op) + ": A and B must have the same L");
}

}  // namespace

std::vector<double> gemv_nvfp4(const HostNvfp4& a, const HostNvfp4& b) {
  check_pair(a, b, "gemv_nvfp4");
  // Row 0 of B is the vector: GPU MODE pads B to 128 rows and uses only row 0.
  detail::require(b.rows >= 1, "gemv_nvfp4: B needs at least one row");
  return gemm_rows(a, b, 1);  // [L][M][1] is [L][M]
}

std::vector<double> gemm_nvfp4(const HostNvfp4& a, const HostNvfp4& b) {
  check_pair(a, b, "gemm_nvfp4");
  return gemm_rows(a, b, b.rows);
}

std::vector<double> dual_gemm_nvfp4(const HostNvfp4& a, const HostNvfp4& b1,
                                    const HostNvfp4& b2) {
  check_pair(a, b1, "dual_gemm_nvfp4");
  check_pair(a, b2, "dual_gemm_nvfp4");
  detail::require(b1.rows == b2.rows, "dual_gemm_nvfp4: B1 and B2 must have the same N");
  std::vector<double> gate = gemm_rows(a, b1, b1.rows);
  const std::vector<double> up = gemm_rows(a, b2, b2.rows);
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = gate[i];
    gate[i] = g / (1.0 + std::exp(-g)) * up[i];  // silu(g) * u; for g << 0 exp -> inf, silu -> -0
  }
  return gate;
}

std::vector<uint8_t> pack_gemm_weights(const HostNvfp4& w) {
  detail::check_nvfp4(w, "pack_gemm_weights");
  const int64_t batch_bytes = packed_weight_batch_bytes(w.rows, w.k);
  std::vector<uint8_t> out(static_cast<size_t>(w.batches * batch_bytes), 0);
  const int64_t row_bytes = w.k / 2;
  for (int64_t l = 0; l < w.batches; ++l)
    for (int64_t r = 0; r < w.rows; ++r)
      for (int64_t j = 0; j < row_bytes; ++j)
        out[static_cast<size_t>(packed_weight_offset(w.rows, w.k, l, r, j))] = uint8_t(
            pack_fp4x8_bits(w.values[static_cast<size_t>((l * w.rows + r) * row_bytes + j)]));
  for (int64_t l = 0; l < w.batches; ++l)
    for (int64_t r = 0; r < w.rows; ++r)
      for (int64_t b = 0; b < w.k / 16; ++b)
        out[static_cast<size_t>(packed_scale_offset(w.rows, w.k, l, r, b))] = w.scale_code(l, r, b);
  return out;
}

std::vector<std::vector<double>> grouped_gemm_nvfp4(const std::vector<HostNvfp4>& a,
                                                     const std::vector<HostNvfp4>& b) {
  detail::require(a.size() == b.size(), "grouped_gemm_nvfp4: A and B need one entry per group");
  std::vector<std::vector<double>> c;
  c.reserve(a.size());
  for (size_t g = 0; g < a.size(); ++g) c.push_back(gemm_nvfp4(a[g], b[g]));
  return c;
}

}  // namespace kestrel::ref
