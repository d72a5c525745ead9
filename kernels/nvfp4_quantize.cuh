// NVFP4 quantization, dequantization and scale-layout conversion.
// Memory-bound: 16-byte loads per lane, coalesced warp stores, exact rounding
// (common/nvfp4_codec.cuh) so that the GPU matches the float64 reference byte
// for byte.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "common/fp4_decode.cuh"
#include "common/nvfp4_codec.cuh"
#include "common/ptx.cuh"

namespace kestrel {

// Strides of a [L][rows][cols] tensor in elements (values: bytes).
struct Strides3 {
  long long batch, row;
};

template <typename T>
__device__ __forceinline__ float to_f32(T v);
template <> __device__ __forceinline__ float to_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f32<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <bool BLOCKED>
__device__ __forceinline__ long long scale_offset(int b, int row, int kblock, int rows,
                                                  int kblocks, Strides3 s) {
  if constexpr (BLOCKED) {
    const long long rest_k = (kblocks + 3) / 4, rest_mn = (rows + 127) / 128;
    return (long long)b * rest_mn * rest_k * 512 + ((row / 128) * rest_k + kblock / 4) * 512 +
           (row % 32) * 16 + ((row % 128) / 32) * 4 + kblock % 4;
  } else {
    return b * s.batch + row * s.row + kblock;
  }
}

// One lane per 16-value block: it loads the block (32 or 64 bytes), takes
// its amax, computes the scale once (an approximate hardware conversion
// made exact by e4m3_scale_fixup) and the seven rounding bounds, and writes
// 8 bytes of codes. Consecutive lanes own consecutive blocks, so a warp's
// loads and stores are contiguous. Grid: x strides over the rows * K / 16
// blocks of batch blockIdx.y.
template <typename T, int K, bool BLOCKED>
__global__ void __launch_bounds__(256) quantize_kernel(const T* __restrict__ x, Strides3 xs,
                                                       uint8_t* __restrict__ values, Strides3 vs,
                                                       uint8_t* __restrict__ scales, Strides3 ss,
                                                       int rows, float global_scale,
                                                       float inv_6g) {
  static_assert(K % 16 == 0, "K must be a multiple of 16");
  constexpr int KB = K / 16;
  constexpr int LOADS = 16 * sizeof(T) / 16;  // 16-byte loads per block
  const int b = blockIdx.y;
  const unsigned total = unsigned(rows) * unsigned(KB);
  for (unsigned item = blockIdx.x * blockDim.x + threadIdx.x; item < total;
       item += gridDim.x * blockDim.x) {
    const int r = int(item / unsigned(KB));
    const int kb = int(item - unsigned(r) * unsigned(KB));
    const uint4* src = reinterpret_cast<const uint4*>(x + b * xs.batch + r * xs.row + kb * 16);
    uint4 raw[LOADS];
#pragma unroll
    for (int i = 0; i < LOADS; ++i) raw[i] = ptx::ld_stream_v4(src + i);
    const T* xv = reinterpret_cast<const T*>(raw);
    float v[16];
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      v[i] = to_f32<T>(xv[i]);
      amax = fmaxf(amax, fabsf(v[i]));  // NaN is ignored, as in the reference
    }
    const unsigned guess = __nv_cvt_float_to_fp8(amax * inv_6g, __NV_SATFINITE, __NV_E4M3);
    const unsigned scode = e4m3_scale_fixup(guess, amax, global_scale);
    const float scale = e4m3_to_float(scode);
    // Thresholds between e2m1 magnitudes, as exact "v > bound" tests.
    const float mids[7] = KESTREL_E2M1_MIDPOINTS;
    float bound[7];
#pragma unroll
    for (int i = 0; i < 7; ++i)
      bound[i] = e2m1_round_up_bound(rn_mul(mids[i], scale), global_scale, (i & 1) != 0);

    uint32_t packed[2] = {0u, 0u};
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const float a = fabsf(v[i]);
      // Branch-free binary search over the 7 sorted bounds.
      const bool hi = a > bound[3];
      const bool mid = a > (hi ? bound[5] : bound[1]);
      const bool lo = a > (mid ? (hi ? bound[6] : bound[2]) : (hi ? bound[4] : bound[0]));
      const unsigned mag = (unsigned(hi) << 2) | (unsigned(mid) << 1) | unsigned(lo);
      // Values that round to zero keep code 0 (never -0), as the reference does.
      const unsigned code = mag | ((mag != 0u && v[i] < 0.0f) ? 8u : 0u);
      packed[i / 8] |= code << (4 * (i % 8));
    }
    *reinterpret_cast<uint2*>(values + b * vs.batch + r * vs.row + kb * 8) =
        make_uint2(packed[0], packed[1]);
    scales[scale_offset<BLOCKED>(b, r, kb, rows, KB, ss)] = (uint8_t)scode;
  }
}

// One lane expands one 16-value block: 8 packed bytes decoded to fp16 by bit
// placement (exact e2m1 * scale / 2^14, common/fp4_decode.cuh), put back in
// K order with byte permutes, and multiplied by 2^14 * global_scale in fp32.
template <typename T>
__device__ __forceinline__ void store_pairs(T* dst, const float (&f)[16]);
template <>
__device__ __forceinline__ void store_pairs<float>(float* dst, const float (&f)[16]) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
    reinterpret_cast<float4*>(dst)[i] = make_float4(f[4 * i], f[4 * i + 1], f[4 * i + 2], f[4 * i + 3]);
}
template <typename T>
__device__ __forceinline__ void store_pairs(T* dst, const float (&f)[16]) {
  uint32_t w[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const T lo = from_f32<T>(f[2 * i]), hi = from_f32<T>(f[2 * i + 1]);
    w[i] = uint32_t(*reinterpret_cast<const unsigned short*>(&lo)) |
           (uint32_t(*reinterpret_cast<const unsigned short*>(&hi)) << 16);
  }
  reinterpret_cast<uint4*>(dst)[0] = make_uint4(w[0], w[1], w[2], w[3]);
  reinterpret_cast<uint4*>(dst)[1] = make_uint4(w[4], w[5], w[6], w[7]);
}

template <typename T, int K, bool BLOCKED>
__global__ void __launch_bounds__(256) dequantize_kernel(const uint8_t* __restrict__ values,
                                                         Strides3 vs,
                                                         const uint8_t* __restrict__ scales,
                                                         Strides3 ss, T* __restrict__ y,
                                                         Strides3 ys, int rows,
                                                         float global_scale) {
  constexpr int KB = K / 16;
  constexpr int UNROLL = 4;  // blocks in flight per lane: 8-byte loads need many to cover latency
  const int b = blockIdx.y;
  const float unit = global_scale * kFp4DecodeScale;
  const unsigned total = unsigned(rows) * unsigned(KB), stride = gridDim.x * blockDim.x;
  for (unsigned base = blockIdx.x * blockDim.x + threadIdx.x; base < total; base += UNROLL * stride) {
    uint2 packed[UNROLL];
    unsigned code[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const unsigned item = base + u * stride;
      if (item >= total) break;
      const int r = int(item / unsigned(KB)), kb = int(item - unsigned(r) * unsigned(KB));
      packed[u] = __ldg(reinterpret_cast<const uint2*>(values + b * vs.batch + r * vs.row + kb * 8));
      code[u] = __ldg(scales + scale_offset<BLOCKED>(b, r, kb, rows, KB, ss));
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const unsigned item = base + u * stride;
      if (item >= total) break;
      const int r = int(item / unsigned(KB)), kb = int(item - unsigned(r) * unsigned(KB));
      const __half2_raw s2 =
          __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(code[u] | (code[u] << 8)), __NV_E4M3);
      const __half2 scale = *reinterpret_cast<const __half2*>(&s2);
      float f[16];
#pragma unroll
      for (int wi = 0; wi < 2; ++wi) {
        uint32_t h[4];
        decode_fp4x8(wi ? packed[u].y : packed[u].x, h);
        // pairs (0,4) (2,6) (1,5) (3,7) -> K-order pairs (0,1) (2,3) (4,5) (6,7)
        const uint32_t nat[4] = {__byte_perm(h[0], h[2], 0x5410), __byte_perm(h[1], h[3], 0x5410),
                                 __byte_perm(h[0], h[2], 0x7632), __byte_perm(h[1], h[3], 0x7632)};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&nat[q]), scale);  // exact
          const float2 fv = __half22float2(v);
          f[wi * 8 + 2 * q] = fv.x * unit;
          f[wi * 8 + 2 * q + 1] = fv.y * unit;
        }
      }
      store_pairs<T>(y + b * ys.batch + r * ys.row + kb * 16, f);
    }
  }
}

// One thread per (row, kblock) scale of batch blockIdx.y; the linear side may
// be strided.
template <bool TO_BLOCKED>
__global__ void __launch_bounds__(256) convert_scales_kernel(const uint8_t* __restrict__ src,
                                                             uint8_t* __restrict__ dst,
                                                             Strides3 linear, int rows,
                                                             int kblocks) {
  const int b = blockIdx.y;
  const unsigned total = unsigned(rows) * unsigned(kblocks);
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += gridDim.x * blockDim.x) {
    const int r = int(i / unsigned(kblocks));
    const int j = int(i - unsigned(r) * unsigned(kblocks));
    const long long lin = scale_offset<false>(b, r, j, rows, kblocks, linear);
    const long long blk = scale_offset<true>(b, r, j, rows, kblocks, linear);
    if constexpr (TO_BLOCKED) {
      dst[blk] = src[lin];
    } else {
      dst[lin] = src[blk];
    }
  }
}

}  // namespace kestrel
