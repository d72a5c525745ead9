// FP8 (e4m3) GEMM with a fused add on Hopper tensor cores:
//   D[l][m][n] = bf16( bf16(alpha * sum_k A[l][m][k] * B[l][n][k]) + R[l][m][n] )
// A (M x K) and B (N x K) float8_e4m3fn, K-major (torch._scaled_mm's A and
// B^T); R (a residual or positional embedding) and D bf16 row-major. Without
// R: D = bf16(alpha * A B^T).
#pragma once
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kestrel/status.h"
#include "kestrel/tensor.h"

namespace kestrel {

// One point of the FP8 GEMM kernel's configuration space.
struct Fp8GemmConfig {
  int block_n = 192;    // columns of D per CTA tile: 64, 128 or 192
  int stages = 4;       // shared-memory pipeline depth (128 K values a stage)
  int raster_rows = 8;  // row tiles of a raster group: the CTAs running at once share B in L2
  // K ranges each tile of the last, partial wave is cut into, run on the SMs
  // that wave would leave idle and added through L2 (1: none). At most this
  // many: as many as the idle SMs and K's 128-value stages allow.
  int tail_split = 1;
  // Consumer warpgroups per CTA, 64 rows of the tile each: 2, or 1 (tiles
  // of 64 rows, whose smaller A stages leave room for more of B in flight:
  // the heuristic's choice for M <= 64).
  int consumer_groups = 2;

  std::string describe() const;  // "bn192 s4 r8 t1", "bn64 s13 r8 t1 c1"
};

// Every configuration that fits in shared memory.
std::vector<Fp8GemmConfig> fp8_gemm_config_space();
Fp8GemmConfig fp8_gemm_default_config(int64_t m, int64_t n, int64_t k, int64_t batches,
                                      int sm_count);

// a: [L][M][K] (or [M][K]) e4m3; b: [L][N][K] e4m3; r: bf16 [L][M][N] or
// null (no add), which may be d itself (an in-place residual add) but must
// not otherwise overlap d; d: bf16 [L][M][N]. Any M, K >= 1, N a multiple
// of 8 (TMA stores clip in 16-byte units), rows 16-byte aligned: every base
// and row (and batch) stride a multiple of 16 bytes, so dense A and B need
// K a multiple of 16 (other K take padded rows).
// alpha: the product of the operands' fp32 scales (torch._scaled_mm's
// scale_a * scale_b). Without `config`: the heuristic's.
// A tail split keeps two workspaces per (device, stream): arrival counts and
// fp32 slots (at most SMs x 128 x block_n x 4 bytes), grown on demand,
// stream-ordered. Inside CUDA-graph capture a call that would need to grow
// one returns Unsupported, so call once with the largest shape before
// capturing. Results do not depend on the split's timing (deterministic).
Status fp8_gemm_add(const TensorView& a, const TensorView& b, float alpha, const TensorView* r,
                    const TensorView& d, cudaStream_t stream,
                    const Fp8GemmConfig* config = nullptr);

// The operands' fp32 scales in device memory, read when the kernel runs
// (torch._scaled_mm's scale_a and scale_b): dynamic scales need no host
// round trip, and a captured CUDA graph replays with the values they hold
// then. Null reads as 1. Each 4-byte aligned, in memory this GPU can read
// (device, managed or page-locked host memory).
struct Fp8DeviceScales {
  const float* a = nullptr;
  const float* b = nullptr;
};
// The same product with alpha = *scales.a * *scales.b, rounded to fp32 as a
// host alpha of that product would be (the same bits).
Status fp8_gemm_add(const TensorView& a, const TensorView& b, const Fp8DeviceScales& scales,
                    const TensorView* r, const TensorView& d, cudaStream_t stream,
                    const Fp8GemmConfig* config = nullptr);

}  // namespace kestrel
