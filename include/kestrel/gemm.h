// NVFP4 GEMM on Hopper tensor cores:
//   C[l][m][n] = a.global_scale * b.global_scale * sum_k A[l][m][k] * B[l][n][k]
// A: activations (M x K), B: weights (N x K), both NVFP4 (K-major).
#pragma once
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kestrel/nvfp4.h"

namespace kestrel {

// One point of the GEMM kernel's configuration space.
struct GemmConfig {
  int block_n = 128;  // tokens (rows of A) per CTA tile: 8..256, one of gemm_block_n_choices()
  int stages = 4;     // shared-memory pipeline depth
  int split_k = 1;    // CTAs splitting K: 1, 2, 4 or 8
  // split_k > 1: the CTAs of a tile add their accumulators through L2 (the
  // last to arrive stores) instead of forming a cluster that adds them over
  // DSMEM; no co-scheduling, so every split fits in one wave.
  bool split_l2 = false;

  // Whether the split goes through L2 (split_l2 means nothing without a split).
  bool splits_through_l2() const { return split_l2 && split_k > 1; }

  std::string describe() const;  // "bn128 s4 k1", "bn128 s4 k4 l2"
};

const std::vector<int>& gemm_block_n_choices();
std::vector<GemmConfig> gemm_config_space();
GemmConfig gemm_default_config(int64_t m, int64_t n, int64_t k, int64_t batches, int sm_count);

// a: L x M x K NVFP4 (activations); b: L x N x K NVFP4 (weights, rows 16-byte
// aligned, scales at even addresses: base and batch stride); c: fp16 or bf16
// [L][M][N] (or [M][N] when L = 1), any row stride.
// K: a multiple of 64. M = 1 runs the GEMV kernel.
// Runs a small pre-pass that expands A to fp16 in a stream-ordered scratch
// allocation (cudaMallocAsync on `stream`).
Status gemm_nvfp4(const Nvfp4View& a, const Nvfp4View& b, const TensorView& c,
                  cudaStream_t stream, const GemmConfig* config = nullptr);

// The SwiGLU up-projection, fused: C = silu(A B1^T) * (A B2^T), each product
// scaled by its global scales, fp32 epilogue. b1 and b2: L x N x K NVFP4 with
// the same scale layout; c as for gemm_nvfp4. One activation tile feeds both.
// `config` applies as for gemm_nvfp4 (a tile is 64 columns of C instead of
// 128).
Status dual_gemm_nvfp4(const Nvfp4View& a, const Nvfp4View& b1, const Nvfp4View& b2,
                       const TensorView& c, cudaStream_t stream,
                       const GemmConfig* config = nullptr);
GemmConfig dual_gemm_default_config(int64_t m, int64_t n, int64_t k, int64_t batches,
                                    int sm_count);

}  // namespace kestrel
