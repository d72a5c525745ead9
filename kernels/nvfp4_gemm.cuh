// NVFP4 GEMM on Hopper tensor cores, swap-AB: the weights W (N x K, the large
// operand) are the wgmma M side, the tokens (M of the user's problem) the
// wgmma N side, so a token count of 8..256 costs no padding.
//
//   C[l][m][n] = alpha * sum_k X[l][m][k] * W[l][n][k]    (computed as W . X^T)
//
// Stages (ThunderKittens-style roles):
//  - producer warp: TMA loads of the FP4 weight tile (BM rows x 64 bytes;
//    W_PACKED: two contiguous bulk copies of 64 rows' values and scale codes
//    each, kernels/nvfp4_weight_pack.cuh) and of the fp16 activation tile
//    (BN tokens x 128, 128-byte swizzled, prepared by
//    kernels/nvfp4_act_prepass.cuh) into a STAGES-deep mbarrier ring;
//  - two (or three) consumer warpgroups, 64 weight rows each: every lane
//    reads 16 bytes of two rows from shared memory, decodes them to fp16 by
//    bit placement and scales them by the e4m3 block scale (exact), and
//    issues wgmma with the weights as the register A operand. Stage i + 1 is decoded while stage
//    i's wgmmas are in flight (double-buffered A registers), yet measured on
//    the H100 the two barely overlap: beside running wgmmas an SMSP issues
//    ~0.22 ALU instructions per cycle, in any warp, so every instruction
//    taken out of the loop shows (NOTES.md, GEMM, sessions 11 and 12);
//  - epilogue: alpha * acc (dual: the SwiGLU of a thread's gate and up
//    sums) to fp16/bf16, staged in shared memory as C's layout and stored by
//    TMA (or in 16-byte rows where C's layout does not allow TMA).
// Without a K split the CTAs are persistent: each takes tiles in turn, its
// producer loading the next tile while the consumers store the last (4096^3:
// -3%, H100, session 14). With SPLIT > 1 a CTA takes one tile's share of K,
// and the shares meet over distributed shared memory (a cluster) or L2,
// added in rank order (deterministic). GROUPED (mixture-of-experts): the
// persistent CTAs take every group's tiles in turn, each group's rows of A
// and C against its own weight (batch g), from a table of the groups' tile
// and row ends that each CTA builds from the device group ends.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "common/fp4_decode.cuh"
#include "common/nvfp4_weight_order.cuh"
#include "common/row_io.cuh"
#include "common/tma_pipeline.cuh"
#include "common/wgmma.cuh"

namespace kestrel {

struct GemmParams {
  const uint8_t* sw;  // weight scales: linear [L][N][K/16] (strided) or blocked
  long long sw_batch, sw_row;
  const uint8_t* sw2;  // dual GEMM: the second weight's scales (same layout)
  long long sw2_batch, sw2_row;
  void* c;  // [L][M][N] fp16/bf16
  long long c_batch, c_row;
  int m, n, k;
  int batches;   // L
  int c_tma;     // 1: C leaves by TMA stores (tmap_c): no K split, tiles of 64 columns or 128
  float alpha;   // global scales * 2^28 (both operands carry the decode's 2^-14)
  float alpha2;  // dual GEMM: the same for the second weight
  float* partial;  // partials through L2: [tile][part][BN / 8][256] float4 accumulators
  int* arrivals;   // partials through L2: parts arrived per tile; zero between calls
  // Partials through L2 with a K tail: the last tail_stages of every tile are
  // taken by tail_ctas CTAs after the split's (0: none).
  int tail_stages, tail_ctas;
  // W_PACKED: the weights in stage order (common/nvfp4_weight_order.cuh),
  // [L][w_blocks][k_stages][64 x 64 B values | 64 x 8 scale codes], and the
  // second weight's (dual); sw / sw2 are then unused.
  const uint8_t* w_packed;
  const uint8_t* w2_packed;
  long long w_packed_batch;  // bytes per batch
  // Grouped GEMM (groups > 0, no K split): A and C are [m][...] with group g
  // on rows [e(g - 1), e(g)), e the running maximum of group_ends clamped to
  // [0, m] (bad ends read and write nothing out of bounds); W's batch g is
  // group g's weight. Tiles run group by group, each group's token tiles
  // padded on its own.
  const int* group_ends;
  int groups;
};

namespace gemm {

constexpr int kBM = 128;            // plain GEMM: weight rows per CTA (2 consumer warpgroups x 64)
constexpr int kBK = 128;            // K values per stage
constexpr int kWStageBytes = kBM * kBK / 2;
static_assert(2 * kPackedValueBytes == kWStageBytes && 2 * kPackedStageBytes == kBK &&
                  kPackedStageBlocks == kBK / 16,
              "a packed weight stage is two 64-row blocks of one stage");
// Weight bytes of a stage in shared memory: 64 rows per consumer warpgroup
// (dual: half of them W1's, half W2's), packed with their scale codes.
template <bool W_PACKED, int CONSUMERS>
constexpr int kWSmemStageBytes =
    CONSUMERS * (W_PACKED ? kPackedBlockStageBytes : kPackedRows * kPackedStageBytes);

// A packed dual tile of three consumer warpgroups (96 columns) is a block and
// a half of each weight: tile t starts in block 3t / 2, mid-block when t is
// odd. Its stage holds per weight two pieces, [values | scale codes] each:
// block 3t / 2 and the first half of the next (t even), or the second half of
// block 3t / 2 and the next block (t odd): three bulk copies. The offsets of
// the values and scale codes of tile column `col` within them:
__device__ __forceinline__ uint2 packed96_offsets(int col, bool odd) {
  const int from_block = col + (odd ? kPackedRows / 2 : 0);  // row from block 3t / 2's start
  const int first_rows = odd ? kPackedRows / 2 : kPackedRows;
  const bool first = from_block < kPackedRows;
  const int piece = first ? 0 : first_rows * (kPackedStageBytes + kPackedStageBlocks);
  const int rows = first ? first_rows : 3 * kPackedRows / 2 - first_rows;
  const int row = first ? from_block - (kPackedRows - first_rows) : from_block - kPackedRows;
  return make_uint2(piece + row * kPackedStageBytes,
                    piece + rows * kPackedStageBytes + row * kPackedStageBlocks);
}

template <int BN>
struct Smem {
  static constexpr int kXAtomBytes = BN * 128;  // BN rows x 64 fp16, 128-byte swizzle
  static constexpr int kXStageBytes = 2 * kXAtomBytes;
  static constexpr int kStageBytes = kWStageBytes + kXStageBytes;
};

template <bool BLOCKED>
__device__ __forceinline__ long long scale_off(const GemmParams& p, long long batch,
                                               long long stride, int l, int row, int kb) {
  const int kblocks = p.k / 16;
  if constexpr (BLOCKED) {
    const long long rest_k = (kblocks + 3) / 4, rest_mn = (p.n + 127) / 128;
    return (long long)l * rest_mn * rest_k * 512 + ((row / 128) * rest_k + kb / 4) * 512 +
           (row % 32) * 16 + ((row % 128) / 32) * 4 + kb % 4;
  } else {
    return l * batch + row * stride + kb;
  }
}

// A pair of e4m3 codes (block 2t | block 2t + 1 << 8) as a half2, one
// conversion; each half reaches HMUL2 as a broadcast operand (.H0_H0 /
// .H1_H1), with no splat instructions of its own.
__device__ __forceinline__ __half2 e4m3_pair_half2(uint32_t pair) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(pair & 0xffff), __NV_E4M3);
  return __half2(h);
}

// a * (half `which` of s, twice).
__device__ __forceinline__ uint32_t hmul2_by_half(uint32_t a, __half2 s, int which) {
  const __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&a),
                            which ? __high2half2(s) : __low2half2(s));
  return *reinterpret_cast<const uint32_t*>(&r);
}

// One lane's weight operand for one stage: 8 k16 steps x (a0a1, a2a3, a4a5,
// a6a7) = rows g and g+8, pairs 2j and 2j+1.
struct WFrag {
  uint32_t a[8][4];
};

// The e4m3 scale codes a lane needs per stage: for row g and row g+8, the
// pair (block 2t | block 2t+1 << 8) of the stage's eight 16-value blocks.
struct WScales {
  uint32_t pair[2];
};

// The decode's even / odd nibble masks as opaque registers: with constants,
// ptxas folds each mask into the two shifts after it and spends 15 integer
// ops per word instead of 13 (the M = 128 loop time follows the consumers'
// instruction count: H100, session 11).
struct NibbleMasks {
  uint32_t even = ptx::opaque(0x0F0F0F0Fu), odd = ptx::opaque(0xF0F0F0F0u);
};

// w_lane: shared address of this lane's 16 bytes of its first row in the
// stage; its second row (the fragment's row g + 8) is ROW8_BYTES on.
template <int ROW8_BYTES, bool PACKED>
__device__ __forceinline__ void decode_stage(uint32_t w_lane, const WScales& sc,
                                             const NibbleMasks& nm, WFrag& f) {
  const uint4 r0 = ptx::ld_shared_v4(w_lane);
  const uint4 r1 = ptx::ld_shared_v4(w_lane + ROW8_BYTES);
  const uint32_t w0[4] = {r0.x, r0.y, r0.z, r0.w}, w1[4] = {r1.x, r1.y, r1.z, r1.w};
  const __half2 s0 = e4m3_pair_half2(sc.pair[0]), s1 = e4m3_pair_half2(sc.pair[1]);
#pragma unroll
  for (int wi = 0; wi < 4; ++wi) {
    uint32_t h0[4], h1[4];
    if constexpr (PACKED) {
      decode_packed_fp4x8(w0[wi], h0);
      decode_packed_fp4x8(w1[wi], h1);
    } else {
      decode_fp4x8(w0[wi], h0, nm.even, nm.odd);
      decode_fp4x8(w1[wi], h1, nm.even, nm.odd);
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int pair = wi * 4 + q, j = pair / 2, e = pair % 2;
      f.a[j][2 * e] = hmul2_by_half(h0[q], s0, wi / 2);
      f.a[j][2 * e + 1] = hmul2_by_half(h1[q], s1, wi / 2);
    }
  }
}

// The tiles, K stages and partial slot a CTA takes: tiles first, first +
// stride, ... (count of them, linear: weight tile fastest, then token tile,
// then batch), each over stages [kb_begin, kb_end).
struct CtaWork {
  long long first, stride;
  int count, kb_begin, kb_end, slot;
};

// SPLIT == 1 without L2 partials: persistent CTAs over whole tiles (a CTA's
// next tile loads while it stores the last). A cluster split: one tile, the
// rank's share of K. Partials through L2: the first tiles * SPLIT CTAs take
// one tile's share each of its first k_stages - tail_stages; the tail_ctas
// after them take the last tail_stages of tiles j, j + tail_ctas, ... (the
// SMs a split leaves idle: seed 1's 56 tiles x 2 leave 20).
template <int SPLIT, bool SPLIT_L2>
__device__ __forceinline__ CtaWork cta_work(const GemmParams& p, long long tiles, int tiles_n,
                                            int tiles_m, int k_stages) {
  auto share = [](int stages, int rank) { return int((long long)stages * rank / SPLIT); };
  if constexpr (SPLIT_L2) {
    const long long b = blockIdx.x, mains = tiles * SPLIT;
    const int main_stages = k_stages - p.tail_stages;
    if (b < mains) {
      const int rank = int(b % SPLIT);
      return {b / SPLIT, 1, 1, share(main_stages, rank), share(main_stages, rank + 1), rank};
    }
    const long long j = b - mains;
    return {j, p.tail_ctas, int((tiles - j + p.tail_ctas - 1) / p.tail_ctas), main_stages,
            k_stages, SPLIT};
  } else if constexpr (SPLIT > 1) {
    const int rank = int(ptx::cluster_ctarank());
    const long long tile =
        ((long long)blockIdx.z * tiles_m + blockIdx.y) * tiles_n + blockIdx.x / SPLIT;
    return {tile, 1, 1, share(k_stages, rank), share(k_stages, rank + 1), rank};
  } else {
    const long long b = blockIdx.x;
    return {b, gridDim.x, int((tiles - b + gridDim.x - 1) / gridDim.x), 0, k_stages, 0};
  }
}

}  // namespace gemm

// Grouped GEMM: per group, the end of its tiles (a prefix over groups) and
// of its rows; tile_of_group maps a tile to (weight tile, token tile, group).
struct GroupTable {
  int* tile_end;
  int* row_end;
  __device__ __forceinline__ int row_begin(int g) const { return g > 0 ? row_end[g - 1] : 0; }
};

// Built once per CTA by one warp: ends clamped to a running maximum in
// [0, m], tiles = token tiles of the group x tiles_n, both scanned.
__device__ __forceinline__ void build_group_table(const GemmParams& p, int block_n, int tiles_n,
                                                  GroupTable t, int lane) {
  int row_carry = 0, tile_carry = 0;
  for (int g0 = 0; g0 < p.groups; g0 += 32) {
    const int g = g0 + lane;
    int end = g < p.groups ? min(max(p.group_ends[g], 0), p.m) : 0;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, end, d);
      if (lane >= d) end = max(end, v);
    }
    end = max(end, row_carry);
    const int before = __shfl_up_sync(0xffffffffu, end, 1);
    const int begin = lane == 0 ? row_carry : before;
    int tiles = g < p.groups ? (end - begin + block_n - 1) / block_n * tiles_n : 0;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, tiles, d);
      if (lane >= d) tiles += v;
    }
    tiles += tile_carry;
    if (g < p.groups) {
      t.row_end[g] = end;
      t.tile_end[g] = tiles;
    }
    row_carry = __shfl_sync(0xffffffffu, end, 31);
    tile_carry = __shfl_sync(0xffffffffu, tiles, 31);
  }
}

// The group of tile t: the first whose tile_end exceeds t (empty groups end
// where the one before does).
__device__ __forceinline__ int3 tile_of_group(const GroupTable& t, int groups, int tiles_n,
                                              long long tile) {
  int lo = 0, hi = groups - 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (t.tile_end[mid] > tile) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const int local = int(tile - (lo > 0 ? t.tile_end[lo - 1] : 0));
  return make_int3(local % tiles_n, local / tiles_n, lo);
}

// DUAL (the SwiGLU up-projection): a tile is 64 (CONSUMERS = 3: 96) output
// columns of W1 and of W2 against one shared activation tile. The fragment
// rows g and g + 8 of a lane are one column's W1 row and W2 row (warpgroup w:
// columns 32w .. 32w + 31), so each thread holds the gate and up sums of
// its outputs and writes silu(alpha * gate) * (alpha2 * up) itself; the K
// splits are the plain GEMM's.
// SPLIT_L2: the CTAs of a tile's parts (its SPLIT shares, and with K_TAIL
// its K tail, p.tail_ctas > 0) are not a cluster; they leave their
// accumulators in L2 and the last to arrive adds them (no co-scheduling, so
// any split fits in one wave); else a split's cluster adds them over DSMEM.
// CONSUMERS: consumer warpgroups, 2, or 3 for a dual tile of 96 columns
// without a K split (at M = 512, N = 3072 its 32 x 4 tiles of 128 tokens fill
// 128 of 132 SMs where 48 x 2 tiles of 256 fill 96).
template <typename OUT, int BN, int STAGES, int SPLIT, bool W_BLOCKED, bool DUAL, bool SPLIT_L2,
          bool W_PACKED, bool K_TAIL, int CONSUMERS, bool GROUPED = false>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    nvfp4_gemm_kernel(const __grid_constant__ TmaMap tmap_w, const __grid_constant__ TmaMap tmap_w2,
                      const __grid_constant__ TmaMap tmap_x, const __grid_constant__ TmaMap tmap_c,
                      const __grid_constant__ GemmParams p) {
  using namespace gemm;
  using S = Smem<BN>;
  static_assert(BN % 8 == 0 && BN >= 8 && BN <= 256, "wgmma N");
  static_assert(CONSUMERS == 2 || (CONSUMERS == 3 && DUAL && SPLIT == 1 && !SPLIT_L2 && BN <= 128),
                "three consumer warpgroups: dual tiles of up to 128 tokens without a K split");
  constexpr int kConsumerThreads = 128 * CONSUMERS;
  constexpr int kAcc = BN / 2;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  // 1024-byte alignment for the swizzled activation atoms. (An offset from
  // smem_raw, not a rounded integer: the pointer must stay visibly shared
  // for the weight reads to compile to LDS rather than generic loads.)
  uint8_t* smem = smem_raw + ((1024u - (ptx::smem_u32(smem_raw) & 1023u)) & 1023u);
  uint8_t* x_smem = smem;                              // [STAGES][2 atoms][BN][128 B]
  // [STAGES][BM][64 B]; packed, [STAGES][2 blocks][64 rows x 64 B | 64 x 8 scale codes]
  uint8_t* w_smem = smem + STAGES * S::kXStageBytes;
  constexpr int kWStage = kWSmemStageBytes<W_PACKED, CONSUMERS>;
  constexpr bool kPacked96 = W_PACKED && DUAL && CONSUMERS == 3;
  uint64_t* full = reinterpret_cast<uint64_t*>(w_smem + STAGES * kWStage);
  uint64_t* empty = full + STAGES;

  static_assert(SPLIT_L2 || !K_TAIL, "a K tail meets through L2");
  static_assert(!GROUPED || (SPLIT == 1 && !SPLIT_L2), "a grouped GEMM has no K split");
  // Output columns (weight rows) per CTA.
  constexpr int kRowsPerTile = DUAL ? 32 * CONSUMERS : kBM;
  const int tiles_n = (p.n + kRowsPerTile - 1) / kRowsPerTile, tiles_m = (p.m + BN - 1) / BN;
  // (Past the barriers: the split's last_flag word, then the group table.)
  const GroupTable groups{reinterpret_cast<int*>(empty + STAGES) + 4,
                          reinterpret_cast<int*>(empty + STAGES) + 4 + p.groups};
  auto tile_at = [&](long long t) {
    if constexpr (GROUPED) return tile_of_group(groups, p.groups, tiles_n, t);
    return make_int3(int(t % tiles_n), int(t / tiles_n % tiles_m), int(t / tiles_n / tiles_m));
  };
  const int k_stages = (p.k + kBK - 1) / kBK;
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      ptx::mbar_init(&full[s], 1);
      ptx::mbar_init(&empty[s], W_PACKED ? kConsumerThreads : 4 * CONSUMERS);  // per thread / warp
    }
    ptx::fence_barrier_init();
  }
  // (Warp 1 of the producer warpgroup is otherwise idle.)
  if (GROUPED && threadIdx.x / 32 == 1) build_group_table(p, BN, tiles_n, groups, threadIdx.x % 32);
  __syncthreads();
  const long long tiles =
      GROUPED ? (long long)groups.tile_end[p.groups - 1] : (long long)tiles_n * tiles_m * p.batches;
  const CtaWork work = cta_work<SPLIT, SPLIT_L2>(p, tiles, tiles_n, tiles_m, k_stages);
  // A grouped launch's grid is sized before its tiles are known.
  if (GROUPED && work.count <= 0) return;
  const int kb_begin = work.kb_begin, n_iters = work.kb_end - work.kb_begin;

  // Each role is one branch (setmaxnreg needs it): the accumulators live only
  // in the consumer branch, epilogue included.
  if (wg == 0) {
    // ---- producer ----
    // (Its other three warps stay idle: 160 integer ops per stage issued
    // there, paced by the ring, made M128 N7168 K16384 11% slower, as the
    // consumers' bn128 loop is bound by its SMSPs' issue (H100, session 29).)
    // (Three consumer warpgroups: 32 + 3 x 160 registers of the 512 a lane.)
    ptx::setmaxnreg_dec<CONSUMERS == 3 ? 32 : 40>();
    if (threadIdx.x == 0) {
      if constexpr (!W_PACKED) ptx::prefetch_tma_map(&tmap_w);  // else a stand-in
      ptx::prefetch_tma_map(&tmap_x);
      if (p.c_tma) ptx::prefetch_tma_map(&tmap_c);  // else tmap_c is a stand-in
      // With one token tile every weight stage is read once, by one CTA: its
      // L2 lines are marked evict-first (measured on the H100, session 15:
      // M16 N8192 K8192 -10%, the M128 seeds -1 to -1.5%). With more token
      // tiles the other tiles' CTAs read the same stages, so they stay.
      const uint64_t w_policy = tiles_m == 1 ? ptx::l2_evict_first() : ptx::l2_evict_normal();
      // Ring position r (counted over the CTA's tiles) holds stage kb of tile tc.
      auto load_w = [&](int r, int kb, int3 tc) {
        const int s = r % STAGES;
        ptx::mbar_arrive_expect_tx(&full[s], kWStage + S::kXStageBytes);
        if constexpr (W_PACKED) {
          // Two contiguous blocks (values and scale codes): plain, the
          // tile's two 64-row blocks; dual, W1's and W2's of its 64 columns.
          uint8_t* dst = w_smem + s * kWStage;
          const long long at = tc.z * p.w_packed_batch + (long long)kb * kPackedBlockStageBytes;
          const long long block_step = (long long)k_stages * kPackedBlockStageBytes;
          if constexpr (kPacked96) {
            // (packed96_offsets.) A next block past the packed rows (its
            // columns past N, never stored) is read as the last block.
            constexpr int kHalfValues = kPackedValueBytes / 2, kHalfScales = kPackedScaleBytes / 2;
            const int odd = tc.x % 2;
            const long long first = tc.x * 3 / 2;
            const long long next = min(first + 1, packed_weight_blocks(p.n) - 1);
            const long long whole = at + (odd ? next : first) * block_step;
            const long long half = at + (odd ? first : next) * block_step;
            uint8_t* const half_dst = dst + (odd ? 0 : kPackedBlockStageBytes);
#pragma unroll 1
            for (int w = 0; w < 2; ++w) {  // (unrolled, the producer's 32 registers spill)
              const uint8_t* src = w ? p.w2_packed : p.w_packed;
              const int to = w * (kWStage / 2);
              ptx::bulk_load(dst + to + (odd ? kPackedBlockStageBytes / 2 : 0), src + whole,
                             kPackedBlockStageBytes, &full[s], w_policy);
              ptx::bulk_load(half_dst + to, src + half + odd * kHalfValues, kHalfValues, &full[s],
                             w_policy);
              ptx::bulk_load(half_dst + to + kHalfValues,
                             src + half + kPackedValueBytes + odd * kHalfScales, kHalfScales,
                             &full[s], w_policy);
            }
          } else if constexpr (DUAL) {
            ptx::bulk_load(dst, p.w_packed + at + tc.x * block_step, kPackedBlockStageBytes,
                           &full[s], w_policy);
            ptx::bulk_load(dst + kPackedBlockStageBytes, p.w2_packed + at + tc.x * block_step,
                           kPackedBlockStageBytes, &full[s], w_policy);
          } else {
            const uint8_t* src = p.w_packed + at + 2 * tc.x * block_step;
            ptx::bulk_load(dst, src, kPackedBlockStageBytes, &full[s], w_policy);
            ptx::bulk_load(dst + kPackedBlockStageBytes, src + block_step, kPackedBlockStageBytes,
                           &full[s], w_policy);
          }
        } else if constexpr (DUAL) {
          ptx::tma_load_3d(w_smem + s * kWStage, &tmap_w, &full[s], kb * (kBK / 2),
                           tc.x * kRowsPerTile, tc.z, w_policy);
          ptx::tma_load_3d(w_smem + s * kWStage + kWStage / 2, &tmap_w2, &full[s], kb * (kBK / 2),
                           tc.x * kRowsPerTile, tc.z, w_policy);
        } else {
          ptx::tma_load_3d(w_smem + s * kWStageBytes, &tmap_w, &full[s], kb * (kBK / 2), tc.x * kBM,
                           tc.z, w_policy);
        }
      };
      auto load_x = [&](int r, int kb, int3 tc) {
        uint8_t* xs = x_smem + (r % STAGES) * S::kXStageBytes;
        // Grouped: one batch of activations, the group's rows.
        const int row = (GROUPED ? groups.row_begin(tc.z) : 0) + tc.y * BN;
        const int batch = GROUPED ? 0 : tc.z;
        ptx::tma_load_3d(xs, &tmap_x, &full[r % STAGES], kb * kBK, row, batch);
        ptx::tma_load_3d(xs + S::kXAtomBytes, &tmap_x, &full[r % STAGES], kb * kBK + 64, row,
                         batch);
      };
      // The first stages' weights go out before the wait for the activation
      // pre-pass (launched ahead of this kernel, which may overlap it). The
      // grid never exceeds the tiles, so every CTA has a first tile.
      // Every CTA takes its stages in K order, so the CTAs sharing a token
      // tile read each activation stage at about the same time: each tile's
      // stages rotated by its weight column instead made M128 N7168 K16384
      // 18% slower and 4096^3 7% (H100, session 29).
      const int first = min(STAGES, n_iters);
      const int3 tc0 = tile_at(work.first);
      for (int i = 0; i < first; ++i) load_w(i, kb_begin + i, tc0);
      ptx::griddep_wait();
      // The first stage's activations go out alone, the rest of the ring's
      // once they have landed. Every CTA asks at this moment, and L2 serves
      // the stages of a ring side by side, so the first would land with the
      // last: -0.2 to -0.5 us on the M128 seeds, the dual shapes and 4096^3
      // level (H100, session 36). Holding the second stage back too, or a
      // fixed delay instead of the wait, gained no more.
      for (int i = 0; i < first; ++i) {
        if (i == 1) ptx::mbar_wait(&full[0], 0);
        load_x(i, kb_begin + i, tc0);
      }
      int r = first;
      for (int w = 0; w < work.count; ++w) {
        const int3 tc = tile_at(work.first + w * work.stride);
        for (int i = w == 0 ? first : 0; i < n_iters; ++i, ++r) {
          ptx::mbar_wait(&empty[r % STAGES], ((r / STAGES) + 1) & 1);
          load_w(r, kb_begin + i, tc);
          load_x(r, kb_begin + i, tc);
        }
      }
    }
    if constexpr (SPLIT > 1 && !SPLIT_L2) {  // the consumers' two cluster barriers
      ptx::cluster_sync();
      ptx::cluster_sync();
    }
  } else {
    // ---- consumers ----
    ptx::setmaxnreg_inc<CONSUMERS == 3 ? 160 : 232>();
    const int cw = wg - 1;  // consumer warpgroup: weight rows 64 cw ..
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    // This lane's first row in the stage's W tile, and its rows of W (and
    // W2): plain, rows g and g + 8 of the warp's 16; dual, column g of the
    // warp's 8 in W1 (the tile's first 64 rows) and in W2 (the next 64).
    const int row_local = DUAL ? cw * 32 + warp * 8 + g : cw * 64 + warp * 16 + g;
    constexpr int kRow8Bytes = DUAL ? kWStage / 2 : 8 * 64;
    const int kblocks = p.k / 16;
    // Blocks b0 = 8 kb + 2t and b0 + 1 of a row are adjacent bytes in both
    // scale layouts, and stage kb + 1's are kScaleStep bytes on: the row
    // offsets are computed once per tile, not per stage.
    constexpr int kScaleStep = W_BLOCKED ? 1024 : 8;
    // (32-bit offsets within the batch: the host keeps a batch's scales under
    // 2^31 bytes.)
    // Rows past N read row N - 1's scales: their weights are zeros (TMA fill)
    // and their outputs are never stored, so no per-stage row check.
    auto scale_row = [&](const uint8_t* sw, long long batch, long long stride, int l, int row) {
      return ptx::opaque(
          sw + scale_off<W_BLOCKED>(p, batch, stride, l, 0, 0) +
          uint32_t(scale_off<W_BLOCKED>(p, batch, stride, 0, min(row, p.n - 1), 2 * t)));
    };
    // One 2-byte load per row (the host checks that scale addresses are
    // even). K is a multiple of 64, so blocks b0 (even) and b0 + 1 are both
    // live or both past K; this lane's are live in stages kb < kb_live.
    const int kb_live = int(ptx::opaque(uint32_t((kblocks - 2 * t + 7) / 8)));
    float acc[kAcc];
    // The activation descriptors differ only in their start address (bits
    // 0..13, address / 16), which stays in range: built once, then offset
    // per stage and step by a 64-bit add that never carries into the high
    // word: one uniform instruction per wgmma, where composing the words
    // from 32-bit halves cost two moves more (27 instructions fewer per
    // stage, the same time on the H100, session 17: uniform moves do not
    // limit this loop, its decode does).
    const uint64_t x_desc = ptx::smem_desc_sw128(x_smem);
    // Ring positions are unsigned: cheaper % and / by a STAGES of 3 or 5.
    auto issue = [&](uint32_t i, const WFrag& f) {
      const uint64_t stage_desc = x_desc + (i % STAGES) * (S::kXStageBytes >> 4);
      ptx::wgmma_fence();
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        // k16 step j: atom j / 4, 32 bytes further per step inside the atom.
        wgmma::RS<BN>::mma(acc, f.a[j],
                           stage_desc + ((j / 4) * (S::kXAtomBytes >> 4) + (j % 4) * 2), 1);
      }
      ptx::wgmma_commit();
    };
    const NibbleMasks nm;
    // Packed, a lane's rows lie in one 64-row block (dual: W1's, W2's in the
    // next; kPacked96: see packed96_offsets); unpacked, the stage is W's rows
    // (dual: W1's, then W2's) of 64 bytes.
    const uint32_t lane_block =
        ptx::smem_u32(w_smem) +
        (W_PACKED ? uint32_t(row_local / kPackedRows) * kPackedBlockStageBytes : 0u);
    const int block_row = W_PACKED ? row_local % kPackedRows : row_local;
    uint32_t w_lane = ptx::opaque(lane_block + block_row * kPackedStageBytes + t * 16);
    // Packed: the lane's scale codes (blocks 2t, 2t + 1) of its first row
    // in the stage; its second row's are kScale8Bytes on.
    uint32_t s_lane = lane_block + kPackedValueBytes + block_row * kPackedStageBlocks + 2 * t;
    constexpr int kScale8Bytes = DUAL ? kWStage / 2 : 8 * kPackedStageBlocks;
    // Packed weights bring the stage's scale codes (read here, after the
    // stage landed); else load_scales fetched them from global memory.
    auto prepare = [&](uint32_t i, WScales& sc, WFrag& f) {
      ptx::mbar_wait(&full[i % STAGES], (i / STAGES) & 1);
      const uint32_t stage = (i % STAGES) * kWStage;
      if constexpr (W_PACKED) {
        sc.pair[0] = ptx::ld_shared_u16(s_lane + stage);
        sc.pair[1] = ptx::ld_shared_u16(s_lane + stage + kScale8Bytes);
      }
      decode_stage<kRow8Bytes, W_PACKED>(w_lane + stage, sc, nm, f);
    };
    // One arrival per warp; with packed weights one per thread, so that each
    // thread's reads of the stage are ordered before the bulk copies' rewrite
    // of it as compute-sanitizer's racecheck follows them (it does not
    // follow tensor-map TMA writes).
    auto release = [&](uint32_t i) {
      if (W_PACKED || lane == 0) ptx::mbar_arrive(&empty[i % STAGES]);
    };

    // The thread that issues the TMA stores of C (warp 0's lane 0): its
    // arrival for the stage they read waits for them, once it has decoded
    // the next tile's first stage.
    const bool store_lead = threadIdx.x == 128;
    // Partials through L2: whether this CTA's part of a tile arrived last
    // (a word past the barriers: the base's 1024-byte alignment leaves at
    // least 16 bytes of gemm_smem_bytes' slack, the dynamic base being
    // 16-byte aligned).
    int* const last_flag = reinterpret_cast<int*>(empty + STAGES);
    int held_by_store = -1;
    // One tile whose first stage is at ring position r0.
    auto consume_tile = [&](long long tile, uint32_t r0) {
      const int3 tc = tile_at(tile);
      const int tile_n = tc.x, tile_m = tc.y, l = tc.z;
      if constexpr (kPacked96) {  // the lane's places depend on the tile's parity
        const uint2 o = packed96_offsets(row_local, tile_n % 2);
        w_lane = ptx::opaque(ptx::smem_u32(w_smem) + o.x + t * 16);
        s_lane = ptx::smem_u32(w_smem) + o.y + 2 * t;
      }
      const int row_g = tile_n * kRowsPerTile + row_local;
      const int row_g8 = DUAL ? row_g : row_g + 8;
      const uint8_t* sc_g = W_PACKED ? nullptr : scale_row(p.sw, p.sw_batch, p.sw_row, l, row_g);
      const uint8_t* sc_g8 = W_PACKED ? nullptr
                             : DUAL   ? scale_row(p.sw2, p.sw2_batch, p.sw2_row, l, row_g8)
                                      : scale_row(p.sw, p.sw_batch, p.sw_row, l, row_g8);
      auto load_scales = [&](int kb, WScales& sc) {
        if constexpr (W_PACKED) return;
        const uint32_t at = uint32_t(kb) * kScaleStep;
        const unsigned short* pg = reinterpret_cast<const unsigned short*>(sc_g + at);
        const unsigned short* pg8 = reinterpret_cast<const unsigned short*>(sc_g8 + at);
        const bool live_k = kb < kb_live;
        sc.pair[0] = live_k ? __ldg(pg) : 0u;
        sc.pair[1] = live_k ? __ldg(pg8) : 0u;
      };
#pragma unroll
      for (int i = 0; i < kAcc; ++i) acc[i] = 0.f;

      // Double-buffered A fragments, unrolled by two so that both stay in
      // registers: wgmma(i) reads frag[i % 2] while frag[(i + 1) % 2] is decoded.
      // The tile's last stage is held: the epilogue stages its output there.
      WFrag fa, fb;
      WScales sa, sb;
      if (n_iters > 0) {
        load_scales(kb_begin, sa);
        if (n_iters > 1) load_scales(kb_begin + 1, sb);
        prepare(r0, sa, fa);
      }
      if (held_by_store >= 0) {  // the last tile's TMA store has read its stage
        ptx::bulk_wait_read<0>();
        ptx::mbar_arrive(&empty[held_by_store]);
        held_by_store = -1;
      }
      // Packed dual tiles of up to 128 tokens without a K split issue stage
      // i + 1's wgmmas before waiting for stage i's (one group in flight
      // behind them), with no bounds check per stage: each decode is used
      // before the next wait, so ptxas cannot sink it below the wait, and
      // the loop has ~10% fewer stall cycles. Measured on the H100 (session
      // 37) against the other loop: dual M256 N3072 K4096 and N4096 K7168
      // packed -4%; but dual M256 N3072 row-major +1.5%, dual M128 N4096
      // packed (a cluster split) +2.5%, the plain GEMM's packed seeds level
      // and row-major seed 1 +1%, so only these kernels take it. Not bn256,
      // nor three warpgroups (160 registers): with two groups in flight
      // ptxas serializes their wgmmas (C7511).
      constexpr bool kTwoGroups = DUAL && W_PACKED && SPLIT == 1 && BN <= 128 && CONSUMERS == 2;
      if constexpr (kTwoGroups) {  // (packed: no scale loads from global)
        // Decode and issue stage i + 1 from f, then wait for stage i and release it.
        auto next = [&](int i, WScales& sc, WFrag& f) {
          prepare(r0 + i + 1, sc, f);
          issue(r0 + i + 1, f);
          ptx::wgmma_wait<1>();
          release(r0 + i);
        };
        // Two stages a trip while both have a next stage, the last one or
        // two after the loop.
        if (n_iters > 0) issue(r0, fa);
        int i = 0;
        for (; i + 2 < n_iters; i += 2) {
          next(i, sb, fb);
          next(i + 1, sa, fa);
        }
        if (i + 1 < n_iters) next(i, sb, fb);
        ptx::wgmma_wait<0>();
        ptx::fence_regs(acc);
      } else {
        for (int i = 0; i < n_iters; i += 2) {
          issue(r0 + i, fa);
          if (i + 2 < n_iters) load_scales(kb_begin + i + 2, sa);
          if (i + 1 < n_iters) prepare(r0 + i + 1, sb, fb);
          ptx::wgmma_wait<0>();
          ptx::fence_regs(acc);
          if (i + 1 >= n_iters) break;
          release(r0 + i);
          issue(r0 + i + 1, fb);
          if (i + 3 < n_iters) load_scales(kb_begin + i + 3, sb);
          if (i + 2 < n_iters) prepare(r0 + i + 2, sa, fa);
          ptx::wgmma_wait<0>();
          ptx::fence_regs(acc);
          if (i + 2 < n_iters) release(r0 + i + 1);
        }
      }

      // ---- output: the tile is staged in shared memory as C's layout in
      // TMA's 128-byte swizzle: per 64 output columns, [token][128 B] with
      // 16-byte chunk c of a token at c ^ (token % 8) (the 8 rows of an
      // stmatrix and the 8 chunks of a quarter warp's read meet no bank
      // twice). Then it leaves by TMA stores or in 16-byte stores, each 8
      // columns of one token. (Storing the fragments directly took ~2 us per
      // tile: 64 two-byte stores per thread, each touching 8 lines.) SPLIT ==
      // 1: in the tile's last stage, held until stored (the producer loads
      // the next tile's first stages meanwhile); else past the split-K flag. ----
      constexpr int kAcc4 = kAcc / 4;
      constexpr int kHalfBytes = BN * 128;               // 64 output columns of the staged tile
      constexpr int kHalves = (kRowsPerTile + 63) / 64;  // the last may be part-used
      constexpr bool kStageInHeld = SPLIT == 1 || SPLIT_L2;
      static_assert(kStageInHeld ? kHalves * kHalfBytes <= S::kXStageBytes
                                 : 1024 + kHalves * kHalfBytes <= STAGES * S::kStageBytes,
                    "output staging");
      const int held = int((r0 + n_iters - 1) % STAGES);
      uint8_t* const out_tile = kStageInHeld ? x_smem + held * S::kXStageBytes : smem + 1024;
      auto staged_off = [&](int tok, int chunk) {
        return (chunk / 8) * kHalfBytes + tok * 128 + ((chunk % 8) ^ (tok % 8)) * 16;
      };
      // Lanes 0-7 (and 8-15) address the staged rows of tokens a4 * 8 .. a4 *
      // 8 + 7 at this warp's first column's chunk (plain: and the next chunk).
      const int lane_chunk = DUAL ? cw * 4 + warp : cw * 8 + warp * 2 + lane / 8 % 2;
      const uint32_t stage_lane = ptx::smem_u32(out_tile) + staged_off(lane % 8, lane_chunk);
      // The K-summed accumulators a4 * 4 .. a4 * 4 + 3 of this thread (tokens
      // a4 * 8 + 2t, +1 of fragment rows g and g + 8) as outputs, into the
      // staged tile: plain, alpha * acc for two columns; dual, SwiGLU of the
      // gate (row g) and up (row g + 8) sums for one column.
      auto stage4 = [&](int a4, float4 v) {
        if constexpr (DUAL) {
          float out[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float gate = (e ? v.y : v.x) * p.alpha, up = (e ? v.w : v.z) * p.alpha2;
            out[e] = __fdividef(gate, 1.0f + __expf(-gate)) * up;  // silu(gate) * up
          }
          ptx::stmatrix_x1_trans(stage_lane + a4 * 8 * 128, Elem<OUT>::from_f32(out));
        } else {
          const float top[2] = {v.x * p.alpha, v.y * p.alpha};
          const float bottom[2] = {v.z * p.alpha, v.w * p.alpha};
          ptx::stmatrix_x2_trans(stage_lane + a4 * 8 * 128, Elem<OUT>::from_f32(top),
                                 Elem<OUT>::from_f32(bottom));
        }
      };
      auto acc4 = [&](int a4) {
        return make_float4(acc[4 * a4], acc[4 * a4 + 1], acc[4 * a4 + 2], acc[4 * a4 + 3]);
      };
      // Staged tokens [tok0, tok1) of the tile to C, by all consumer
      // warpgroups once every staging thread has passed a barrier.
      // Grouped: the group's rows of one batch.
      const int row0 = GROUPED ? groups.row_begin(l) : 0;
      const int m_end = GROUPED ? groups.row_end[l] - row0 : p.m;
      OUT* const c = reinterpret_cast<OUT*>(p.c) +
                     (GROUPED ? (long long)row0 * p.c_row : (long long)l * p.c_batch);
      const bool c_vec16 = (reinterpret_cast<uintptr_t>(c) % 16 == 0) && (p.c_row % 8 == 0);
      const int ct = threadIdx.x - 128;  // 0 .. kConsumerThreads - 1 over the consumer warpgroups
      auto store_staged = [&](int tok0, int tok1) {
        constexpr int kChunks = kRowsPerTile / 8;  // 16-byte chunks per token
        for (int i = ct; i < (tok1 - tok0) * kChunks; i += kConsumerThreads) {
          const int tok = tok0 + i / kChunks, chunk = i % kChunks;
          const int m = tile_m * BN + tok, col = tile_n * kRowsPerTile + chunk * 8;
          if (m >= m_end || col >= p.n) continue;
          const uint4 v = ptx::ld_shared_v4(out_tile + staged_off(tok, chunk));
          OUT* dst = c + (long long)m * p.c_row + col;
          if (c_vec16 && col + 8 <= p.n) {
            *reinterpret_cast<uint4*>(dst) = v;
          } else {
            const OUT* e = reinterpret_cast<const OUT*>(&v);
            for (int j = 0; j < 8 && col + j < p.n; ++j) dst[j] = e[j];
          }
        }
      };

      // The whole staged tile to C in generic stores, once every staging
      // thread has passed a barrier (the caller then releases the held stage).
      auto store_staged_tile = [&] {
        ptx::named_barrier(2, kConsumerThreads);
        store_staged(0, BN);
        // The staged tile's generic writes before the TMA's next writes there.
        ptx::fence_proxy_async_smem();
        __syncwarp();
      };

      if constexpr (SPLIT_L2) {
        // ---- partials through L2: every part leaves its accumulators in its
        // slot; the last to arrive adds the parts in slot order (whoever is
        // last: the same sums) and stores. A K tail's CTAs go on to their
        // next tile, so the output is staged in the held stage, released
        // after. (Measured on the H100, not kept: the last part writing no
        // slot, the others counting theirs ready for it to wait on: seed 1
        // with a tail 49.3 -> 51.1 us.) ----
        constexpr int parts = SPLIT + K_TAIL;
        float4* slots = reinterpret_cast<float4*>(p.partial) + tile * parts * kAcc4 * 256;
        // The last part's sum, staged: the `arrived` parts of slots 0.. in
        // slot order, its own (slot `own`) from its registers, the others
        // loaded in rounds of ROUND accumulator groups, every load of a round
        // issued before any is used. stage4's stmatrix (volatile asm) orders
        // later loads after it, so one group at a time made each an L2 round
        // trip of its own (seed 1 +5 us); summing into the accumulators before
        // staging them all was slower too (seed 1 +2 us, dual M512 N3072 +7
        // us: H100, session 27).
        auto stage_parts_in_rounds = [&](auto round, auto most_parts, int own, int arrived) {
          constexpr int kRound = decltype(round)::value;
          constexpr int kOthers = decltype(most_parts)::value - 1;
#pragma unroll
          for (int a0 = 0; a0 < kAcc4; a0 += kRound) {
            float4 other[kRound][kOthers];  // the j-th other slot: j, or j + 1 from own on
#pragma unroll
            for (int q = 0; q < kRound; ++q)
#pragma unroll
              for (int j = 0; j < kOthers; ++j)
                if (a0 + q < kAcc4 && j < arrived - 1)
                  other[q][j] =
                      __ldcg(slots + ((long long)(j + (j >= own)) * kAcc4 + a0 + q) * 256 + ct);
#pragma unroll
            for (int q = 0; q < kRound; ++q) {
              if (a0 + q >= kAcc4) break;
              float4 sum = own == 0 ? acc4(a0 + q) : other[q][0];
#pragma unroll
              for (int r = 1; r <= kOthers; ++r) {
                if (r >= arrived) break;
                const float4 v =
                    r == own ? acc4(a0 + q)
                             : (r > own ? other[q][r - 1] : other[q][r < kOthers ? r : kOthers - 1]);
                sum.x += v.x;
                sum.y += v.y;
                sum.z += v.z;
                sum.w += v.w;
              }
              stage4(a0 + q, sum);
            }
          }
        };
        if constexpr (parts == 2) {
          // The other part already arrived: this one is last whatever happens
          // next (it never counts itself, so the other cannot be), and adds
          // the other's slot to its own registers instead of writing its slot
          // and reading it back: dual M512 N3072 K7168's bn256 tail 71.2 ->
          // 68.2 us (H100, session 30). Not with more parts: the bn128 tail
          // of seed 1's three that found both others arrived skipping its
          // slot was slower (49.9 -> 51.2 us), as they rarely have.
          // A K tail's CTA meets again for its next tile: every thread has
          // read the last tile's flag before it is written.
          if constexpr (K_TAIL) ptx::named_barrier(1, 256);
          if (ct == 0)
            *last_flag =
                ptx::ld_acquire_gpu(reinterpret_cast<const unsigned*>(p.arrivals + tile)) == 1u;
          ptx::named_barrier(1, 256);
          if (*last_flag) {
            if (ct == 0) p.arrivals[tile] = 0;  // ready for the next call
            stage_parts_in_rounds(cuda::std::integral_constant<int, 16>{},
                                  cuda::std::integral_constant<int, 2>{}, work.slot, 2);
            store_staged_tile();
            release(held);
            return;
          }
        }
#pragma unroll
        for (int a4 = 0; a4 < kAcc4; ++a4)
          slots[((long long)work.slot * kAcc4 + a4) * 256 + ct] = acc4(a4);
        // Both consumer warpgroups' slots are written before thread 0's
        // release; its acquire, then the barrier, orders every thread's slot
        // loads after the other parts' writes (no fence per thread).
        ptx::named_barrier(1, 256);
        if (ct == 0) {
          unsigned* const arrivals = reinterpret_cast<unsigned*>(p.arrivals + tile);
          const bool last = ptx::atom_add_acq_rel_gpu(arrivals, 1u) == unsigned(parts - 1);
          if (last) *arrivals = 0u;  // ready for the next call
          *last_flag = last;
        }
        ptx::named_barrier(1, 256);
        if (*last_flag) {
          if constexpr (!K_TAIL || BN > 128) {
            // Every part from its slot (this CTA's too), in slot order: with the
            // accumulators dead once written, ptxas issues the slot loads far
            // ahead of the staging. Measured on the H100 (session 28) against
            // the rounds below: a split alone through L2 (M128 N4096 K7168 k4)
            // 26.5 -> 24.6 us, dual M512 N3072 K7168's bn256 tail 73.3 -> 71.0;
            // seed 1's bn128 tail keeps the rounds (49.3 vs 49.8).
#pragma unroll
            for (int a4 = 0; a4 < kAcc4; ++a4) {
              float4 sum = __ldcg(slots + (long long)a4 * 256 + ct);
#pragma unroll
              for (int r = 1; r < parts; ++r) {
                const float4 v = __ldcg(slots + ((long long)r * kAcc4 + a4) * 256 + ct);
                sum.x += v.x;
                sum.y += v.y;
                sum.z += v.z;
                sum.w += v.w;
              }
              stage4(a4, sum);
            }
          } else {
            // Its own part from registers (bn256's spilled beside the loads),
            // the loads counted at run time: with the count known, ptxas
            // hoists them all and spills. Rounds of 8 / SPLIT groups: of 4
            // loads they were 0.6 us slower at seed 1 (1.2 unpacked), of 16
            // (which spill) 1.7 us slower, and the slots copied into the free
            // ring by cp.async on the CTA's last tile 0.7 us slower (H100,
            // session 30).
            stage_parts_in_rounds(cuda::std::integral_constant<int, 8 / SPLIT>{},
                                  cuda::std::integral_constant<int, SPLIT + 1>{}, work.slot,
                                  SPLIT + (p.tail_ctas > 0));
          }
          store_staged_tile();
        }
        release(held);
        return;
      }

      if constexpr (SPLIT > 1) {
        // ---- split-K, reduce-scatter: every CTA of the cluster adds the
        // cluster's accumulators (in rank order) for 1/SPLIT of the tile's
        // tokens and stores them ----
        constexpr int kPer = (kAcc4 + SPLIT - 1) / SPLIT;
        static_assert(256 * kAcc * 4 <= STAGES * Smem<BN>::kStageBytes, "reduction buffer");
        float4* red = reinterpret_cast<float4*>(smem);  // reuses the stage buffers: [kAcc4][256]
        ptx::named_barrier(1, 256);  // both consumer warpgroups are done with the stages
#pragma unroll
        for (int a4 = 0; a4 < kAcc4; ++a4) red[a4 * 256 + ct] = acc4(a4);
        ptx::cluster_sync();
        const int a4_begin = work.slot * kPer, a4_end = min(kAcc4, a4_begin + kPer);
        float4 sum[kPer];
#pragma unroll
        for (int j = 0; j < kPer; ++j) {
          if (a4_begin + j >= a4_end) break;
          const uint32_t addr = ptx::smem_u32(red + (a4_begin + j) * 256 + ct);
          sum[j] = ptx::ld_cluster_v4f32(ptx::map_shared_rank(addr, 0));
#pragma unroll
          for (int r = 1; r < SPLIT; ++r) {
            const float4 v = ptx::ld_cluster_v4f32(ptx::map_shared_rank(addr, r));
            sum[j].x += v.x;
            sum[j].y += v.y;
            sum[j].z += v.z;
            sum[j].w += v.w;
          }
        }
        ptx::cluster_sync();  // peers keep their shared memory until every rank has read it
#pragma unroll
        for (int j = 0; j < kPer; ++j)
          if (a4_begin + j < a4_end) stage4(a4_begin + j, sum[j]);
        ptx::named_barrier(1, 256);
        store_staged(a4_begin * 8, a4_end * 8);
        return;
      }

      // ---- epilogue: D[row][token] -> C[token][column] ----
      // The warpgroups' wgmmas are done with the held stage.
      ptx::named_barrier(1, kConsumerThreads);
#pragma unroll
      for (int a4 = 0; a4 < kAcc4; ++a4) stage4(a4, acc4(a4));
      if (p.c_tma) {
        ptx::fence_proxy_async_smem();  // the staged writes before the TMA store reads them
        ptx::named_barrier(2, kConsumerThreads);
        if (store_lead) {
          for (int h = 0; h < kHalves; ++h)
            ptx::tma_store_3d(&tmap_c, out_tile + h * kHalfBytes, tile_n * kRowsPerTile + h * 64,
                              tile_m * BN, l);
          ptx::bulk_commit();
          held_by_store = held;  // released once the store has read it
        } else {
          release(held);
        }
      } else {
        store_staged_tile();
        release(held);
      }
    };
    uint32_t r0 = 0;
    for (int w = 0; w < work.count; ++w, r0 += n_iters)
      consume_tile(work.first + w * work.stride, r0);
    if (store_lead) ptx::bulk_wait_read<0>();  // the last tile's store has left shared memory
  }
}

}  // namespace kestrel
