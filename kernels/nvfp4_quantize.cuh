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
#include "common/nvfp4_pack16.cuh"
#include "common/ptx.cuh"
#include "common/row_segments.cuh"

namespace kestrel {

// Strides of a [L][rows][cols] tensor in elements (values: bytes).
struct Strides3 {
  long long batch, row;
};

// Offset of the scale of (batch b, row, k-block kblock) = the row's part +
// the k-block's part (k-blocks 4 apart are 512 bytes apart in the blocked
// layout), so that kernels walking a row add constants.
template <bool BLOCKED>
__device__ __forceinline__ long long scale_row_offset(int b, int row, int rows, int kblocks,
                                                      Strides3 s) {
  if constexpr (BLOCKED) {
    const long long rest_k = (kblocks + 3) / 4, rest_mn = (rows + 127) / 128;
    return ((long long)b * rest_mn + row / 128) * rest_k * 512 + (row % 32) * 16 +
           ((row % 128) / 32) * 4;
  } else {
    return b * s.batch + row * s.row;
  }
}
template <bool BLOCKED>
__device__ __forceinline__ int scale_kblock_offset(int kblock) {
  return BLOCKED ? (kblock / 4) * 512 + kblock % 4 : kblock;
}
template <bool BLOCKED>
__device__ __forceinline__ long long scale_offset(int b, int row, int kblock, int rows,
                                                  int kblocks, Strides3 s) {
  return scale_row_offset<BLOCKED>(b, row, rows, kblocks, s) + scale_kblock_offset<BLOCKED>(kblock);
}

// fp32 input, one lane per 16-value block: it loads the block (64 bytes),
// takes its amax, computes the scale once (an approximate hardware conversion
// made exact by e4m3_scale_fixup) and the seven rounding bounds, and writes 8
// bytes of codes. Consecutive lanes own consecutive blocks, so a warp's loads
// and stores are contiguous.
template <int K, bool BLOCKED>
__device__ __forceinline__ void quantize_f32(const float* __restrict__ x, Strides3 xs,
                                             uint8_t* __restrict__ values, Strides3 vs,
                                             uint8_t* __restrict__ scales, Strides3 ss, int rows,
                                             float global_scale, float guess_factor) {
  constexpr int KB = K / 16;
  const int b = blockIdx.y;
  const unsigned total = unsigned(rows) * unsigned(KB);
  for (unsigned item = blockIdx.x * blockDim.x + threadIdx.x; item < total;
       item += gridDim.x * blockDim.x) {
    const int r = int(item / unsigned(KB));
    const int kb = int(item - unsigned(r) * unsigned(KB));
    const uint4* src = reinterpret_cast<const uint4*>(x + b * xs.batch + r * xs.row + kb * 16);
    float v[16];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint4 raw = ptx::ld_stream_v4(src + i);
      v[4 * i] = __uint_as_float(raw.x);
      v[4 * i + 1] = __uint_as_float(raw.y);
      v[4 * i + 2] = __uint_as_float(raw.z);
      v[4 * i + 3] = __uint_as_float(raw.w);
    }
    float amax = 0.0f;  // fmaxf ignores NaN, as the reference does
#pragma unroll
    for (int i = 0; i < 16; ++i) amax = fmaxf(amax, fabsf(v[i]));
    const unsigned guess = __nv_cvt_float_to_fp8(amax * guess_factor, __NV_SATFINITE, __NV_E4M3);
    const unsigned scode = e4m3_scale_fixup(guess, amax, global_scale);
    const float scale = e4m3_to_float(scode);
    const float mids[7] = KESTREL_E2M1_MIDPOINTS;
    float bound[7];
#pragma unroll
    for (int i = 0; i < 7; ++i)
      bound[i] = e2m1_round_up_bound(rn_mul(mids[i], scale), global_scale, (i & 1) != 0);
    uint32_t packed[2] = {0u, 0u};
#pragma unroll
    for (int i = 0; i < 16; ++i) packed[i / 8] |= e2m1_code(v[i], bound) << (4 * (i % 8));
    *reinterpret_cast<uint2*>(values + b * vs.batch + r * vs.row + kb * 8) =
        make_uint2(packed[0], packed[1]);
    scales[scale_offset<BLOCKED>(b, r, kb, rows, KB, ss)] = (uint8_t)scode;
  }
}

template <typename T>
struct Half16Of;
template <>
struct Half16Of<__nv_bfloat16> {
  static constexpr Half16 value = Half16::kBf16;
};
template <>
struct Half16Of<__half> {
  static constexpr Half16 value = Half16::kFp16;
};

// bf16 / fp16 input: a lane pair per 16-value block (row_segments), each lane
// one 16-byte load and one 4-byte store of codes, so every warp access is
// contiguous. The scale and the rounding bounds come from a shared-memory
// table built once per CTA for the global scale (common/nvfp4_pack16.cuh):
// per block, the lanes combine their amax with one shuffle, convert a guess
// and read 40 bytes of table, and the rounding is two values per compare.
template <typename T, int K, bool BLOCKED>
__device__ __forceinline__ void quantize_16bit(const T* __restrict__ x, Strides3 xs,
                                               uint8_t* __restrict__ values, Strides3 vs,
                                               uint8_t* __restrict__ scales, Strides3 ss,
                                               int rows, float global_scale,
                                               float guess_factor) {
  constexpr Half16 F = Half16Of<T>::value;
  constexpr RowSegments seg = row_segments(K);
  constexpr int KB = K / 16;
  __shared__ uint4 s_bounds[kScaleCodes][2];  // e2m1_bound_word 0..7 of each scale code
  __shared__ float2 s_steps[kScaleCodes];      // scale_steps_around each scale code
  const int b = blockIdx.y;
  const unsigned warps = blockDim.x / 32, items = unsigned(row_segment_items(K, rows));
  if (blockIdx.x * warps >= items) return;  // the whole CTA: no table to build
  for (unsigned e = threadIdx.x; e < kScaleCodes * 8; e += blockDim.x) {
    const unsigned c = e >> 3, i = e & 7u;
    reinterpret_cast<uint32_t*>(s_bounds)[e] = e2m1_bound_word<F>(c, i, global_scale);
    if (i == 7u) scale_steps_around(c, global_scale, &s_steps[c].x, &s_steps[c].y);
  }
  __syncthreads();

  const int lane = threadIdx.x & 31, sub_row = lane / seg.lanes;
  for (unsigned item = blockIdx.x * warps + threadIdx.x / 32; item < items;
       item += gridDim.x * warps) {
    const RowSegmentPos pos = row_segment_pos(seg, item, lane);
    const int row = pos.row, chunk0 = pos.chunk;
    const bool row_ok = row_segment_row_ok(seg, sub_row, row, rows);
    const T* src = x + b * xs.batch + (long long)row * xs.row + chunk0 * 8;
    uint8_t* dst = values + b * vs.batch + (long long)row * vs.row + chunk0 * 4;
    // Steps are 16 k-blocks apart (or there is one step): a constant distance.
    uint8_t* sdst = scales + scale_row_offset<BLOCKED>(b, row, rows, KB, ss) +
                    scale_kblock_offset<BLOCKED>(chunk0 / 2);
    constexpr int kScaleStep = BLOCKED ? 16 / 4 * 512 : 16;
    uint4 raw[seg.steps];
#pragma unroll
    for (int s = 0; s < seg.steps; ++s)
      raw[s] = row_ok && row_segment_chunk_ok(seg, chunk0 + s * seg.lanes)
                   ? ptx::ld_stream_v4(src + s * seg.lanes * 8)
                   : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
    for (int s = 0; s < seg.steps; ++s) {
      const int chunk = chunk0 + s * seg.lanes;
      const uint32_t w[4] = {raw[s].x, raw[s].y, raw[s].z, raw[s].w};
      // Every lane shuffles (lanes past the row carry zeros), so no divergence.
      uint32_t m = amax_pair8<F>(w);
      m = max2<F>(m, __shfl_xor_sync(0xffffffffu, m, 1));
      const float amax = amax_of_pair<F>(m);
      const unsigned guess = __nv_cvt_float_to_fp8(amax * guess_factor, __NV_SATFINITE, __NV_E4M3);
      const float2 step = s_steps[guess];
      const unsigned code = scale_code_from_guess(guess, amax, step.x, step.y);
      const uint4 t0 = s_bounds[code][0], t1 = s_bounds[code][1];
      const uint32_t table[8] = {t0.x, t0.y, t0.z, t0.w, t1.x, t1.y, t1.z, t1.w};
      const uint32_t codes = e2m1_encode8<F>(w, table);
      if (row_ok && row_segment_chunk_ok(seg, chunk)) {
        *reinterpret_cast<uint32_t*>(dst + s * seg.lanes * 4) = codes;
        if ((chunk & 1) == 0) sdst[s * kScaleStep] = code;
      }
    }
  }
}

// Grid: x strides over the work of batch blockIdx.y (16-value blocks for
// fp32, row_segments items of 8 warps per CTA for 2-byte inputs).
template <typename T, int K, bool BLOCKED>
__global__ void __launch_bounds__(256) quantize_kernel(const T* __restrict__ x, Strides3 xs,
                                                       uint8_t* __restrict__ values, Strides3 vs,
                                                       uint8_t* __restrict__ scales, Strides3 ss,
                                                       int rows, float global_scale,
                                                       float guess_factor) {
  static_assert(K % 16 == 0, "K must be a multiple of 16");
  if constexpr (sizeof(T) == 4) {
    quantize_f32<K, BLOCKED>(x, xs, values, vs, scales, ss, rows, global_scale, guess_factor);
  } else {
    quantize_16bit<T, K, BLOCKED>(x, xs, values, vs, scales, ss, rows, global_scale,
                                  guess_factor);
  }
}

// Eight values, already scaled, to the output type (one rounding): 16 bytes
// (2-byte types) or 32 (fp32) per lane, streaming stores.
__device__ __forceinline__ uint32_t pack2(__nv_bfloat16*, float lo, float hi) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&p);
}
__device__ __forceinline__ uint32_t pack2(__half*, float lo, float hi) {
  const __half2 p = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&p);
}
template <typename T>
__device__ __forceinline__ void store8(T* dst, const float (&f)[8]) {
  ptx::st_stream_v4(dst, make_uint4(pack2(dst, f[0], f[1]), pack2(dst, f[2], f[3]),
                                    pack2(dst, f[4], f[5]), pack2(dst, f[6], f[7])));
}
template <>
__device__ __forceinline__ void store8<float>(float* dst, const float (&f)[8]) {
  ptx::st_stream_v4(dst, make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]),
                                    __float_as_uint(f[2]), __float_as_uint(f[3])));
  ptx::st_stream_v4(dst + 4, make_uint4(__float_as_uint(f[4]), __float_as_uint(f[5]),
                                        __float_as_uint(f[6]), __float_as_uint(f[7])));
}

// One lane per 8 values (row_segments, as the 2-byte quantize): 4 bytes of
// codes and the block's scale byte in, decoded to fp16 by bit placement
// (exact e2m1 * scale / 2^14, common/fp4_decode.cuh), multiplied by
// 2^14 * global_scale in fp32 and rounded once to the output type. The
// decode's pair order is undone when the fp32 values are packed, and all the
// item's loads are issued before any decode.
template <typename T, int K, bool BLOCKED>
__global__ void __launch_bounds__(256) dequantize_kernel(const uint8_t* __restrict__ values,
                                                         Strides3 vs,
                                                         const uint8_t* __restrict__ scales,
                                                         Strides3 ss, T* __restrict__ y,
                                                         Strides3 ys, int rows,
                                                         float global_scale) {
  constexpr RowSegments seg = row_segments(K);
  constexpr int KB = K / 16;
  const int b = blockIdx.y;
  const float unit = global_scale * kFp4DecodeScale;
  const unsigned warps = blockDim.x / 32, items = unsigned(row_segment_items(K, rows));
  const int lane = threadIdx.x & 31, sub_row = lane / seg.lanes;
  for (unsigned item = blockIdx.x * warps + threadIdx.x / 32; item < items;
       item += gridDim.x * warps) {
    const RowSegmentPos pos = row_segment_pos(seg, item, lane);
    const int row = pos.row, chunk0 = pos.chunk;
    if (!row_segment_row_ok(seg, sub_row, row, rows)) continue;
    const uint8_t* src = values + b * vs.batch + (long long)row * vs.row + chunk0 * 4;
    T* dst = y + b * ys.batch + (long long)row * ys.row + chunk0 * 8;
    uint32_t packed[seg.steps], code[seg.steps];
#pragma unroll
    for (int s = 0; s < seg.steps; ++s) {
      const int chunk = chunk0 + s * seg.lanes;
      if (row_segment_chunk_ok(seg, chunk)) {
        packed[s] = ptx::ld_nc_u32(src + s * seg.lanes * 4);
        code[s] = ptx::ld_nc_u8(scales + scale_offset<BLOCKED>(b, row, chunk / 2, rows, KB, ss));
      }
    }
#pragma unroll
    for (int s = 0; s < seg.steps; ++s) {
      if (!row_segment_chunk_ok(seg, chunk0 + s * seg.lanes)) break;
      const __half2_raw s2 =
          __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(code[s] | (code[s] << 8)), __NV_E4M3);
      const __half2 scale = *reinterpret_cast<const __half2*>(&s2);
      uint32_t h[4];
      decode_fp4x8(packed[s], h);
      float f[8];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&h[q]), scale);  // exact
        const float2 fv = __half22float2(v);
        f[fp4_pair_index(q, 0)] = fv.x * unit;
        f[fp4_pair_index(q, 1)] = fv.y * unit;
      }
      store8<T>(dst + s * seg.lanes * 8, f);
    }
  }
}

// out[p] = v[p ^ s] for the four words of v (s in 0..3), without indexing
// registers at run time.
__device__ __forceinline__ uint4 xor_words(uint4 v, int s) {
  if (s & 1) v = make_uint4(v.y, v.x, v.w, v.z);
  if (s & 2) v = make_uint4(v.z, v.w, v.x, v.y);
  return v;
}

// A CTA moves tiles of 128 rows x 32 scale blocks (batch blockIdx.y) through
// shared memory, so both sides are coalesced: on the linear side a thread
// moves 16 bytes of one row (a lane pair reads or writes one whole sector of
// a row), on the blocked side a warp moves one 512-byte k-tile (the tile's
// eight k-tiles are 4 KB of contiguous blocked layout). Shared memory holds
// the blocked order with each 16-byte row slot's four words permuted (XOR of
// their index with row bit 3 and the thread's half), so the linear side's
// word accesses hit 32 distinct banks. Blocked padding (rows past `rows`,
// blocks past `kblocks`) is written as zeros; the linear side only where it
// exists. VEC: both sides 16-byte aligned (data, row and batch strides) for
// 16-byte accesses, else bytes.
template <bool TO_BLOCKED, bool VEC>
__global__ void __launch_bounds__(256)
    convert_scales_kernel(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst,
                          Strides3 linear, int rows, int kblocks) {
  constexpr int kTileRows = 128, kTileBlocks = 32, kTileKTiles = kTileBlocks / 4;
  __shared__ __align__(16) uint32_t tile[kTileRows * kTileBlocks / 4];
  const int b = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int k_tiles = (kblocks + 3) / 4, row_tiles = (rows + kTileRows - 1) / kTileRows;
  const int col_tiles = (kblocks + kTileBlocks - 1) / kTileBlocks;
  // This thread's linear 16 bytes: row r of the tile, blocks half * 16 ..
  // half * 16 + 15, i.e. word j is k-tile half * 4 + j of row slot r % 32.
  const int r = threadIdx.x / 2, half = threadIdx.x % 2;
  const int lin_word = (r % 32) * 4 + ((r / 32) ^ ((r >> 3 & 1) | half << 1));
  // This warp's blocked k-tile (warp) and row slot (lane): the permutation
  // of the rows r with r % 32 == lane written by the threads of half warp / 4.
  const int blk_perm = (lane >> 3 & 1) | (warp / 4) << 1;
  for (unsigned i = blockIdx.x; i < unsigned(row_tiles) * unsigned(col_tiles); i += gridDim.x) {
    const int row_tile = int(i / unsigned(col_tiles)), col_tile = int(i % unsigned(col_tiles));
    const int row = row_tile * kTileRows + r, kb0 = col_tile * kTileBlocks + half * 16;
    const int n = row < rows ? min(kblocks - kb0, 16) : 0;  // linear bytes that exist
    const long long lin = (long long)b * linear.batch + (long long)row * linear.row + kb0;
    const int kt = col_tile * kTileKTiles + warp;
    const long long blk =
        ((long long)b * row_tiles + row_tile) * k_tiles * 512 + kt * 512 + lane * 16;
    if constexpr (TO_BLOCKED) {
      uint32_t w[4] = {0u, 0u, 0u, 0u};
      if (VEC && n == 16) {
        const uint4 v = ptx::ld_global_v4(src + lin);
        w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
      } else {
#pragma unroll
        for (int c = 0; c < 16; ++c)
          if (c < n) w[c / 4] |= uint32_t(src[lin + c]) << (8 * (c % 4));
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) tile[(half * 4 + j) * 128 + lin_word] = w[j];
      __syncthreads();
      if (kt < k_tiles) {
        const uint4 slot =
            xor_words(reinterpret_cast<const uint4*>(tile)[warp * 32 + lane], blk_perm);
        if constexpr (VEC) {
          ptx::st_global_v4(dst + blk, slot);
        } else {
          const uint32_t w[4] = {slot.x, slot.y, slot.z, slot.w};
#pragma unroll
          for (int c = 0; c < 16; ++c) dst[blk + c] = uint8_t(w[c / 4] >> (8 * (c % 4)));
        }
      }
    } else {
      if (kt < k_tiles) {
        uint4 slot;
        if constexpr (VEC) {
          slot = ptx::ld_global_v4(src + blk);
        } else {
          uint32_t w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
          for (int c = 0; c < 16; ++c) w[c / 4] |= uint32_t(src[blk + c]) << (8 * (c % 4));
          slot = make_uint4(w[0], w[1], w[2], w[3]);
        }
        reinterpret_cast<uint4*>(tile)[warp * 32 + lane] = xor_words(slot, blk_perm);
      }
      __syncthreads();
      uint32_t w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (4 * j < n) w[j] = tile[(half * 4 + j) * 128 + lin_word];
      if (VEC && n == 16) {
        ptx::st_global_v4(dst + lin, make_uint4(w[0], w[1], w[2], w[3]));
      } else {
#pragma unroll
        for (int c = 0; c < 16; ++c)
          if (c < n) dst[lin + c] = uint8_t(w[c / 4] >> (8 * (c % 4)));
      }
    }
    __syncthreads();  // the tile is reused by the next iteration
  }
}

}  // namespace kestrel
