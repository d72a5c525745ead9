// NVFP4 activations -> fp16, K-permuted, block scales folded in: the B
// operand of the NVFP4 GEMMs (kernels/nvfp4_gemm.cuh).
//
// The GEMM decodes each weight lane's 16 packed bytes (32 values, two scale
// blocks) into 16 fp16 pairs (common/fp4_decode.cuh) and feeds pair 2j to
// k-slots (2t, 2t+1) and pair 2j+1 to slots (2t+8, 2t+9) of k16 step j. The
// activations are written in that same order, so the dot products are the
// plain K-order ones. Values are e2m1 * scale / 2^14 (exact in fp16, as are
// the weights); the GEMM multiplies the 2^28 back in its epilogue.
//
// Output: [L][M][Kp] fp16, Kp = K rounded up to 128, zero beyond K.
#pragma once
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "common/fp4_decode.cuh"
#include "common/ptx.cuh"

namespace kestrel {

struct ActPrepassParams {
  const uint8_t* x;  // [L][M][K/2]
  long long x_batch, x_row;
  const uint8_t* sx;  // linear [L][M][K/16] (strided) or blocked
  long long sx_batch, sx_row;
  __half* out;  // [L][M][Kp]
  int m, k, kp;
};

namespace prepass {

template <bool BLOCKED>
__device__ __forceinline__ long long scale_off(const ActPrepassParams& p, int l, int row, int kb) {
  const int kblocks = p.k / 16;
  if constexpr (BLOCKED) {
    const long long rest_k = (kblocks + 3) / 4, rest_mn = (p.m + 127) / 128;
    return (long long)l * rest_mn * rest_k * 512 + ((row / 128) * rest_k + kb / 4) * 512 +
           (row % 32) * 16 + ((row % 128) / 32) * 4 + kb % 4;
  } else {
    return l * p.sx_batch + row * p.sx_row + kb;
  }
}

}  // namespace prepass

// One thread per (row, 128-value block): reads 64 packed bytes and 8 scales,
// writes 256 contiguous output bytes.
template <bool BLOCKED>
__global__ void __launch_bounds__(128) nvfp4_act_prepass_kernel(const __grid_constant__ ActPrepassParams p) {
  // The GEMM waits for this kernel's output with griddepcontrol.wait; until
  // then it may start its weight loads.
  ptx::griddep_launch_dependents();
  const int l = blockIdx.y;
  const int blocks_per_row = p.kp / 128;
  const long long item = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= (long long)p.m * blocks_per_row) return;
  const int row = int(item / blocks_per_row), blk = int(item % blocks_per_row);
  const uint8_t* src = p.x + l * p.x_batch + (long long)row * p.x_row;
  const int row_bytes = p.k / 2;

  // h[t][p]: pair p (0..15) of lane chunk t (bytes 16t..16t+15 of the block).
  uint32_t h[4][16];
#pragma unroll
  for (int t = 0; t < 4; ++t) {
#pragma unroll
    for (int wi = 0; wi < 4; ++wi) {
      const int byte = blk * 64 + t * 16 + wi * 4;
      uint32_t q[4] = {0, 0, 0, 0};
      if (byte < row_bytes) {
        decode_fp4x8(*reinterpret_cast<const uint32_t*>(src + byte), q);
        const int kb = byte / 8;
        const __half_raw s = __nv_cvt_fp8_to_halfraw(
            __nv_fp8_storage_t(p.sx[prepass::scale_off<BLOCKED>(p, l, row, kb)]),
            __NV_E4M3);
        const __half2 s2 = __half2(__half(s), __half(s));
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&q[j]), s2);
          q[j] = *reinterpret_cast<const uint32_t*>(&v);
        }
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) h[t][wi * 4 + j] = q[j];
    }
  }
  // Output half2 index 8j + 4e + t holds pair 2j + e of chunk t.
  uint4* dst = reinterpret_cast<uint4*>(p.out + ((long long)l * p.m + row) * p.kp + blk * 128);
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e)
      dst[2 * j + e] = make_uint4(h[0][2 * j + e], h[1][2 * j + e], h[2][2 * j + e], h[3][2 * j + e]);
}

}  // namespace kestrel
