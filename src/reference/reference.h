// float64 CPU references: the oracle of every GPU test and of `kestrel check`.
// Inputs are host arrays in the library's formats; results are float64.
#pragma once
#include <cstdint>
#include <vector>

#include "kestrel/nvfp4.h"

namespace kestrel::ref {

// ---- NVFP4 (host copies of an Nvfp4View's data) ----
// Host NVFP4 tensor of L x rows x K, dense: values [L][rows][K/2],
// scales linear [L][rows][K/16] or blocked (blocked_scale_bytes bytes).
struct HostNvfp4 {
  int64_t batches = 1, rows = 0, k = 0;
  std::vector<uint8_t> values;
  std::vector<uint8_t> scales;
  ScaleLayout layout = ScaleLayout::kLinear;
  float global_scale = 1.0f;

  uint8_t scale_code(int64_t b, int64_t r, int64_t kblock) const;
  double value(int64_t b, int64_t r, int64_t kk) const;  // e2m1 * scale * global
};

// The NVFP4 recipe of include/kestrel/nvfp4.h, in float64 (exact).
HostNvfp4 quantize_nvfp4(const double* x, int64_t batches, int64_t rows, int64_t k,
                         float global_scale, ScaleLayout layout);
std::vector<double> dequantize_nvfp4(const HostNvfp4& t);  // [L][rows][K]
// Its two rounding steps: the block scale code of a block with this amax, and
// the signed e2m1 code of v in a block whose unit is scale * global_scale.
unsigned nvfp4_scale_code(double amax, float global_scale);
unsigned e2m1_code(double v, double unit);
std::vector<uint8_t> convert_scales(const std::vector<uint8_t>& src, ScaleLayout from,
                                    ScaleLayout to, int64_t rows, int64_t k, int64_t batches);

// c[l][m] = sum_k A[l][m][k] * B[l][0][k]   (A: L x M x K, B: L x 1 x K)
std::vector<double> gemv_nvfp4(const HostNvfp4& a, const HostNvfp4& b);
// C[l][m][n] = sum_k A[l][m][k] * B[l][n][k]
std::vector<double> gemm_nvfp4(const HostNvfp4& a, const HostNvfp4& b);
// C = silu(A B1^T) * (A B2^T), silu(g) = g / (1 + exp(-g))
std::vector<double> dual_gemm_nvfp4(const HostNvfp4& a, const HostNvfp4& b1, const HostNvfp4& b2);
// The GEMMs' packed weights (pack_gemm_weights, kernels/common/
// nvfp4_weight_order.cuh), values and scale codes: packed_weight_batch_bytes(
// rows, k) bytes per batch, the padding zero.
std::vector<uint8_t> pack_gemm_weights(const HostNvfp4& w);
// One GEMM per group; group g has its own A (M_g x K) and B (N x K).
std::vector<std::vector<double>> grouped_gemm_nvfp4(const std::vector<HostNvfp4>& a,
                                                     const std::vector<HostNvfp4>& b);

// ---- FP8 GEMM + add: acc = alpha * A B^T (A: M x K, B: N x K, e4m3 codes);
// d = bf16(bf16(acc) + r) with r as bf16 bits. Returns acc (float64), d bits
// and |alpha| sum_k |A[m][k] B[n][k]|, the scale of a summation's error.
struct Fp8GemmAddResult {
  std::vector<double> acc;
  std::vector<uint16_t> d_bf16;
  std::vector<double> acc_abs;
};
Fp8GemmAddResult fp8_gemm_add(const uint8_t* a, const uint8_t* b, const uint16_t* r, int64_t m,
                              int64_t n, int64_t k, double alpha);

// ---- Row reductions over x[M][N] (float64) ----
struct RmsNormFwd {
  std::vector<double> y, rstd;  // y [M][N], rstd [M]
};
// weight may be null (all ones). y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps).
RmsNormFwd rmsnorm_fwd(const double* x, const double* weight, int64_t m, int64_t n, double eps);
struct RmsNormBwd {
  std::vector<double> dx, dweight;  // dx [M][N], dweight [N] (empty when weight is null)
};
RmsNormBwd rmsnorm_bwd(const double* dy, const double* x, const double* weight,
                       const double* rstd, int64_t m, int64_t n);

std::vector<double> softmax_fwd(const double* x, int64_t m, int64_t n);
std::vector<double> softmax_bwd(const double* dy, const double* y, int64_t m, int64_t n);

enum class Reduction { kNone, kSum, kMean };
struct CrossEntropyFwd {
  std::vector<double> loss;  // [M] for kNone, [1] otherwise (mean over non-ignored; NaN if none)
  std::vector<double> lse;   // [M]
};
// torch.nn.functional.cross_entropy semantics (ignore_index, label_smoothing).
CrossEntropyFwd cross_entropy_fwd(const double* logits, const int64_t* target, int64_t m,
                                  int64_t v, int64_t ignore_index, double label_smoothing,
                                  Reduction reduction);
// dloss: [M] for kNone, [1] otherwise. Returns dlogits [M][V].
std::vector<double> cross_entropy_bwd(const double* dloss, const double* logits,
                                      const int64_t* target, const double* lse, int64_t m,
                                      int64_t v, int64_t ignore_index, double label_smoothing,
                                      Reduction reduction);

}  // namespace kestrel::ref
