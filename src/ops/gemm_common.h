// Pieces shared by the host sides of the NVFP4 GEMM and dual GEMM: operand
// validation, tile geometry, TMA maps, launch shape. Mirrors the constants of
// kernels/nvfp4_gemm.cuh.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "kestrel/nvfp4.h"
#include "runtime/device.h"
#include "runtime/launcher.h"

namespace kestrel::ops {

constexpr int kGemmBlockM = 128;  // weight rows per CTA
constexpr int kGemmBlockK = 128;  // K values per pipeline stage
constexpr int kGemmSmemLimit = 227 * 1024;
// Both operands are decoded as e2m1 / 2^14 (common/fp4_decode.cuh).
constexpr float kDecodeUnitSquared = 268435456.0f;  // 2^28

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Dynamic shared memory of one GEMM CTA with `weights` weight tiles per stage
// (1 for the GEMM, 2 for the dual GEMM).
int gemm_smem_bytes(int block_n, int stages, int weights = 1);
int gemm_max_stages(int block_n, int weights = 1);

struct GemmShape {
  int64_t batches, m, n, k;
  int64_t c_batch, c_row;  // output strides (elements)
};

// a: activations, b: weights, c: output. Checks formats, shapes, alignment.
Status validate_gemm(const Nvfp4View& a, const Nvfp4View& b, const TensorView& c,
                     const char* c_name, GemmShape* out);
Status check_gemm_config(int block_n, int stages, int split_k, const rt::DeviceInfo* dev,
                         int weights = 1);

struct GemmMaps {
  CUtensorMap w, x;
};
// w: the packed weights of b; x: the pre-passed fp16 activations.
Status make_gemm_maps(const Nvfp4View& b, const void* x16, const GemmShape& s, int block_n,
                      GemmMaps* out);
Status make_weight_map(const Nvfp4View& b, const GemmShape& s, CUtensorMap* out);
void weight_scale_strides(const Nvfp4View& b, long long* batch, long long* row);

rt::LaunchShape gemm_launch_shape(const GemmShape& s, int block_n, int stages, int split_k,
                                  int weights = 1);

}  // namespace kestrel::ops
