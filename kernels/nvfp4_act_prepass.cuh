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
// Output: [L][rows_out][Kp] fp16, Kp = K rounded up to 128, zero beyond K
// and in the rows past M (rows_out is M rounded up to whole token tiles).
// LANE_MAJOR keeps each chunk's 16 pairs together instead (output half2
// 16 t + j of a block is pair j of chunk t): the register GEMV's B operand
// at five to sixteen tokens (kernels/nvfp4_gemv.cuh), one lane's 64 bytes.
#pragma once
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "common/fp4_decode.cuh"
#include "common/nvfp4_operand.cuh"
#include "common/ptx.cuh"

namespace kestrel {

struct ActPrepassParams {  // mirrored in src/ops/act_prepass.cpp
  Nvfp4Operand x;          // [L][M][K]
  __half* out;             // [L][rows_out][Kp]
  int m, k, kp;
  int rows_out;  // >= m: rows m.. are written as zeros (the GEMM's whole token tiles)
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
    return l * p.x.scales_batch + row * p.x.scales_row + kb;
  }
}

}  // namespace prepass

// One warp per 8 consecutive 128-value blocks of a batch's [rows_out][Kp/128]
// output, which is contiguous: lane 4b + t reads chunk t (16 bytes, 32
// values, scale blocks 2t and 2t + 1) of block b with one 16-byte load (four
// 4-byte loads where A's rows are only 4-byte aligned: VEC16 false), and
// the warp writes its 2 KB with 16-byte stores after a transpose in shared
// memory (output uint4 p of a block is pair p of its four chunks). One
// thread per block, with 4-byte loads and 256-byte strided stores, ran at
// 1.1 TB/s and took 150 us before an 8192^3 GEMM (H100).
constexpr int kPrepassWarps = 4;
constexpr int kPrepassBlocksPerWarp = 8;
constexpr int kPrepassBlockWords = 64 + 4;  // 256 output bytes + 16 of padding: no bank conflicts

template <bool BLOCKED, bool VEC16, bool LANE_MAJOR>
__global__ void __launch_bounds__(kPrepassWarps * 32)
    nvfp4_act_prepass_kernel(const __grid_constant__ ActPrepassParams p) {
  // The GEMM waits for this kernel's output with griddepcontrol.wait; until
  // then it may start its weight loads.
  ptx::griddep_launch_dependents();
  __shared__ uint32_t stage[kPrepassWarps][kPrepassBlocksPerWarp * kPrepassBlockWords];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, b = lane / 4, t = lane % 4;
  const int l = blockIdx.y, blocks_per_row = p.kp / 128;
  const long long blocks = (long long)p.rows_out * blocks_per_row;  // of this batch
  const long long first = ((long long)blockIdx.x * kPrepassWarps + warp) * kPrepassBlocksPerWarp;
  if (first >= blocks) return;
  const long long g = first + b;  // this lane's block
  uint32_t* st = stage[warp] + b * kPrepassBlockWords;

  uint32_t h[16];  // pair j of the chunk: output uint4 j, word t
#pragma unroll
  for (int j = 0; j < 16; ++j) h[j] = 0;
  const int row = int(g / blocks_per_row), blk = int(g % blocks_per_row);
  const int byte = blk * 64 + t * 16;
  // K is a multiple of 64 (the GEMM's rule): a chunk is wholly inside or past K.
  if (g < blocks && row < p.m && byte < p.k / 2) {
    const uint8_t* src = p.x.values + l * p.x.values_batch + (long long)row * p.x.values_row + byte;
    uint32_t words[4];
    if constexpr (VEC16) {
      const uint4 w = *reinterpret_cast<const uint4*>(src);
      words[0] = w.x, words[1] = w.y, words[2] = w.z, words[3] = w.w;
    } else {
#pragma unroll
      for (int wi = 0; wi < 4; ++wi) words[wi] = reinterpret_cast<const uint32_t*>(src)[wi];
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const __half_raw sr = __nv_cvt_fp8_to_halfraw(
          __nv_fp8_storage_t(p.x.scales[prepass::scale_off<BLOCKED>(p, l, row, byte / 8 + half)]),
          __NV_E4M3);
      const __half2 s2 = __half2(__half(sr), __half(sr));
#pragma unroll
      for (int wi = 2 * half; wi < 2 * half + 2; ++wi) {
        uint32_t q[4];
        decode_fp4x8(words[wi], q);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&q[j]), s2);
          h[wi * 4 + j] = *reinterpret_cast<const uint32_t*>(&v);
        }
      }
    }
  }
  // Output half2 index 8j + 4e + t holds pair 2j + e of chunk t: uint4 p
  // (= 2j + e) of the block, word t (LANE_MAJOR: index 16 t + j).
  if constexpr (LANE_MAJOR) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      reinterpret_cast<uint4*>(st + t * 16)[i] =
          make_uint4(h[4 * i], h[4 * i + 1], h[4 * i + 2], h[4 * i + 3]);
  } else {
#pragma unroll
    for (int j = 0; j < 16; ++j) st[j * 4 + t] = h[j];
  }
  __syncwarp();
  uint4* dst = reinterpret_cast<uint4*>(p.out) + (l * blocks + first) * 16;
  const long long left = blocks - first;
  const int live = int(left < kPrepassBlocksPerWarp ? left : kPrepassBlocksPerWarp) * 16;  // uint4s
#pragma unroll
  for (int i = 0; i < kPrepassBlocksPerWarp * 16 / 32; ++i) {
    const int u = i * 32 + lane;  // uint4 u of the warp's output: block u / 16, uint4 u % 16
    if (u < live)
      dst[u] = *reinterpret_cast<const uint4*>(stage[warp] + (u / 16) * kPrepassBlockWords +
                                               (u % 16) * 4);
  }
}

}  // namespace kestrel
