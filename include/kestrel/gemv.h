// NVFP4 batched GEMV (the decode step: weights x one token):
//   c[l][m] = a.global_scale * b.global_scale * sum_k A[l][m][k] * B[l][0][k]
#pragma once
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kestrel/nvfp4.h"

namespace kestrel {

// Which GEMV kernel runs.
// - kWgmma (sm_90): a TMA ring feeds fp8 tensor cores; split-K work items
//   are claimed at run time by persistent CTAs on all SMs (deterministic).
//   Needs 16-byte aligned rows of A (base, row and batch strides), 4-byte
//   aligned B rows, and blocked A scales (16-byte aligned) or linear ones with
//   K % 64 == 0 and 4-byte aligned rows.
// - kRegister: CUDA-core loads into registers, mma.sync; any 8-byte aligned
//   rows and K % 16 == 0. The fallback when kWgmma's rules are not met.
enum class GemvKernel { kWgmma, kRegister };

// One point of the GEMV kernels' configuration space (for tuning).
struct GemvConfig {
  GemvKernel kernel = GemvKernel::kWgmma;
  int stages = 2;     // kWgmma: 128-row x 512-value stages in the TMA ring: 2..5
  int ctas_per_sm = 2;  // kWgmma: register budget for 1 or 2 CTAs per SM (2 needs stages 2)
  // kWgmma: 512-value chunks per work item (CTAs take items at run time; a
  // row tile cut into several items is summed from their partials): 0 picks
  // 2, or the whole row when it has at most 4 chunks; else 1..128.
  int chunks_per_item = 0;
  int row_tiles = 2;  // kRegister: 16-row tiles per CTA: 1, 2, 4 or 8
  int warps = 8;      // kRegister: warps per CTA (a multiple of row_tiles): 4, 8 or 16
  int cluster = 1;    // kRegister: CTAs of a cluster splitting K: 1, 2, 4 or 8
  int depth = 2;      // kRegister: groups of 128 K values in flight per lane: 1, 2 or 4
  // kRegister: A's groups in flight wait in a per-warp cp.async ring in shared
  // memory instead of registers (rows of A 16-byte aligned; else ignored).
  bool ring = false;

  std::string describe() const;  // "wgmma s2 x2", "wgmma s2 x2 i4", "rt2 w8 c1 d2 [ring]"
};

// Every configuration the kernel accepts, for `kestrel tune`.
std::vector<GemvConfig> gemv_config_space();
// The heuristic picks for a shape: the kernel (kRegister on every shape
// measured since session 49; kWgmma stays selectable through `config`), and
// a configuration of a kernel on a GPU with `sm_count` SMs.
GemvKernel gemv_default_kernel(int64_t m, int64_t k, int64_t batches);
GemvConfig gemv_default_config(int64_t m, int64_t k, int64_t batches, int sm_count,
                               GemvKernel kernel = GemvKernel::kRegister);

// a: L x M x K NVFP4 (any row/batch stride that keeps rows 8-byte aligned;
//    16-byte aligned rows take the fastest path).
// b: L x rows_b x K NVFP4 (rows_b >= 1, row 0 of each batch is the vector).
// c: fp16 or bf16, [L][M] (or [M] when L = 1), any row stride.
// K: a multiple of 16, at most 65536. Scales: linear or blocked, per operand.
// config: nullptr for the heuristic; a kWgmma config for operands that do not
// meet its rules is an error naming the rule.
// The kWgmma kernel keeps two workspaces per (device, stream): three counters
// (12 bytes) and, when rows are cut into several items, their partial sums
// (512 bytes per item); both grow on demand, stream-ordered. With cut rows
// the launch is cooperative (all CTAs resident at once).
// Inside CUDA-graph capture a call that would need to grow one returns
// Unsupported, so call once with the largest shape before capturing.
Status gemv_nvfp4(const Nvfp4View& a, const Nvfp4View& b, const TensorView& c,
                  cudaStream_t stream, const GemvConfig* config = nullptr);

}  // namespace kestrel
