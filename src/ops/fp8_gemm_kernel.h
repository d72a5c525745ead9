// The FP8 GEMM kernel's instantiation, shared memory and launch plan for a
// configuration: one definition shared by the launch, the width rule, the
// NVRTC compile checks, the bench's configuration space and the tests.
#pragma once
#include <cstdint>

#include "kestrel/fp8_gemm.h"
#include "runtime/kernel_spec.h"

namespace kestrel::ops {

// has_r: D = bf16(alpha A B^T) + R; else D = bf16(alpha A B^T).
rt::KernelSpec fp8_gemm_kernel_spec(const Fp8GemmConfig& cfg, bool has_r);
int fp8_gemm_smem_bytes(int consumer_groups, int block_n, int stages);
// The deepest ring of such tiles that fits the kernel's shared-memory limit.
int fp8_gemm_max_stages(int consumer_groups, int block_n);

// How a launch covers the tiles: whole waves of one CTA per SM, then the
// tiles of the last, partial wave, whole or cut into `parts` ranges of K (at
// most tail_split, as many as the wave's idle SMs and K's stages allow).
struct Fp8TailPlan {
  int64_t grid;        // CTAs
  int64_t tail_begin;  // the first tile cut into parts (all tiles when none is)
  int64_t tail_tiles;  // tiles cut into parts
  int parts;           // K ranges a tail tile is cut into (1: none)
};
// (The configuration's tile and tail_split; not its stages or raster.)
Fp8TailPlan fp8_gemm_tail_plan(int64_t m, int64_t n, int64_t k, int64_t batches,
                               const Fp8GemmConfig& cfg, int sm_count);

}  // namespace kestrel::ops
