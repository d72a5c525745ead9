// The NVFP4 GEMMs' activation pre-pass (kernels/nvfp4_act_prepass.cuh):
// A -> fp16 [L][rows_out][Kp] in the GEMM's K order, scales folded in.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kestrel/nvfp4.h"
#include "runtime/scratch.h"

namespace kestrel::ops {

constexpr int64_t kPrepassBlockK = 128;
// The pre-pass's values and the kernels' fp16 weight decode both carry
// e2m1 / 2^14 (common/fp4_decode.cuh): their products, 2^-28.
constexpr float kDecodeUnitSquared = 268435456.0f;  // 2^28
constexpr int kPrepassWarps = 4;          // per CTA; mirrors kernels/nvfp4_act_prepass.cuh
constexpr int kPrepassBlocksPerWarp = 8;  // blocks of kPrepassBlockK values

inline int64_t prepass_kp(int64_t k) {
  return (k + kPrepassBlockK - 1) / kPrepassBlockK * kPrepassBlockK;
}

// `a` must already be validated. Allocates `out` on the stream: rows_out >=
// M rows per batch, the rows past M zero, so that the GEMM's TMA boxes of
// whole token tiles never reach past the buffer (out-of-bounds rows cost
// the TMA unit time: H100, session 15).
// lane_major: the register GEMV's layout at five to sixteen tokens.
Status run_act_prepass(const Nvfp4View& a, int64_t rows_out, cudaStream_t stream,
                       rt::StreamScratch* out, bool lane_major = false);

}  // namespace kestrel::ops
