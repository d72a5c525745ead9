// NVFP4 batched GEMV: c[l][m] = alpha * sum_k A[l][m][k] * B[l][0][k].
//
// Memory-bound on A (0.5625 bytes per value). Each lane streams 16-byte chunks
// of two rows of A (rows g and g+8 of a 16-row tile), decodes them to fp16 by
// bit placement (common/fp4_decode.cuh) and feeds them to mma.m16n8k16 with
// fp32 accumulation. Products e2m1 x (e2m1*e4m3) are exact and the tensor
// core sums them in fp32, as the Blackwell block-scaled MMA does.
//
// The N = 8 columns of the mma carry no second vector; they separate scale
// blocks instead: column n collects only the slots that lane (n % 4) fills
// from block (n / 4) of its chunk, so after the 8 mmas of a 128-value group
// each column holds one 16-value block's dot product, and A's block scale is
// applied once per block in fp32. B (small, shared by all rows) is decoded
// once per CTA into shared memory in exactly the slot order the lanes need.
//
// Work split: a CTA owns RT row tiles (16 rows each) and a K range; its WARPS
// warps split the tiles and interleave 128-value groups of K. A cluster of
// CLUSTER CTAs splits K further and reduces through distributed shared memory,
// so the result is deterministic (fixed summation order) and needs no
// workspace.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "common/fp4_decode.cuh"
#include "common/ptx.cuh"

namespace kestrel {

struct GemvParams {
  const uint8_t* a;  // [L][M][K/2]
  long long a_batch, a_row;
  const uint8_t* sfa;  // linear: [L][M][K/16] with strides; blocked: flat
  long long sfa_batch, sfa_row;
  const uint8_t* b;  // row 0 of [L][rows_b][K/2]
  long long b_batch;
  const uint8_t* sfb;  // linear: row 0 of [L][rows_b][K/16]; blocked: flat
  long long sfb_batch;
  void* c;  // [L][M] fp16 / bf16
  long long c_batch, c_row;
  int m, k, b_rows;
  float alpha;  // global scales times 2^28 (the decode's two 2^-14 factors)
};

namespace gemv {

constexpr int kGroup = 128;        // K values per lane-quad step: 4 lanes x 32 values
constexpr int kGroupBytes = 64;    // packed bytes of one row per group
constexpr int kGroupSmem = 256;    // decoded B bytes per group (128 fp16)

template <bool BLOCKED>
__device__ __forceinline__ long long scale_off(long long batch_base, long long row_stride, int l,
                                               int row, int kblock, int rows, int kblocks) {
  if constexpr (BLOCKED) {
    const long long rest_k = (kblocks + 3) / 4, rest_mn = (rows + 127) / 128;
    return (long long)l * rest_mn * rest_k * 512 + ((row / 128) * rest_k + kblock / 4) * 512 +
           (row % 32) * 16 + ((row % 128) / 32) * 4 + kblock % 4;
  } else {
    return l * batch_base + row * row_stride + kblock;
  }
}

__device__ __forceinline__ uint32_t splat_e4m3_as_half2(uint32_t code) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(code | (code << 8)),
                                                   __NV_E4M3);
  return uint32_t(h.x) | (uint32_t(h.y) << 16);
}

__device__ __forceinline__ float e4m3_to_f32(uint32_t code) {
  const __half_raw h = __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(code), __NV_E4M3);
  return __half2float(__half(h));
}

// Bytes of the per-row reduction buffers at the start of shared memory,
// rounded up so that the staged B behind them stays 16-byte aligned.
template <int RT, int WARPS, int CLUSTER>
__host__ __device__ constexpr int reduction_bytes() {
  return ((WARPS / RT + CLUSTER) * 16 * RT * 4 + 15) / 16 * 16;
}

// Column n of the mma collects block (n % 4) * 2 + n / 4 of the 8 in a group.
__device__ __forceinline__ int block_of_column(int n) { return (n % 4) * 2 + n / 4; }

// One lane's share of one group: 16 bytes of row g and of row g+8, and the
// four scale codes of the blocks its accumulator columns hold.
struct Stage {
  uint4 row0, row1;
  uint32_t sc[4];  // (row g, col 2t'), (row g, col 2t'+1), (row g+8, ...), (row g+8, ...)
};

template <bool VEC16>
__device__ __forceinline__ uint4 load_chunk(const uint8_t* row, int byte_off, int row_bytes,
                                            bool row_ok) {
  uint4 v = make_uint4(0, 0, 0, 0);
  if (!row_ok) return v;
  // K % 32 == 16 leaves the last chunk of a row half full: 8 bytes.
  if (VEC16 && byte_off + 16 <= row_bytes) {
    v = ptx::ld_stream_v4(row + byte_off);
  } else {
    if (byte_off + 8 <= row_bytes) {
      const uint2 lo = ptx::ld_stream_v2(row + byte_off);
      v.x = lo.x;
      v.y = lo.y;
    }
    if (byte_off + 16 <= row_bytes) {
      const uint2 hi = ptx::ld_stream_v2(row + byte_off + 8);
      v.z = hi.x;
      v.w = hi.y;
    }
  }
  return v;
}

}  // namespace gemv

template <typename OUT, int RT, int WARPS, int CLUSTER, int DEPTH, bool A_BLOCKED, bool B_BLOCKED,
          bool VEC16>
__global__ void __launch_bounds__(WARPS * 32) nvfp4_gemv_kernel(const __grid_constant__ GemvParams p) {
  using namespace gemv;
  static_assert(WARPS % RT == 0, "warps must split evenly over row tiles");
  constexpr int KS = WARPS / RT;  // K slices per row tile inside the CTA
  extern __shared__ __align__(16) uint8_t smem[];

  const int l = blockIdx.y;
  const int tile = blockIdx.x / CLUSTER;
  const int crank = CLUSTER > 1 ? int(ptx::cluster_ctarank()) : 0;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int rt = warp % RT, ks = warp / RT;

  const int kblocks = p.k / 16;
  const int groups = (p.k + kGroup - 1) / kGroup;
  const int g_begin = int((long long)groups * crank / CLUSTER);
  const int g_end = int((long long)groups * (crank + 1) / CLUSTER);
  const int row_bytes = p.k / 2;

  // ---- Stage B: decode this CTA's K range once, in lane slot order ----
  // smem group block layout: [t][half][j] of f16x2 (j = mma index 0..7).
  // Reduction buffers come first so that every CTA of a cluster agrees on
  // their offsets in the leader; the staged B (whose size varies with the
  // CTA's K range) follows.
  constexpr int ROWS = 16 * RT;
  float* red = reinterpret_cast<float*>(smem);  // [KS][ROWS]
  float* cl = red + KS * ROWS;                  // [CLUSTER][ROWS], used in the leader CTA
  uint32_t* bsm = reinterpret_cast<uint32_t*>(smem + reduction_bytes<RT, WARPS, CLUSTER>());
  {
    const uint8_t* brow = p.b + l * p.b_batch;
    for (int i = threadIdx.x; i < (g_end - g_begin) * 4; i += WARPS * 32) {
      const int gi = g_begin + i / 4, ct = i % 4;
      uint32_t* dst = bsm + (i / 4) * (kGroupSmem / 4) + ct * 16;
#pragma unroll
      for (int wi = 0; wi < 4; ++wi) {
        const int byte_off = gi * kGroupBytes + ct * 16 + wi * 4;
        const int kb = byte_off / 8;
        uint32_t h[4] = {0, 0, 0, 0};
        if (byte_off < row_bytes) {
          decode_fp4x8(ptx::ld_nc_u32(brow + byte_off), h);
          const uint32_t s = splat_e4m3_as_half2(ptx::ld_nc_u8(
              p.sfb + scale_off<B_BLOCKED>(p.sfb_batch, 0, l, 0, kb, p.b_rows, kblocks)));
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&h[q]),
                                      *reinterpret_cast<const __half2*>(&s));
            h[q] = *reinterpret_cast<const uint32_t*>(&v);
          }
        }
        // word wi holds half wi / 2, mma indices j = 4 * (wi % 2) + q
#pragma unroll
        for (int q = 0; q < 4; ++q) dst[(wi / 2) * 8 + 4 * (wi % 2) + q] = h[q];
      }
    }
  }
  __syncthreads();

  // ---- Main loop: stream A, mma against staged B ----
  const int row0 = tile * 16 * RT + rt * 16 + g, row1 = row0 + 8;
  const bool ok0 = row0 < p.m, ok1 = row1 < p.m;
  const uint8_t* a0 = p.a + l * p.a_batch + (long long)(ok0 ? row0 : 0) * p.a_row;
  const uint8_t* a1 = p.a + l * p.a_batch + (long long)(ok1 ? row1 : 0) * p.a_row;
  const int col_a = 2 * t, col_b = 2 * t + 1;  // accumulator columns of this lane
  const int blk_a = block_of_column(col_a), blk_b = block_of_column(col_b);

  auto load = [&](int gi, Stage& s) {
    const int off = gi * kGroupBytes + t * 16;
    s.row0 = load_chunk<VEC16>(a0, off, row_bytes, ok0 && gi < g_end);
    s.row1 = load_chunk<VEC16>(a1, off, row_bytes, ok1 && gi < g_end);
    const int kb_a = gi * 8 + blk_a, kb_b = gi * 8 + blk_b;
    const bool in_a = gi < g_end && kb_a < kblocks, in_b = gi < g_end && kb_b < kblocks;
    auto sc = [&](bool ok, int row, int kb) -> uint32_t {
      return ok ? ptx::ld_nc_u8(p.sfa + scale_off<A_BLOCKED>(p.sfa_batch, p.sfa_row, l, row, kb,
                                                             p.m, kblocks))
                : 0u;
    };
    s.sc[0] = sc(ok0 && in_a, row0, kb_a);
    s.sc[1] = sc(ok0 && in_b, row0, kb_b);
    s.sc[2] = sc(ok1 && in_a, row1, kb_a);
    s.sc[3] = sc(ok1 && in_b, row1, kb_b);
  };

  // B fragment registers: lanes g == t load half 0 into b0, lanes g == t + 4
  // half 1 into b1; every other register stays zero for the whole kernel (its
  // column owns no slot of that lane).
  const bool b0_lane = g == t, b1_lane = g == t + 4;
  const uint32_t* bsm_lane = bsm + t * 16 + (b1_lane ? 8 : 0);
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  uint32_t b0q[8] = {0, 0, 0, 0, 0, 0, 0, 0}, b1q[8] = {0, 0, 0, 0, 0, 0, 0, 0};

  auto compute = [&](int gi, const Stage& s) {
    uint32_t h0[4][4], h1[4][4];
    const uint32_t w0[4] = {s.row0.x, s.row0.y, s.row0.z, s.row0.w};
    const uint32_t w1[4] = {s.row1.x, s.row1.y, s.row1.z, s.row1.w};
#pragma unroll
    for (int wi = 0; wi < 4; ++wi) {
      decode_fp4x8(w0[wi], h0[wi]);
      decode_fp4x8(w1[wi], h1[wi]);
    }
    {
      const uint4* src = reinterpret_cast<const uint4*>(bsm_lane + (gi - g_begin) * (kGroupSmem / 4));
      if (b0_lane) {
        const uint4 x = src[0], y = src[1];
        b0q[0] = x.x; b0q[1] = x.y; b0q[2] = x.z; b0q[3] = x.w;
        b0q[4] = y.x; b0q[5] = y.y; b0q[6] = y.z; b0q[7] = y.w;
      }
      if (b1_lane) {
        const uint4 x = src[0], y = src[1];
        b1q[0] = x.x; b1q[1] = x.y; b1q[2] = x.z; b1q[3] = x.w;
        b1q[4] = y.x; b1q[5] = y.y; b1q[6] = y.z; b1q[7] = y.w;
      }
    }
    float c[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int wlo = j / 4, whi = 2 + j / 4, q = j % 4;
      const uint32_t a[4] = {h0[wlo][q], h1[wlo][q], h0[whi][q], h1[whi][q]};
      ptx::mma_m16n8k16_f16_f32(c, a, b0q[j], b1q[j]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[i] = fmaf(c[i], e4m3_to_f32(s.sc[i]), acc[i]);
  };

  // Register pipeline DEPTH groups deep: loads for step i + DEPTH are in
  // flight while step i is decoded and multiplied.
  Stage st[DEPTH];
  const int first = g_begin + ks;
#pragma unroll
  for (int d = 0; d < DEPTH; ++d) load(first + d * KS, st[d]);
  for (int gi = first; gi < g_end; gi += DEPTH * KS) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d) {
      const int cur = gi + d * KS;
      if (cur < g_end) compute(cur, st[d]);
      load(cur + DEPTH * KS, st[d]);
    }
  }

  // ---- Reduce: columns -> lanes of a quad -> K slices -> cluster ----
  float r0 = acc[0] + acc[1], r1 = acc[2] + acc[3];
  r0 += __shfl_xor_sync(0xffffffffu, r0, 1);
  r1 += __shfl_xor_sync(0xffffffffu, r1, 1);
  r0 += __shfl_xor_sync(0xffffffffu, r0, 2);
  r1 += __shfl_xor_sync(0xffffffffu, r1, 2);
  if (t == 0) {
    red[ks * ROWS + rt * 16 + g] = r0;
    red[ks * ROWS + rt * 16 + g + 8] = r1;
  }
  __syncthreads();
  float total = 0.f;
  if (threadIdx.x < ROWS) {
#pragma unroll
    for (int s = 0; s < KS; ++s) total += red[s * ROWS + threadIdx.x];
  }
  if constexpr (CLUSTER > 1) {
    if (threadIdx.x < ROWS)
      ptx::st_cluster_f32(ptx::map_shared_rank(ptx::smem_u32(cl + crank * ROWS + threadIdx.x), 0),
                          total);
    ptx::cluster_sync();
    if (crank != 0) return;
    if (threadIdx.x < ROWS) {
      total = 0.f;
#pragma unroll
      for (int s = 0; s < CLUSTER; ++s) total += cl[s * ROWS + threadIdx.x];
    }
  }
  const int row = tile * ROWS + threadIdx.x;
  if (threadIdx.x < ROWS && row < p.m) {
    OUT* out = reinterpret_cast<OUT*>(p.c) + l * p.c_batch + (long long)row * p.c_row;
    *out = OUT(total * p.alpha);
  }
}

}  // namespace kestrel
