// NVFP4 quantization, dequantization and scale-layout conversion.
// Memory-bound: 16-byte loads per lane, coalesced warp stores, exact rounding
// (common/nvfp4_codec.cuh) so that the GPU matches the float64 reference byte
// for byte.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

// One lane reads 16 bytes of x (VEC elements); LANES adjacent lanes share a
// 16-element block. Grid: x strides over the rows * K / VEC lane items of batch blockIdx.y.
template <typename T, int K, bool BLOCKED>
__global__ void __launch_bounds__(256) quantize_kernel(const T* __restrict__ x, Strides3 xs,
                                                       uint8_t* __restrict__ values, Strides3 vs,
                                                       uint8_t* __restrict__ scales, Strides3 ss,
                                                       int rows, float global_scale) {
  constexpr int VEC = 16 / sizeof(T);
  constexpr int LANES = 16 / VEC;
  constexpr int ITEMS_PER_ROW = K / VEC;
  static_assert(K % 16 == 0, "K must be a multiple of 16");
  const int b = blockIdx.y;
  const unsigned total = unsigned(rows) * unsigned(ITEMS_PER_ROW);
  for (unsigned item = blockIdx.x * blockDim.x + threadIdx.x; item < total;
       item += gridDim.x * blockDim.x) {
    const int r = int(item / unsigned(ITEMS_PER_ROW));
    const int col = int(item - unsigned(r) * unsigned(ITEMS_PER_ROW)) * VEC;
    const uint4 raw = ptx::ld_stream_v4(x + b * xs.batch + r * xs.row + col);
    const T* xv = reinterpret_cast<const T*>(&raw);
    float v[VEC];
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      v[i] = to_f32<T>(xv[i]);
      amax = fmaxf(amax, fabsf(v[i]));
    }
#pragma unroll
    for (int o = 1; o < LANES; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));

    const unsigned scode = e4m3_from_nonneg(double(amax) / 6.0 / double(global_scale));
    const float scale = e4m3_to_float(scode);
    // Thresholds between e2m1 magnitudes, as exact "v > bound" tests.
    const float mids[7] = KESTREL_E2M1_MIDPOINTS;
    float bound[7];
#pragma unroll
    for (int i = 0; i < 7; ++i)
      bound[i] = e2m1_round_up_bound(rn_mul(mids[i], scale), global_scale, (i & 1) != 0);

    unsigned packed = 0;
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const float a = fabsf(v[i]);
      // Branch-free binary search over the 7 sorted bounds.
      const bool hi = a > bound[3];
      const bool mid = a > (hi ? bound[5] : bound[1]);
      const bool lo = a > (hi ? (mid ? bound[6] : bound[4]) : (mid ? bound[2] : bound[0]));
      const unsigned mag = (unsigned(hi) << 2) | (unsigned(mid) << 1) | unsigned(lo);
      // Values that round to zero keep code 0 (never -0), as the reference does.
      const unsigned code = mag | ((mag != 0u && v[i] < 0.0f) ? 8u : 0u);
      packed |= code << (4 * i);
    }
    uint8_t* vdst = values + b * vs.batch + r * vs.row + col / 2;
    if constexpr (VEC == 8) {
      *reinterpret_cast<unsigned*>(vdst) = packed;
    } else {
      *reinterpret_cast<unsigned short*>(vdst) = (unsigned short)packed;
    }
    if ((threadIdx.x & (LANES - 1)) == 0)
      scales[scale_offset<BLOCKED>(b, r, col / 16, rows, K / 16, ss)] = (uint8_t)scode;
  }
}

// One lane expands 8 values (4 bytes) into 8 outputs.
template <typename T, int K, bool BLOCKED>
__global__ void __launch_bounds__(256) dequantize_kernel(const uint8_t* __restrict__ values,
                                                         Strides3 vs,
                                                         const uint8_t* __restrict__ scales,
                                                         Strides3 ss, T* __restrict__ y,
                                                         Strides3 ys, int rows,
                                                         float global_scale) {
  constexpr int ITEMS_PER_ROW = K / 8;
  const int b = blockIdx.y;
  const unsigned total = unsigned(rows) * unsigned(ITEMS_PER_ROW);
  for (unsigned item = blockIdx.x * blockDim.x + threadIdx.x; item < total;
       item += gridDim.x * blockDim.x) {
    const int r = int(item / unsigned(ITEMS_PER_ROW));
    const int col = int(item - unsigned(r) * unsigned(ITEMS_PER_ROW)) * 8;
    const unsigned packed =
        __ldg(reinterpret_cast<const unsigned*>(values + b * vs.batch + r * vs.row + col / 2));
    const float unit =
        e4m3_to_float(__ldg(scales + scale_offset<BLOCKED>(b, r, col / 16, rows, K / 16, ss))) *
        global_scale;
    T out[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = from_f32<T>(e2m1_to_float(packed >> (4 * i)) * unit);
    T* dst = y + b * ys.batch + r * ys.row + col;
    if constexpr (sizeof(T) == 2) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(out);
    } else {
      reinterpret_cast<uint4*>(dst)[0] = reinterpret_cast<const uint4*>(out)[0];
      reinterpret_cast<uint4*>(dst)[1] = reinterpret_cast<const uint4*>(out)[1];
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
