// FP8 (e4m3) GEMM with a fused bf16 add on Hopper tensor cores:
//
//   D[l][m][n] = bf16( bf16(alpha * sum_k A[l][m][k] * B[l][n][k]) + R[l][m][n] )
//
// (HAS_R false: D = bf16(alpha * A B^T); alpha times the device scales
// the parameters point to, if any.) A and B are K-major, so both reach
// wgmma from shared memory through descriptors (e4m3 wgmma takes no other
// layout) and nothing is converted on the way.
//
// Stages (ThunderKittens-style roles), one CTA per SM, persistent over tiles
// of BM x BN outputs (BM 128, or 64 where M is: a single consumer warpgroup
// then, and a stage's A region half as large, so the ring holds more of B):
//  - producer warp: TMA loads of A (BM rows x 128 B) and B (BN rows x 128 B),
//    128-byte swizzled, into a STAGES-deep mbarrier ring; and, once a
//    consumer warpgroup has started a tile, that tile's R rows into the
//    warpgroup's output buffer, so R arrives during the K loop;
//  - BM / 64 consumer warpgroups, 64 rows of the tile each: four m64nBNk32
//    wgmmas a stage into a stage sum, added to the tile's fp32 sum in
//    registers (exact to fp32 rounding, which e4m3 wgmma alone is not);
//    up to 128 columns, two stage sums, the next stage's wgmmas issued
//    before the last one's is added;
//  - tail split: where the tiles leave the last wave partial, each of its
//    tiles is cut into tail_parts ranges of K run by different CTAs (the
//    SMs the partial wave would leave idle); a part leaves its fp32 sums in
//    an L2 slot and the last part of a tile to arrive adds the slots in
//    part order (the same sums whichever arrives last) before its epilogue;
//  - epilogue, per warpgroup: alpha * acc rounded to bf16, plus R read from
//    the output buffer, rounded again, written back in place (the same
//    thread reads and writes each element), then TMA stores of the buffer.
//    The store is waited for only once the next tile's first wgmmas are
//    issued, when the buffer is handed back to the producer for the next R.
// The output buffer holds BN / 64 chunks of 64 rows x 64 bf16 in the
// 128-byte swizzle of their TMA maps, which also spreads the accumulator
// layout's 8 rows a warp touches over all 32 banks.
#pragma once
#include <cuda_bf16.h>

#include "common/tma_pipeline.cuh"
#include "common/wgmma_fp8.cuh"

namespace kestrel {

struct Fp8GemmParams {
  int m, n, k;
  int batches;  // L
  float alpha;
  int raster_rows;  // row tiles per raster group (L2 reuse of B across a group's rows)
  int a_tail_rows;  // rows of A a stage of the last row tile loads: M's rows there, to 8
  int tail_begin;   // the first tile cut into parts (tiles when none is)
  int tail_parts;   // K ranges per tail tile (1: no tail split)
  float* partial;   // [tail tiles][tail_parts][BM / 64 warpgroups][BN / 8][128] float4 slots
  unsigned* arrivals;  // [tail tiles][BM / 64 warpgroups], zero between calls
  const float* scale_a;  // device scales alpha is multiplied by (null: 1)
  const float* scale_b;
};

namespace fp8_gemm {

constexpr int kBK = 128;                          // K per stage: one 128-byte swizzle row of e4m3
constexpr int kChunkCols = 64;                    // bf16 columns per output chunk (128 B)
constexpr int kChunkBytes = 64 * kChunkCols * 2;  // 64 rows of a warpgroup

template <int BM, int BN>
struct Smem {
  static constexpr int kConsumers = BM / 64;  // warpgroups, 64 rows of the tile each
  static constexpr int kAStageBytes = BM * kBK;
  static constexpr int kBStageBytes = BN * kBK;
  static constexpr int kStageBytes = kAStageBytes + kBStageBytes;
  static constexpr int kOutBytes = 64 * BN * 2;  // one warpgroup's rows of D (and R)
};

// Tile t of the persistent order: batch, then groups of raster_rows row
// tiles, each group's tiles column by column, so the CTAs running at once
// share B's column tiles across a few row tiles in L2.
__device__ __forceinline__ int3 tile_coords(const Fp8GemmParams& p, int tiles_m, int tiles_n,
                                            int t) {
  const int per_batch = tiles_m * tiles_n;
  const int l = t / per_batch, u = t % per_batch;
  const int group = u / (p.raster_rows * tiles_n);
  const int first = group * p.raster_rows;
  const int rows = min(p.raster_rows, tiles_m - first);
  const int within = u - group * p.raster_rows * tiles_n;
  return make_int3(first + within % rows, within / rows, l);  // (row tile, column tile, batch)
}

// One tile, or one K range of a tail tile (part >= 0), of a CTA's work.
struct WorkItem {
  int tile, kb_begin, kb_end, part;
};

// A CTA's work: whole tiles blockIdx.x, + gridDim.x, ... before tail_begin,
// then, with a tail split, part blockIdx.x % tail_parts of tail tile
// tail_begin + blockIdx.x / tail_parts. (The host sizes the grid to the SMs
// when there are whole tiles, so they come in whole waves.)
struct CtaWork {
  int whole, count;
  __device__ __forceinline__ CtaWork(const Fp8GemmParams& p, int tiles) {
    const int b = blockIdx.x;
    whole = b < p.tail_begin ? (p.tail_begin - b + gridDim.x - 1) / gridDim.x : 0;
    count = whole + (b < (tiles - p.tail_begin) * p.tail_parts ? 1 : 0);
  }
  __device__ __forceinline__ WorkItem item(const Fp8GemmParams& p, int k_stages, int i) const {
    if (i < whole) return {int(blockIdx.x + i * gridDim.x), 0, k_stages, -1};
    const int part = blockIdx.x % p.tail_parts;
    return {p.tail_begin + int(blockIdx.x) / p.tail_parts, k_stages * part / p.tail_parts,
            k_stages * (part + 1) / p.tail_parts, part};
  }
};

// Byte offset of bf16 column `col` (even) of row `row` in a warpgroup's
// output buffer: chunk col / 64, 16-byte unit XOR row % 8 (128-byte swizzle).
__device__ __forceinline__ int out_offset(int row, int col) {
  const int chunk = col / kChunkCols, in_row = (col % kChunkCols) * 2;
  return chunk * kChunkBytes + row * 128 + (((in_row / 16) ^ (row % 8)) * 16) + in_row % 16;
}

}  // namespace fp8_gemm

template <int BM, int BN, int STAGES, bool HAS_R>
__global__ void __launch_bounds__(128 * (1 + BM / 64), 1)
    fp8_gemm_kernel(const __grid_constant__ TmaMap tmap_a,
                    const __grid_constant__ TmaMap tmap_a_tail,
                    const __grid_constant__ TmaMap tmap_b, const __grid_constant__ TmaMap tmap_r,
                    const __grid_constant__ TmaMap tmap_d,
                    const __grid_constant__ Fp8GemmParams p) {
  using namespace fp8_gemm;
  using S = Smem<BM, BN>;
  constexpr int kConsumers = S::kConsumers;
  static_assert(BM == 64 || BM == 128, "tiles of 64 or 128 rows: one or two consumer warpgroups");
  static_assert(BN % kChunkCols == 0 && BN <= 192,
                "tiles of 64..192 columns, whole chunks (two accumulator sets fit up to 192)");
  constexpr int kAcc = BN / 2;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024u - (ptx::smem_u32(smem_raw) & 1023u)) & 1023u);
  uint8_t* ring = smem;                           // [STAGES][A BM x 128 B | B BN x 128 B]
  uint8_t* out = smem + STAGES * S::kStageBytes;  // [warpgroups][BN / 64 chunks][64 x 128 B]
  uint64_t* full = reinterpret_cast<uint64_t*>(out + kConsumers * S::kOutBytes);
  uint64_t* empty = full + STAGES;
  uint64_t* r_full = empty + STAGES;         // [warpgroups]: its R rows have landed
  uint64_t* out_free = r_full + kConsumers;  // [warpgroups]: its buffer's last store has left
  int* last_part = reinterpret_cast<int*>(out_free + kConsumers);  // [warpgroups]: came last

  const int tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN;
  const int tiles = tiles_m * tiles_n * p.batches;
  const int k_stages = (p.k + kBK - 1) / kBK;
  const int wg = threadIdx.x / 128;
  const CtaWork work(p, tiles);

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      ptx::mbar_init(&full[s], 1);
      ptx::mbar_init(&empty[s], kConsumers);  // one arrival per consumer warpgroup
    }
    for (int w = 0; w < kConsumers; ++w) {
      ptx::mbar_init(&r_full[w], 1);
      ptx::mbar_init(&out_free[w], 1);
    }
    ptx::fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    // ---- producer ----
    ptx::setmaxnreg_dec<40>();
    if (threadIdx.x != 0) return;
    ptx::prefetch_tma_map(&tmap_a);
    ptx::prefetch_tma_map(&tmap_a_tail);
    ptx::prefetch_tma_map(&tmap_b);
    if constexpr (HAS_R) ptx::prefetch_tma_map(&tmap_r);
    ptx::prefetch_tma_map(&tmap_d);
    // R goes out once the ring holds the tile's first stages and the
    // consumers have started it (they free the buffer then): a whole K
    // loop ahead of the epilogue that reads it.
    int r = 0;  // ring position over the CTA's work
    for (int it = 0; it < work.count; ++it) {
      const WorkItem w = work.item(p, k_stages, it);
      const int3 tc = tile_coords(p, tiles_m, tiles_n, w.tile);
      const int r_at = w.kb_begin + min(STAGES, w.kb_end - w.kb_begin) - 1;
      for (int kb = w.kb_begin; kb < w.kb_end; ++kb, ++r) {
        const int s = r % STAGES;
        ptx::mbar_wait(&empty[s], ((r / STAGES) + 1) & 1);
        uint8_t* stage = ring + s * S::kStageBytes;
        // The last row tile's box holds only M's rows: zero-filled rows past
        // the tensor cost TMA time (M16 N8192 K8192: 38.6 us against M128's
        // 30.8, H100). The stage's other rows keep stale data; their output
        // rows lie past M and are never stored.
        const bool a_tail = tc.x == tiles_m - 1;
        ptx::mbar_arrive_expect_tx(&full[s], (a_tail ? p.a_tail_rows : BM) * kBK + S::kBStageBytes);
        ptx::tma_load_3d(stage, a_tail ? &tmap_a_tail : &tmap_a, &full[s], kb * kBK, tc.x * BM,
                         tc.z);
        ptx::tma_load_3d(stage + S::kAStageBytes, &tmap_b, &full[s], kb * kBK, tc.y * BN, tc.z);
        // (Every part of a tail tile loads R: which one adds it is known only
        // at its end.)
        if (HAS_R && kb == r_at) {
          for (int g = 0; g < kConsumers; ++g) {
            ptx::mbar_wait(&out_free[g], it & 1);
            ptx::mbar_arrive_expect_tx(&r_full[g], S::kOutBytes);
            for (int c = 0; c < BN / kChunkCols; ++c)
              ptx::tma_load_3d(out + g * S::kOutBytes + c * kChunkBytes, &tmap_r, &r_full[g],
                               tc.y * BN + c * kChunkCols, tc.x * BM + g * 64, tc.z);
          }
        }
      }
    }
    return;
  }

  // ---- consumers ----
  ptx::setmaxnreg_inc<232>();
  const int cw = wg - 1;  // rows 64 cw .. of the tile
  const bool lead = threadIdx.x % 128 == 0;
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  // (alpha * sa) * sb in fp32: with alpha 1, the bits of a host alpha sa * sb.
  const float alpha =
      p.alpha * (p.scale_a ? __ldg(p.scale_a) : 1.0f) * (p.scale_b ? __ldg(p.scale_b) : 1.0f);
  uint8_t* my_out = out + cw * S::kOutBytes;
  // e4m3 wgmma keeps only about 14 bits of its running sum (measured here:
  // sums over K = 512 already miss the float64 reference by more than a
  // bf16 step), so each stage's four wgmmas sum into `part`, which fp32
  // adds then fold into `acc` (DeepGEMM's promotion, at every 128 of K).
  // The other consumer warpgroup's wgmmas keep the tensor cores busy
  // meanwhile (BM = 64 has none: a tile whose M is that small waits on B's
  // bytes, not on the tensor cores).
  // Up to 128 columns a second `part` fits (64 + 2 x 64 registers): the
  // warpgroup issues stage s + 1 before it folds stage s, so its own
  // wgmmas queue back to back instead of waiting out each fold.
  constexpr bool kTwoParts = BN <= 128;
  float acc[kAcc], part[kAcc], part2[kTwoParts ? kAcc : 1];
  // Ring position rr's four wgmmas into d (d's previous sum discarded).
  auto issue = [&](int rr, float(&d)[kAcc]) {
    const int s = rr % STAGES;
    ptx::mbar_wait(&full[s], (rr / STAGES) & 1);
    const uint8_t* stage = ring + s * S::kStageBytes;
    const uint64_t desc_a = ptx::smem_desc_sw128(stage + cw * 64 * kBK);
    const uint64_t desc_b = ptx::smem_desc_sw128(stage + S::kAStageBytes);
    ptx::wgmma_fence();
    // 32 bytes of K along the swizzled row: +2 in the descriptor.
#pragma unroll
    for (int kk = 0; kk < kBK / 32; ++kk)
      wgmma::SSFp8<BN>::mma(d, desc_a + 2 * kk, desc_b + 2 * kk, kk > 0);
    ptx::wgmma_commit();
  };
  // Once ring position rr's wgmmas into d are done: free the stage, add d.
  auto fold = [&](int rr, float(&d)[kAcc]) {
    ptx::fence_regs(d);
    if (lead) ptx::mbar_arrive(&empty[rr % STAGES]);
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] += d[i];
  };
  // After the tile's first wgmmas: the previous tile's store has read the
  // buffer, which goes back for R (or, without R, this tile's epilogue).
  auto hand_back_out = [&]() {
    if (!lead) return;
    ptx::bulk_wait_read<0>();
    if constexpr (HAS_R) ptx::mbar_arrive(&out_free[cw]);
  };
  // A tail part's meeting, per warpgroup (its 64 rows): the sums go to the
  // part's slot; the last part to arrive adds every part's, in part order,
  // into acc and returns true. The lead's acq_rel count orders the
  // warpgroup's slot stores (behind the barrier) before it and the last's
  // slot loads (behind the next) after. Only warps holding rows of M move
  // slots: the others' rows are never stored (at M <= 16, one warp of four).
  auto meet_parts = [&](const WorkItem& w, int tile_row) {
    constexpr int kAcc4 = kAcc / 4;
    // Slots loaded per L2 round trip: as many parts as 128 registers hold.
    constexpr int kRound = 128 / kAcc;
    const int tid = threadIdx.x % 128, tail = w.tile - p.tail_begin;
    const bool holds_rows = tile_row + cw * 64 + warp * 16 < p.m;
    float4* const slots = reinterpret_cast<float4*>(p.partial) +
                          ((long long)tail * p.tail_parts * kConsumers + cw) * kAcc4 * 128 + tid;
    const long long part_step = (long long)kConsumers * kAcc4 * 128;
    if (holds_rows) {
#pragma unroll
      for (int a = 0; a < kAcc4; ++a)
        __stcg(slots + w.part * part_step + a * 128,
               make_float4(acc[4 * a], acc[4 * a + 1], acc[4 * a + 2], acc[4 * a + 3]));
    }
    ptx::named_barrier(1 + cw, 128);
    if (lead) {
      unsigned* const count = p.arrivals + tail * kConsumers + cw;
      const bool last = ptx::atom_add_acq_rel_gpu(count, 1u) == unsigned(p.tail_parts - 1);
      if (last) *count = 0u;  // ready for the next call
      last_part[cw] = last;
    }
    ptx::named_barrier(1 + cw, 128);
    if (!last_part[cw]) return false;
    if (!holds_rows) return true;
    // Every part from its slot, this warpgroup's too (a second array for
    // the sum would spill at bn192); kRound parts' loads issue before
    // their adds, which go in part order.
    for (int q0 = 0; q0 < p.tail_parts; q0 += kRound) {
      // (Past the last part, the last part's slot again, not added.)
      float4 v[kRound][kAcc4];
#pragma unroll
      for (int u = 0; u < kRound; ++u)
#pragma unroll
        for (int a = 0; a < kAcc4; ++a)
          v[u][a] = __ldcg(slots + min(q0 + u, p.tail_parts - 1) * part_step + a * 128);
#pragma unroll
      for (int u = 0; u < kRound; ++u) {
        if (q0 + u < p.tail_parts) {
#pragma unroll
          for (int a = 0; a < kAcc4; ++a) {
            const bool first = q0 + u == 0;
            acc[4 * a] = first ? v[u][a].x : acc[4 * a] + v[u][a].x;
            acc[4 * a + 1] = first ? v[u][a].y : acc[4 * a + 1] + v[u][a].y;
            acc[4 * a + 2] = first ? v[u][a].z : acc[4 * a + 2] + v[u][a].z;
            acc[4 * a + 3] = first ? v[u][a].w : acc[4 * a + 3] + v[u][a].w;
          }
        }
      }
    }
    return true;
  };
  int r = 0;
  for (int it = 0; it < work.count; ++it) {
    const WorkItem w = work.item(p, k_stages, it);
    const int3 tc = tile_coords(p, tiles_m, tiles_n, w.tile);
    const int n_kb = w.kb_end - w.kb_begin;
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
    if constexpr (kTwoParts) {
      // part holds stage kb's sums in flight at the top of each pair.
      issue(r, part);
      hand_back_out();
      int kb = 0;
      for (; kb + 2 < n_kb; kb += 2, r += 2) {
        issue(r + 1, part2);
        ptx::wgmma_wait<1>();
        fold(r, part);
        issue(r + 2, part);
        ptx::wgmma_wait<1>();
        fold(r + 1, part2);
      }
      if (kb + 1 < n_kb) {
        issue(r + 1, part2);
        ptx::wgmma_wait<1>();
        fold(r, part);
        ptx::wgmma_wait<0>();
        fold(r + 1, part2);
        r += 2;
      } else {
        ptx::wgmma_wait<0>();
        fold(r, part);
        r += 1;
      }
    } else {
      for (int kb = 0; kb < n_kb; ++kb, ++r) {
        issue(r, part);
        if (kb == 0) hand_back_out();
        ptx::wgmma_wait<0>();
        fold(r, part);
      }
    }

    // ---- epilogue ----
    if constexpr (HAS_R) {
      ptx::mbar_wait(&r_full[cw], it & 1);
    } else {
      ptx::named_barrier(1 + cw, 128);  // the lead's wait for the last store is behind it
    }
    if (w.part >= 0 && !meet_parts(w, tc.x * BM))
      continue;  // a part not last: its sums are in its slot
    const int row0 = warp * 16 + lane / 4, col0 = (lane % 4) * 2;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int off = out_offset(row0 + 8 * h, j * 8 + col0);
        __nv_bfloat162 v =
            __floats2bfloat162_rn(alpha * acc[4 * j + 2 * h], alpha * acc[4 * j + 2 * h + 1]);
        // The bf16 pair add rounds once: the correctly rounded sum.
        if constexpr (HAS_R) v = __hadd2(v, *reinterpret_cast<const __nv_bfloat162*>(my_out + off));
        *reinterpret_cast<__nv_bfloat162*>(my_out + off) = v;
      }
    }
    ptx::fence_proxy_async_smem();
    ptx::named_barrier(1 + cw, 128);
    if (lead) {
      for (int c = 0; c < BN / kChunkCols; ++c)
        ptx::tma_store_3d(&tmap_d, my_out + c * kChunkBytes, tc.y * BN + c * kChunkCols,
                          tc.x * BM + cw * 64, tc.z);
      ptx::bulk_commit();
    }
  }
  if (lead) ptx::bulk_wait_all();
}

}  // namespace kestrel
