// NVFP4 batched GEMV (the decode step: weights x one token):
//   c[l][m] = a.global_scale * b.global_scale * sum_k A[l][m][k] * B[l][0][k]
#pragma once
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kestrel/nvfp4.h"

namespace kestrel {

// One point of the GEMV kernel's configuration space (for tuning).
// A warp streams its 16-row tile `run` groups (of 128 values) at a time,
// each row's run one contiguous copy, through `depth` shared-memory stages.
// The grid is as many CTAs as fit at once, fewer when that would leave a
// warp under `min_groups` groups to stream.
struct GemvConfig {
  int warps = 4;        // warps per CTA: 4 or 8
  int depth = 2;        // stages per warp (depth - 1 in flight): 2, 3 or 4
  int run = 4;          // groups per stage: 4 or 8 (256 or 512 bytes per row)
  int min_groups = 16;  // least work per warp: 8, 16, 32 or 64 groups

  std::string describe() const;  // "w4 d2 r8 g16"
};

// Every configuration the kernel accepts, for `kestrel tune`.
std::vector<GemvConfig> gemv_config_space();
// The heuristic pick for a shape on a GPU with `sm_count` SMs.
GemvConfig gemv_default_config(int64_t m, int64_t k, int64_t batches, int sm_count);

// a: L x M x K NVFP4 (any row/batch stride that keeps rows 8-byte aligned;
//    16-byte aligned rows take the fastest path).
// b: L x rows_b x K NVFP4 (rows_b >= 1, row 0 of each batch is the vector).
// c: fp16 or bf16, [L][M] (or [M] when L = 1), any row stride.
// K: a multiple of 16, at most 2^20. Scales: linear or blocked, per operand.
// config: nullptr for the heuristic.
Status gemv_nvfp4(const Nvfp4View& a, const Nvfp4View& b, const TensorView& c,
                  cudaStream_t stream, const GemvConfig* config = nullptr);

}  // namespace kestrel
