// NVFP4 tensors: e2m1 values (two per byte) with one e4m3 scale per 16
// consecutive K elements and an optional fp32 global scale:
//   x[l][r][k] = e2m1(values) * e4m3(scale[l][r][k/16]) * global_scale.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kestrel/status.h"
#include "kestrel/tensor.h"

namespace kestrel {

enum class ScaleLayout : uint8_t {
  kLinear,   // [L][rows][K/16] row-major (row stride may be larger)
  kBlocked,  // the cuBLAS/CUTLASS "128x4" layout, rows padded to 128, k-blocks to 4
};

const char* scale_layout_name(ScaleLayout layout);

// Byte offset of scale (row, kblock) of batch b in the blocked layout.
inline int64_t blocked_scale_offset(int64_t b, int64_t row, int64_t kblock, int64_t rows,
                                    int64_t k) {
  const int64_t rest_k = (k + 63) / 64, rest_mn = (rows + 127) / 128;
  return b * rest_mn * rest_k * 512 + ((row / 128) * rest_k + kblock / 4) * 512 +
         (row % 32) * 16 + ((row % 128) / 32) * 4 + kblock % 4;
}
// Bytes of a blocked scale tensor holding L batches of rows x K values.
inline int64_t blocked_scale_bytes(int64_t rows, int64_t k, int64_t batches) {
  return batches * ((rows + 127) / 128) * ((k + 63) / 64) * 512;
}

// A view of one NVFP4 tensor of L x rows x K values.
//   values: kE2M1x2, rank 3 [L][rows][K/2] (rank 2 means L = 1); row and batch
//           strides may exceed the dense ones.
//   scales: kE4M3; linear: rank 3 [L][rows][K/16] (rank 2 means L = 1);
//           blocked: rank 1 of blocked_scale_bytes(rows, K, L) bytes.
struct Nvfp4View {
  TensorView values;
  TensorView scales;
  ScaleLayout layout = ScaleLayout::kLinear;
  float global_scale = 1.0f;

  int64_t batches() const { return values.rank == 3 ? values.shape[0] : 1; }
  int64_t rows() const { return values.shape[values.rank - 2]; }
  int64_t k() const { return values.shape[values.rank - 1] * 2; }
};

// Checks an Nvfp4View's dtypes, ranks, shapes and strides; `name` prefixes
// every message ("A.scales: ...").
Status validate_nvfp4(const Nvfp4View& t, const char* name);

// x (fp32/bf16/fp16, rank 2 or 3, [L][rows][K], K % 16 == 0) -> out.
// out.global_scale is an input: scale = e4m3(amax16 / 6 / global_scale) (RNE,
// saturating at 448), value = e2m1(x / (scale * global_scale)) rounded to
// nearest, ties to the even code. Blocked padding is written as zero.
Status quantize_nvfp4(const TensorView& x, const Nvfp4View& out, cudaStream_t stream);

// in -> y (fp32/bf16/fp16, same [L][rows][K] shape): y = e2m1 * scale * global_scale.
Status dequantize_nvfp4(const Nvfp4View& in, const TensorView& y, cudaStream_t stream);

// Rewrites the scales of an L x rows x K NVFP4 tensor from one layout to the
// other (linear -> blocked zero-fills the padding).
Status convert_scale_layout(const TensorView& src, ScaleLayout src_layout, const TensorView& dst,
                            ScaleLayout dst_layout, int64_t rows, int64_t k, int64_t batches,
                            cudaStream_t stream);

}  // namespace kestrel
