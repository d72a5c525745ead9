// NVFP4 batched GEMV: c[l][m] = alpha * sum_k A[l][m][k] * B[l][0][k], or for
// several rows j of B (the GEMM at M = 2..16: TOKENS = 2..4, or 8 / 16 WIDE),
// c[l][j][m].
//
// Memory-bound on A (0.5625 bytes per value), and close to bound by issue:
// the decode is most of the loop's instructions. Each lane streams 16-byte
// chunks of two rows of A (rows g and g+8 of a 16-row tile) and decodes each
// word to twice its e2m1 values as int8, in two unsigned parts (positive and
// negative values: two PRMT table lookups a half word, common/fp4_decode.cuh),
// for the integer tensor cores (mma.m16n8k32 u8 x s8, int32 sums): the dot
// products of a block are exact integers, times the two block scales exact
// in fp32, as the Blackwell block-scaled MMA computes them.
//
// The N = 8 columns of the mma carry no second vector; they separate scale
// blocks instead: column 2x collects only the slots that lane x fills from the
// first 16-value block of its chunk, column 2x+1 those from the second, so
// after the 4 + 4 mmas of a 128-value group each column holds one block's dot
// product, the block scales are applied once per block in fp32, and the two
// columns a lane accumulates are adjacent blocks (one 2-byte scale load).
// mma j takes word j of every lane's chunk (its k 4t.. the word's values 0-3,
// 16 + 4t.. values 4-7), so the one lane whose B column it feeds holds a whole
// register pair, loaded from shared memory straight into the mma's operand
// registers. B (small, shared by all rows) is decoded once per CTA into
// shared memory as signed int8 in exactly the slot order the lanes need, with
// its block scales in fp32. With several tokens each decoded A group feeds
// every token's mma chains: the decode is paid once.
//
// From five tokens (WIDE, TOKENS = 8 or 16: the GEMM at M = 5..16, and at
// M = 4 on rows of K >= 8192) the columns carry tokens instead, eight per
// mma: A decodes to fp16 with its block scales folded in by HMUL2 (e2m1 x
// e4m3 is exact in fp16), B comes from the GEMM's activation pre-pass (fp16,
// scales folded in, each lane's 64 bytes together), and m16n8k16 sums over
// all of K in fp32: per group 8 mmas per 8 tokens instead of 8 per token.
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
  GemvOperands o;  // alpha: global scales times the decode factor (1/4; 2^28 at TOKENS > 4)
  // TOKENS > 4: B from the activation pre-pass ([L][TOKENS][Kp] fp16, scales
  // folded in, each lane's 64 bytes together), of which rows < tokens are live.
  const __half* bw;
  long long bw_batch;
  int bw_row;
  int tokens;
};

namespace gemv {

constexpr int kGroup = 128;        // K values per lane-quad step: 4 lanes x 32 values
constexpr int kGroupBytes = 64;    // packed bytes of one row per group
// Staged B per group: 128 values as int8 in the lanes' operand order, then
// the 8 block scales as fp32.
constexpr int kGroupValueBytes = 128;
constexpr int kGroupSmem = kGroupValueBytes + 8 * 4;
constexpr int kRingSlotBytes = 1024;  // one group of a warp's 16 rows of A (RING)

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

// A's two scale codes (low 16 bits) as fp16, each splat over a half2.
__device__ __forceinline__ void e4m3x2_to_h2_splats(uint32_t codes, uint32_t& lo, uint32_t& hi) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(codes), __NV_E4M3);
  const uint32_t v = uint32_t(h.x) | (uint32_t(h.y) << 16);
  lo = __byte_perm(v, 0, 0x1010);
  hi = __byte_perm(v, 0, 0x3232);
}

__device__ __forceinline__ uint32_t hmul2_u32(uint32_t x, uint32_t y) {
  const __half2 r =
      __hmul2(*reinterpret_cast<const __half2*>(&x), *reinterpret_cast<const __half2*>(&y));
  return *reinterpret_cast<const uint32_t*>(&r);
}

// A lane's 4 staged B operand registers of one group: the pairs of its
// block's two mmas.
__device__ __forceinline__ void load_fragments(uint32_t src, uint32_t (&q)[4]) {
  const uint4 x = ptx::ld_shared_v4(src);
  q[0] = x.x;
  q[1] = x.y;
  q[2] = x.z;
  q[3] = x.w;
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
  static_assert((TOKENS >= 1 && TOKENS <= 4) || TOKENS == 8 || TOKENS == 16,
                "one to four rows of B, or column tiles of 8 (WIDE)");
  // WIDE: tokens are the mma's N columns, in tiles of 8 (see the header).
  constexpr bool WIDE = TOKENS > 4;
  constexpr int NT = WIDE ? TOKENS / 8 : 1;
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
  // In a register: ptxas rebuilt it from the CTA's shared window every group.
  const uint32_t ring_lane =
      ptx::opaque(ptx::smem_u32(ring) + warp * DEPTH * kRingSlotBytes + lane * 16);
  uint32_t* bsm = reinterpret_cast<uint32_t*>(ring + (RING ? WARPS * DEPTH * kRingSlotBytes : 0));
  const int token_bytes = (g_end - g_begin) * kGroupSmem;  // one token's staged B

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

  // B operand registers: lanes g == 2t load block 0's pairs (mmas 0, 1),
  // lanes g == 2t+1 block 1's (mmas 2, 3); every other register stays zero for
  // the whole kernel (its column owns no slot of that lane). A pair per mma
  // leaves ptxas no register moves before it (b0 and b1 of one mma from two
  // lanes' registers cost 16 moves a group and token, session 47). Every lane
  // reads the B scales of its two blocks.
  const bool blk0_lane = g == 2 * t, blk1_lane = g == 2 * t + 1;
  // Held in registers: ptxas would rebuild them (and copy the decode's table
  // word before each PRMT) every group.
  const uint32_t bsm_lane = ptx::opaque(ptx::smem_u32(bsm) + (2 * t + (blk1_lane ? 1 : 0)) * 16);
  const uint32_t bsm_scales = ptx::opaque(ptx::smem_u32(bsm) + kGroupValueBytes + t * 8);
  const uint32_t table_lo = kE2m1x2Lo + uint32_t(ptx::opaque(uint32_t(blk0_lane && blk1_lane)));
  // Per token, rows g and g + 8 (both blocks of a lane summed as they come:
  // four tokens fit 128 registers with two sums each, not with four).
  float acc[WIDE ? 1 : TOKENS][2] = {};
  uint32_t bq[2][4] = {};
  // WIDE: per column tile, two chains of the mma's fp32 accumulators over all
  // of K; the lane's B pairs of token 8n + g from the pre-pass's rows.
  float cw[NT][2][4] = {};
  const __half* const bw_lane =
      WIDE ? p.bw + l * p.bw_batch + (long long)g * p.bw_row + t * 32 : nullptr;

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

  // WIDE: A's values in fp16 with its block scales folded in (e2m1 x e4m3 is
  // exact in fp16, as the pre-pass's B is), so the accumulators run over all
  // of K with no per-block step; 8 mmas a column tile of 8 tokens.
  auto compute_wide = [&](int gi, const Stage& st) {
    uint32_t h0[4][4], h1[4][4];
    const uint32_t w0[4] = {st.row0.x, st.row0.y, st.row0.z, st.row0.w};
    const uint32_t w1[4] = {st.row1.x, st.row1.y, st.row1.z, st.row1.w};
    uint32_t f0[2], f1[2];  // [block 2t, 2t + 1] scale splats of rows g, g + 8
    e4m3x2_to_h2_splats(st.sc0, f0[0], f0[1]);
    e4m3x2_to_h2_splats(st.sc1, f1[0], f1[1]);
#pragma unroll
    for (int wi = 0; wi < 4; ++wi) {
      decode_fp4x8(w0[wi], h0[wi]);
      decode_fp4x8(w1[wi], h1[wi]);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        h0[wi][q] = hmul2_u32(h0[wi][q], f0[wi / 2]);
        h1[wi][q] = hmul2_u32(h1[wi][q], f1[wi / 2]);
      }
    }
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      // Pair p of the lane's chunk is word p / 4, output pair p % 4 of the
      // decode, in A and in the pre-pass's B alike; mma j takes pairs 2j, 2j + 1.
      const uint4* src = reinterpret_cast<const uint4*>(bw_lane + (long long)n * 8 * p.bw_row +
                                                        (long long)gi * kGroup);
      uint32_t bp[16];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint4 v = src[i];
        bp[4 * i] = v.x;
        bp[4 * i + 1] = v.y;
        bp[4 * i + 2] = v.z;
        bp[4 * i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int wi = j / 2, q = 2 * (j % 2);
        const uint32_t a[4] = {h0[wi][q], h1[wi][q], h0[wi][q + 1], h1[wi][q + 1]};
        ptx::mma_m16n8k16_f16_f32(cw[n][j % 2], a, bp[2 * j], bp[2 * j + 1]);
      }
    }
  };

  auto compute = [&](int gi, const Stage& st) {
    if constexpr (WIDE) {
      compute_wide(gi, st);
      return;
    }
    // Twice A's values as unsigned positive and negative parts ([row g,
    // g + 8][word][values 0-3, 4-7]): mma j takes word j of every lane, rows
    // g and g + 8 (its k 4t.. the word's values 0-3, 16 + 4t.. values 4-7).
    uint32_t pa[2][4][2], na[2][4][2];
    const uint32_t w0[4] = {st.row0.x, st.row0.y, st.row0.z, st.row0.w};
    const uint32_t w1[4] = {st.row1.x, st.row1.y, st.row1.z, st.row1.w};
#pragma unroll
    for (int wi = 0; wi < 4; ++wi) {
      decode_fp4x8_s8(w0[wi], pa[0][wi], na[0][wi], table_lo);
      decode_fp4x8_s8(w1[wi], pa[1][wi], na[1][wi], table_lo);
    }
    const float2 sa = e4m3x2_to_f32(st.sc0), sb = e4m3x2_to_f32(st.sc1);
#pragma unroll
    for (int tok = 0; tok < TOKENS; ++tok) {
      const uint32_t off = tok * token_bytes + (gi - g_begin) * kGroupSmem;
      if (blk0_lane) load_fragments(bsm_lane + off, bq[0]);
      if (blk1_lane) load_fragments(bsm_lane + off, bq[1]);
      const float2 s2 = ptx::ld_shared_v2_f32(bsm_scales + off);  // B's scales, blocks 2t, 2t + 1
      // The positive and negative parts in two independent chains. A column
      // only holds one block's products (16 at most, each of magnitude 144 at
      // most): exact in int32, and in fp32 after.
      int cp[4] = {0, 0, 0, 0}, cn[4] = {0, 0, 0, 0};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int blk = j / 2, q = j % 2;
        const uint32_t ap[4] = {pa[0][j][0], pa[1][j][0], pa[0][j][1], pa[1][j][1]};
        const uint32_t an[4] = {na[0][j][0], na[1][j][0], na[0][j][1], na[1][j][1]};
        ptx::mma_m16n8k32_u8s8_s32(cp, ap, bq[blk][2 * q], bq[blk][2 * q + 1]);
        ptx::mma_m16n8k32_u8s8_s32(cn, an, bq[blk][2 * q], bq[blk][2 * q + 1]);
      }
      // A block's dot times its two scales (e4m3 x e4m3: 8 significant bits)
      // is exact in fp32; only the sums round.
      acc[tok][0] = fmaf(float(cp[1] - cn[1]), sa.y * s2.y,
                         fmaf(float(cp[0] - cn[0]), sa.x * s2.x, acc[tok][0]));
      acc[tok][1] = fmaf(float(cp[3] - cn[3]), sb.y * s2.y,
                         fmaf(float(cp[2] - cn[2]), sb.x * s2.x, acc[tok][1]));
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
  // B is staged while the first groups of A are in flight (WIDE: the
  // pre-pass that wrote it must be done: programmatic dependent launch).
  if constexpr (WIDE) ptx::griddep_wait();
  if (!WIDE && l != staged_l) {
    __syncthreads();  // every warp is done with the previous batch's B
    staged_l = l;
    const int pieces = (g_end - g_begin) * 4;  // 16-byte pieces of one token's row
    for (int i = threadIdx.x; i < pieces * TOKENS; i += WARPS * 32) {
      const int j = TOKENS == 1 ? 0 : i / pieces, ip = TOKENS == 1 ? i : i % pieces;
      const int gi = g_begin + ip / 4, ct = i % 4;
      const uint8_t* brow = p.o.b + l * p.o.b_batch + j * p.o.b_token;
      uint8_t* group = reinterpret_cast<uint8_t*>(bsm) + j * token_bytes + (ip / 4) * kGroupSmem;
      // Each 16-value block (two words, one scale) becomes the B pairs of its
      // two mmas: a word's values 0-3 in the first register of its pair, 4-7
      // in the second (a whole 16-byte row a block: no bank-conflicted 4-byte
      // stores), and its scale in fp32.
#pragma unroll
      for (int blk = 0; blk < 2; ++blk) {
        const int byte_off = gi * kGroupBytes + ct * 16 + blk * 8;
        uint32_t v[2][2] = {};
        float scale = 0.f;
        if (byte_off < row_bytes) {  // K is a multiple of 16: a block is whole or absent
          scale = e4m3_to_f32(
              ptx::ld_nc_u8(p.o.sfb + scale_offset<B_BLOCKED>(p.o.sfb_batch, p.o.sfb_token, l, j,
                                                              byte_off / 8, p.o.b_rows, kblocks)));
#pragma unroll
          for (int x = 0; x < 2; ++x)
            decode_fp4x8_s8_signed(ptx::ld_nc_u32(brow + byte_off + 4 * x), v[x]);
        }
        *reinterpret_cast<uint4*>(group + (2 * ct + blk) * 16) =
            make_uint4(v[0][0], v[0][1], v[1][0], v[1][1]);
        *reinterpret_cast<float*>(group + kGroupValueBytes + (2 * ct + blk) * 4) = scale;
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
  if constexpr (WIDE) {
    // Lane (g, t) holds rows g, g + 8 of tokens 8n + 2t, 8n + 2t + 1 whole.
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        red[((8 * n + 2 * t + e % 2) * KS + ks) * ROWS + rt * 16 + g + 8 * (e / 2)] =
            cw[n][0][e] + cw[n][1][e];
  }
#pragma unroll
  for (int tok = 0; tok < (WIDE ? 0 : TOKENS); ++tok) {
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
  // Thread i sums token i / ROWS, row i % ROWS over the K slices (and the
  // cluster, which only one token uses: a thread per row).
  auto kslice_sum = [&](int i) {
    float total = 0.f;
#pragma unroll
    for (int s = 0; s < KS; ++s) total += red[((i / ROWS) * KS + s) * ROWS + i % ROWS];
    return total;
  };
  auto store = [&](int i, float total) {
    const int tok = i / ROWS, row = tile * ROWS + i % ROWS;
    if (row < p.o.m && tok < (WIDE ? p.tokens : TOKENS)) {
      OUT* out = reinterpret_cast<OUT*>(p.o.c) + l * p.o.c_batch + tok * p.o.c_token +
                 (long long)row * p.o.c_row;
      *out = OUT(total * p.o.alpha);
    }
  };
  if constexpr (CLUSTER > 1) {
    const int r = threadIdx.x;
    const bool sums = r < ROWS;
    if (sums)
      ptx::st_cluster_f32(ptx::map_shared_rank(ptx::smem_u32(cl + crank * ROWS + r), 0),
                          kslice_sum(r));
    ptx::cluster_sync();
    if (crank == 0 && sums) {
      float total = 0.f;
#pragma unroll
      for (int s = 0; s < CLUSTER; ++s) total += cl[s * ROWS + r];
      store(r, total);
    }
  } else {
    for (int i = threadIdx.x; i < TOKENS * ROWS; i += WARPS * 32) store(i, kslice_sum(i));
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
