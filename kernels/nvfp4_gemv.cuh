// NVFP4 batched GEMV: c[l][m] = alpha * sum_k A[l][m][k] * B[l][0][k], or for
// TOKENS = 2..4 rows j of B (the GEMM at M = 2..4), c[l][j][m].
//
// Memory-bound on A (0.5625 bytes per value). Each lane streams 16-byte chunks
// of two rows of A (rows g and g+8 of a 16-row tile), decodes them to fp16 by
// bit placement (common/fp4_decode.cuh) and feeds them to mma.m16n8k16 with
// fp32 accumulation. Products e2m1 x (e2m1*e4m3) are exact and the tensor
// core sums them in fp32, as the Blackwell block-scaled MMA does.
//
// The N = 8 columns of the mma carry no second vector; they separate scale
// blocks instead: column 2x collects only the slots that lane x fills from the
// first 16-value block of its chunk, column 2x+1 those from the second, so
// after the 8 mmas of a 128-value group each column holds one block's dot
// product, A's block scale is applied once per block in fp32, and the two
// columns a lane accumulates are adjacent blocks (one 2-byte scale load).
// Each mma takes one block (k rows 0-7 one of its words, 8-15 the other), so
// the one lane whose B column it feeds holds a whole register pair, loaded
// from shared memory straight into the mma's operand registers. B
// (small, shared by all rows) is decoded once per CTA into shared memory in
// exactly the slot order the lanes need. With several tokens each decoded A
// group feeds every token's mma chain: the decode, two thirds of the loop's
// instructions, is paid once.
//
// A's groups in flight wait in registers, or with RING in a per-warp ring of
// shared memory filled by cp.async (each lane reads back only its own
// pieces): the ring holds loads in flight without the registers, which on an
// H200 streams large weights 4-6% faster.
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
#include "common/nvfp4_gemv_operands.cuh"
#include "common/nvfp4_scale_layout.cuh"
#include "common/ptx.cuh"

namespace kestrel {

struct GemvParams {
  const uint8_t* a;  // [L][M][K/2]
  long long a_batch, a_row;
  GemvOperands o;  // alpha: global scales times 2^28 (the decode's two 2^-14 factors)
};

namespace gemv {

constexpr int kGroup = 128;        // K values per lane-quad step: 4 lanes x 32 values
constexpr int kGroupBytes = 64;    // packed bytes of one row per group
constexpr int kGroupSmem = 256;    // decoded B bytes per group (128 fp16)
constexpr int kRingSlotBytes = 1024;  // one group of a warp's 16 rows of A (RING)

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
template <int RT, int WARPS, int CLUSTER, int TOKENS>
__host__ __device__ constexpr int reduction_bytes() {
  return ((WARPS / RT + CLUSTER) * 16 * RT * 4 * TOKENS + 15) / 16 * 16;
}

// One lane's share of one group: 16 bytes of row g and of row g+8, and the
// scale codes (2 bytes per row) of the adjacent blocks its accumulator
// columns 2t and 2t+1 hold.
struct Stage {
  uint4 row0, row1;
  uint32_t sc0, sc1;
};

template <bool PAIR>
__device__ __forceinline__ uint32_t load_scale_pair(const uint8_t* p) {
  if constexpr (PAIR) {
    return __ldg(reinterpret_cast<const unsigned short*>(p));
  } else {
    return uint32_t(__ldg(p)) | (uint32_t(__ldg(p + 1)) << 8);
  }
}

// fp32 values of the two e4m3 codes packed in the low 16 bits.
__device__ __forceinline__ float2 e4m3x2_to_f32(uint32_t codes) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(codes), __NV_E4M3);
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
}

// A lane's 8 staged B fragment registers of one group: the pairs of its
// block's four mmas.
__device__ __forceinline__ void load_fragments(uint32_t src, uint32_t (&q)[8]) {
  const uint4 x = ptx::ld_shared_v4(src), y = ptx::ld_shared_v4(src + 16);
  q[0] = x.x;
  q[1] = x.y;
  q[2] = x.z;
  q[3] = x.w;
  q[4] = y.x;
  q[5] = y.y;
  q[6] = y.z;
  q[7] = y.w;
}

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
          bool VEC16, bool SCALE_PAIR, int TOKENS, bool RING>
// Resident warps per SM: enough loads in flight to cover DRAM latency. 24
// with a cluster split; without one 16, which leave ptxas 112 registers
// instead of 80 (where rt2 w8 spilled): M 8192 K 8192 20.9 -> 20.1 us, but
// M 1024 K 16384 (c8) 12.4 -> 15.1 at 16 (H100, session 14).
__global__ void __launch_bounds__(WARPS * 32, (CLUSTER == 1 ? 512 : 768) / (WARPS * 32))
    nvfp4_gemv_kernel(const __grid_constant__ GemvParams p) {
  using namespace gemv;
  static_assert(WARPS % RT == 0, "warps must split evenly over row tiles");
  static_assert(TOKENS >= 1 && TOKENS <= 4, "one to four rows of B");
  static_assert(TOKENS == 1 || CLUSTER == 1, "several tokens were tested without a cluster split");
  static_assert(!RING || VEC16, "the ring copies whole 16-byte pieces of A");
  constexpr int KS = WARPS / RT;  // K slices per row tile inside the CTA
  extern __shared__ __align__(16) uint8_t smem[];

  const int crank = CLUSTER > 1 ? int(ptx::cluster_ctarank()) : 0;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int rt = warp % RT, ks = warp / RT;

  const int kblocks = p.o.k / 16;
  const int groups = (p.o.k + kGroup - 1) / kGroup;
  const int g_begin = int((long long)groups * crank / CLUSTER);
  const int g_end = int((long long)groups * (crank + 1) / CLUSTER);
  const int row_bytes = p.o.k / 2;

  // ---- Stage B: decode this CTA's K range once, in lane slot order ----
  // smem group block layout: [t][blk][q][x] of f16x2, mma j = 4 blk + q taking
  // the pair x = 0, 1 (words 2 blk and 2 blk + 1 of lane t's chunk); the
  // tokens' staged rows one after the other.
  // Reduction buffers come first so that every CTA of a cluster agrees on
  // their offsets in the leader; the staged B (whose size varies with the
  // CTA's K range) follows.
  constexpr int ROWS = 16 * RT;
  float* red = reinterpret_cast<float*>(smem);  // [TOKENS][KS][ROWS]
  float* cl = red + TOKENS * KS * ROWS;         // [TOKENS][CLUSTER][ROWS], used in the leader CTA
  // With RING, each warp's ring of DEPTH groups of A ([slot][row g, g + 8][lane]
  // 16-byte pieces) sits between the reduction buffers and the staged B.
  uint8_t* const ring = smem + reduction_bytes<RT, WARPS, CLUSTER, TOKENS>();
  const uint32_t ring_lane = ptx::smem_u32(ring) + warp * DEPTH * kRingSlotBytes + lane * 16;
  uint32_t* bsm = reinterpret_cast<uint32_t*>(ring + (RING ? WARPS * DEPTH * kRingSlotBytes : 0));
  const int token_words = (g_end - g_begin) * (kGroupSmem / 4);  // one token's staged B

  // Every CTA of the cluster must have started before any writes into the
  // leader's shared memory (racecheck flags it otherwise).
  if constexpr (CLUSTER > 1) ptx::cluster_sync();

  // Persistent: the CTAs of a cluster walk the (batch, row tile) work items
  // together; B is staged again only when the batch changes.
  const int tiles = (p.o.m + ROWS - 1) / ROWS;
  const int work_items = tiles * p.o.l;
  int staged_l = -1;
  for (int w = blockIdx.x / CLUSTER; w < work_items; w += gridDim.x / CLUSTER) {
  const int l = w / tiles, tile = w % tiles;
  // ---- Main loop: stream A, mma against staged B ----
  // Rows past M read row M-1 (never stored): the steady state needs no predicates.
  const int row0 = tile * 16 * RT + rt * 16 + g, row1 = row0 + 8;
  const int rr0 = min(row0, p.o.m - 1), rr1 = min(row1, p.o.m - 1);
  const uint8_t* a0 = p.a + l * p.a_batch + (long long)rr0 * p.a_row + t * 16;
  const uint8_t* a1 = p.a + l * p.a_batch + (long long)rr1 * p.a_row + t * 16;
  // Scale pair of blocks (2t, 2t+1) of group gi sits at s + gi * kScaleStep.
  constexpr int kScaleStep = A_BLOCKED ? 1024 : 8;
  const uint8_t* s0 = p.o.sfa + scale_offset<A_BLOCKED>(p.o.sfa_batch, p.o.sfa_row, l, rr0, 2 * t, p.o.m, kblocks);
  const uint8_t* s1 = p.o.sfa + scale_offset<A_BLOCKED>(p.o.sfa_batch, p.o.sfa_row, l, rr1, 2 * t, p.o.m, kblocks);

  // B fragment registers: lanes g == 2t load block 0's pairs (mmas 0-3),
  // lanes g == 2t+1 block 1's (mmas 4-7); every other register stays zero for
  // the whole kernel (its column owns no slot of that lane). A pair per mma
  // leaves ptxas no register moves before it; b0 and b1 of one mma from the
  // two blocks cost 16 moves a group and token (H200, session 47, M2 N4096
  // K4096 10.6 -> 7.2 us, M8192 K8192 at one token 19.5 -> 19.0).
  const bool blk0_lane = g == 2 * t, blk1_lane = g == 2 * t + 1;
  const uint32_t bsm_lane = ptx::smem_u32(bsm + t * 16 + (blk1_lane ? 8 : 0));
  // Per token, rows g and g + 8 (both blocks of a lane summed as they come:
  // four tokens fit 128 registers with two sums each, not with four).
  float acc[TOKENS][2] = {};
  uint32_t bq[2][8] = {};

  auto load = [&](int gi, Stage& st) {
    st.row0 = ptx::ld_stream_v4(a0 + gi * kGroupBytes);
    st.row1 = ptx::ld_stream_v4(a1 + gi * kGroupBytes);
    st.sc0 = load_scale_pair<SCALE_PAIR>(s0 + (long long)gi * kScaleStep);
    st.sc1 = load_scale_pair<SCALE_PAIR>(s1 + (long long)gi * kScaleStep);
  };
  // RING: the group's rows of A go to ring slot `slot` by cp.async, and are
  // read back (each lane its own pieces) just before the group is computed.
  auto issue = [&](int gi, int slot, Stage& st) {
    const uint32_t dst = ring_lane + slot * kRingSlotBytes;
    ptx::cp_async_16(dst, a0 + gi * kGroupBytes);
    ptx::cp_async_16(dst + kRingSlotBytes / 2, a1 + gi * kGroupBytes);
    st.sc0 = load_scale_pair<SCALE_PAIR>(s0 + (long long)gi * kScaleStep);
    st.sc1 = load_scale_pair<SCALE_PAIR>(s1 + (long long)gi * kScaleStep);
  };
  auto take = [&](int slot, Stage& st) {
    const uint32_t src = ring_lane + slot * kRingSlotBytes;
    st.row0 = ptx::ld_shared_v4(src);
    st.row1 = ptx::ld_shared_v4(src + kRingSlotBytes / 2);
  };
  // The last group of a row may be partial (K % 128 != 0): bounds-checked.
  auto load_tail = [&](int gi, Stage& st) {
    const int off = gi * kGroupBytes + t * 16;
    st.row0 = load_chunk<VEC16>(a0 - t * 16, off, row_bytes, true);
    st.row1 = load_chunk<VEC16>(a1 - t * 16, off, row_bytes, true);
    const int kb = gi * 8 + 2 * t;
    auto sc = [&](int row, int b) -> uint32_t {
      return b < kblocks ? uint32_t(__ldg(p.o.sfa + scale_offset<A_BLOCKED>(p.o.sfa_batch, p.o.sfa_row, l,
                                                                        row, b, p.o.m, kblocks)))
                         : 0u;
    };
    st.sc0 = sc(rr0, kb) | (sc(rr0, kb + 1) << 8);
    st.sc1 = sc(rr1, kb) | (sc(rr1, kb + 1) << 8);
  };

  auto compute = [&](int gi, const Stage& st) {
    uint32_t h0[4][4], h1[4][4];
    const uint32_t w0[4] = {st.row0.x, st.row0.y, st.row0.z, st.row0.w};
    const uint32_t w1[4] = {st.row1.x, st.row1.y, st.row1.z, st.row1.w};
#pragma unroll
    for (int wi = 0; wi < 4; ++wi) {
      decode_fp4x8(w0[wi], h0[wi]);
      decode_fp4x8(w1[wi], h1[wi]);
    }
    const float2 sa = e4m3x2_to_f32(st.sc0), sb = e4m3x2_to_f32(st.sc1);
#pragma unroll
    for (int tok = 0; tok < TOKENS; ++tok) {
      const uint32_t src = bsm_lane + 4 * (tok * token_words + (gi - g_begin) * (kGroupSmem / 4));
      if (blk0_lane) load_fragments(src, bq[0]);
      if (blk1_lane) load_fragments(src, bq[1]);
      // Two independent mma chains (even and odd j): 8 dependent mmas were
      // the warp's critical path. Adding them is exact: a column only holds
      // products of one block (at most 16, multiples of one unit and below
      // 2^8 of it).
      float c[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int blk = j / 4, q = j % 4;
        const int lo = 2 * blk, hi = 2 * blk + 1;  // the block's two words
        const uint32_t a[4] = {h0[lo][q], h1[lo][q], h0[hi][q], h1[hi][q]};
        ptx::mma_m16n8k16_f16_f32(c[j % 2], a, bq[blk][2 * q], bq[blk][2 * q + 1]);
      }
      acc[tok][0] = fmaf(c[0][1] + c[1][1], sa.y, fmaf(c[0][0] + c[1][0], sa.x, acc[tok][0]));
      acc[tok][1] = fmaf(c[0][3] + c[1][3], sb.y, fmaf(c[0][2] + c[1][2], sb.x, acc[tok][1]));
    }
  };

  // Full groups: a pipeline DEPTH groups deep (loads for group i + DEPTH * KS
  // are in flight while group i is decoded and multiplied), in registers or,
  // with RING, in the warp's ring (one cp.async group per slot, empty ones too,
  // so that waiting for all but DEPTH - 1 groups means the oldest slot).
  const int g_full = min(g_end, p.o.k / kGroup);
  const int first = g_begin + ks;
  Stage st[DEPTH];
#pragma unroll
  for (int d = 0; d < DEPTH; ++d) {
    const bool full = first + d * KS < g_full;
    if constexpr (RING) {
      if (full) issue(first + d * KS, d, st[d]);
      ptx::cp_async_commit();
    } else if (full) {
      load(first + d * KS, st[d]);
    }
  }
  // B is staged while the first groups of A are in flight.
  if (l != staged_l) {
    __syncthreads();  // every warp is done with the previous batch's B
    staged_l = l;
    const int pieces = (g_end - g_begin) * 4;  // 16-byte pieces of one token's row
    for (int i = threadIdx.x; i < pieces * TOKENS; i += WARPS * 32) {
      const int j = TOKENS == 1 ? 0 : i / pieces, ip = TOKENS == 1 ? i : i % pieces;
      const int gi = g_begin + ip / 4, ct = i % 4;
      const uint8_t* brow = p.o.b + l * p.o.b_batch + j * p.o.b_token;
      uint32_t* dst = bsm + j * token_words + (ip / 4) * (kGroupSmem / 4) + ct * 16;
      // Each 16-value block (two words, one scale) becomes the B pairs of its
      // four mmas: word 2 * blk in the first register of a pair, word
      // 2 * blk + 1 in the second (whole rows of 16 bytes: no bank-conflicted
      // 4-byte stores).
#pragma unroll
      for (int blk = 0; blk < 2; ++blk) {
        const int byte_off = gi * kGroupBytes + ct * 16 + blk * 8;
        uint32_t h[2][4] = {};
        if (byte_off < row_bytes) {  // K is a multiple of 16: a block is whole or absent
          const uint32_t s = splat_e4m3_as_half2(
              ptx::ld_nc_u8(p.o.sfb + scale_offset<B_BLOCKED>(p.o.sfb_batch, p.o.sfb_token, l, j,
                                                              byte_off / 8, p.o.b_rows, kblocks)));
#pragma unroll
          for (int x = 0; x < 2; ++x) {
            decode_fp4x8(ptx::ld_nc_u32(brow + byte_off + 4 * x), h[x]);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&h[x][q]),
                                        *reinterpret_cast<const __half2*>(&s));
              h[x][q] = *reinterpret_cast<const uint32_t*>(&v);
            }
          }
        }
        uint4* d = reinterpret_cast<uint4*>(dst + blk * 8);
        d[0] = make_uint4(h[0][0], h[1][0], h[0][1], h[1][1]);
        d[1] = make_uint4(h[0][2], h[1][2], h[0][3], h[1][3]);
      }
    }
    __syncthreads();
  }

  int gi = first;
  for (; gi + (DEPTH - 1) * KS < g_full; gi += DEPTH * KS) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d) {
      const int next = gi + (d + DEPTH) * KS;
      if constexpr (RING) {
        ptx::cp_async_wait_group<DEPTH - 1>();
        take(d, st[d]);
        compute(gi + d * KS, st[d]);
        if (next < g_full) issue(next, d, st[d]);
        ptx::cp_async_commit();
      } else {
        compute(gi + d * KS, st[d]);
        if (next < g_full) load(next, st[d]);
      }
    }
  }
  // Leftover full groups (fewer than DEPTH), already loaded, then the tail.
  if constexpr (RING) ptx::cp_async_wait_all();
#pragma unroll
  for (int d = 0; d < DEPTH; ++d)
    if (gi + d * KS < g_full) {
      if constexpr (RING) take(d, st[d]);
      compute(gi + d * KS, st[d]);
    }
  for (int gt = max(g_full, first + (g_full - first + KS - 1) / KS * KS); gt < g_end; gt += KS) {
    load_tail(gt, st[0]);
    compute(gt, st[0]);
  }

  // ---- Reduce: columns -> lanes of a quad -> K slices -> cluster ----
  // Thread i < TOKENS * ROWS sums token i / ROWS, row i % ROWS.
#pragma unroll
  for (int tok = 0; tok < TOKENS; ++tok) {
    float r0 = acc[tok][0], r1 = acc[tok][1];
    r0 += __shfl_xor_sync(0xffffffffu, r0, 1);
    r1 += __shfl_xor_sync(0xffffffffu, r1, 1);
    r0 += __shfl_xor_sync(0xffffffffu, r0, 2);
    r1 += __shfl_xor_sync(0xffffffffu, r1, 2);
    if (t == 0) {
      red[(tok * KS + ks) * ROWS + rt * 16 + g] = r0;
      red[(tok * KS + ks) * ROWS + rt * 16 + g + 8] = r1;
    }
  }
  __syncthreads();
  const int tok = threadIdx.x / ROWS, r = threadIdx.x % ROWS;
  const bool sums = threadIdx.x < TOKENS * ROWS;
  float total = 0.f;
  if (sums) {
#pragma unroll
    for (int s = 0; s < KS; ++s) total += red[(tok * KS + s) * ROWS + r];
  }
  if constexpr (CLUSTER > 1) {
    if (sums)
      ptx::st_cluster_f32(
          ptx::map_shared_rank(ptx::smem_u32(cl + (tok * CLUSTER + crank) * ROWS + r), 0), total);
    ptx::cluster_sync();
    if (crank == 0 && sums) {
      total = 0.f;
#pragma unroll
      for (int s = 0; s < CLUSTER; ++s) total += cl[(tok * CLUSTER + s) * ROWS + r];
    }
  }
  const int row = tile * ROWS + r;
  if (crank == 0 && sums && row < p.o.m) {
    OUT* out = reinterpret_cast<OUT*>(p.o.c) + l * p.o.c_batch + tok * p.o.c_token +
               (long long)row * p.o.c_row;
    *out = OUT(total * p.o.alpha);
  }
  // The reduction buffers are rewritten by the next work item.
  if constexpr (CLUSTER > 1) {
    ptx::cluster_sync();
  } else {
    __syncthreads();
  }
  }
}

}  // namespace kestrel
