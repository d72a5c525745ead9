// NVFP4 batched GEMV on the fp8 tensor cores: c[l][m] = alpha * sum_k A[l][m][k] * B[l][0][k],
// or, for two tokens (TOKENS = 2, the GEMM at M = 2),
// c[l][j][m] = alpha * sum_k A[l][m][k] * B[l][j][k] for j < tokens.
//
// Memory-bound on A (0.5625 bytes per value), so the kernel is built around
// keeping DRAM busy with few instructions per value:
// - Load: one producer warp streams A by TMA, 128 rows x 512 values (32 KB,
//   256 contiguous bytes per row) per stage, into a ring of STAGES stages,
//   with the stage's A scales (bulk copy or cp.async) and the matching B
//   operand, which it builds from the batch's B row.
// - Compute: two consumer warpgroups (64 rows each) turn each lane's 16-byte
//   pieces of a 128-value group into e4m3 by bit placement (e2m1 * 2^-6, 7
//   integer ops per 8 values, common/fp4_decode.cuh) and feed wgmma m64n8k32
//   e4m3 with A from registers; the next group's decode runs under each
//   group's wgmma. Products e2m1 x e2m1
//   and their sums over a 16-value block are exact in the fp32 accumulator.
// - The 8 N columns of the wgmma carry no second vector; they separate scale
//   blocks: B column 2t is nonzero only in the K slots that lane t of a quad
//   fills from block 2t of the group, column 2t+1 only in those of block
//   2t+1. After 4 wgmmas a lane's accumulators hold exactly the dot products
//   of its two blocks for its two rows; A and B block scales (fp32) are
//   applied once per block. The zeros of B never change, so the producer
//   writes only the 128 live bytes of each 1 KB B tile. With two tokens the
//   wgmma is m64n16k32 (token j owns columns 8j..8j+7) and both read each A
//   stage. (The code is written for any TOKENS; 4 and 8 passed the GEMM
//   tests but ran slower than the GEMM kernel on most decode shapes: each
//   token adds 4 KB of B tiles per stage, 4 registers of accumulators and 8
//   fp32 operations per group, and at 8 only one CTA fits an SM. H100,
//   session 46.)
// - Work split: split-K items taken at run time (common/split_k_items.cuh):
//   row tiles x segments of a few chunks, the first item of each CTA by its
//   index and the rest from an atomic counter, so SMs that stream faster take
//   more. A tile of one segment is stored directly; a cut tile's items leave
//   partial row sums in their own slots. Once every CTA has run out of items
//   (one grid-wide count: the launch is cooperative), each CTA adds the slots
//   of a share of the cut tiles in segment order: deterministic, no second
//   kernel, and one GPU-scope fence per CTA rather than one per item (with
//   the consumers' decode and wgmma stubbed out, a fence and count per item
//   held seed 1 at 29.1 us against 26.0 without them; H100, session 10).
//   The producer tells the consumers which chunk each stage holds.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "common/fp4_decode.cuh"
#include "common/nvfp4_codec.cuh"
#include "common/nvfp4_gemv_operands.cuh"
#include "common/nvfp4_scale_layout.cuh"
#include "common/ptx.cuh"
#include "common/split_k_items.cuh"
#include "common/tma_pipeline.cuh"
#include "common/wgmma_fp8.cuh"

namespace kestrel {

struct GemvWgmmaParams {
  GemvOperands o;  // alpha: global scales times 2^12 (the decode's two 2^-6 factors)
  int* counters;   // [3]: next item, CTAs out of items, CTAs done; zero between calls
  float* partial;  // [items][128]: partial row sums of cut tiles' items
  SplitKItems work;
  int items, ctas;  // items = work.count(L); CTA c starts with item c
  int groups;       // groups of 128 values per row
  int sfa_tma;      // linear A scales: 1 = by TMA (tmap_sfa), 0 = by 4-byte cp.async
};

namespace gemv_wgmma {

constexpr int kRows = 128;       // rows per tile: two consumer warpgroups x 64
constexpr int kGroup = 128;      // K values per wgmma group (4 x k32)
constexpr int kChunkGroups = 4;  // groups per stage: 256 contiguous bytes per row
constexpr int kABytes = kRows * kGroup * kChunkGroups / 2;
constexpr int kSABytes = kRows * 8 * kChunkGroups;  // 8 scale codes per row and group
constexpr int kConsumerThreads = 256;
constexpr int kProducerWarp = kConsumerThreads / 32;
constexpr int kThreads = kConsumerThreads + 32;

// One ring stage: A, the B tiles, A's scale codes, B's fp32 scales.
template <int TOKENS>
struct StageLayout {
  static constexpr int kStepBytes = TOKENS * 256;  // one k32 step: 8 columns x 32 bytes per token
  static constexpr int kBTileBytes = 4 * kStepBytes;  // one group: 4 k32 steps
  static constexpr int kBBytes = kChunkGroups * kBTileBytes;
  static constexpr int kSA = kABytes + kBBytes;  // offsets in the stage
  static constexpr int kSB = kSA + kSABytes;
  static constexpr int kSBBytes = TOKENS * 8 * 4 * kChunkGroups;  // [token][32 blocks] fp32
  static constexpr int kBytes = kSB + kSBBytes;
};

// Shared memory: the header (stage barriers at 0, chunk tags at 128), then
// the stages.
constexpr int kHeaderBytes = 512;

// Position of the live word of quad lane t, half h (block 2t + h of a group)
// in token j's 256 bytes of a k32 step of a B tile: K-major core matrices of
// 8 columns x 16 bytes (K half h at 128 h, the token's next 8 columns 256
// bytes on); column 8j + 2t + h, bytes 4t..4t+3 (the slots lane t fills).
__device__ __forceinline__ int b_word_offset(int j, int t, int h) {
  return j * 256 + h * 128 + (2 * t + h) * 16 + 4 * t;
}

// wgmma descriptor of a B tile: no swizzle, core matrices 128 bytes apart
// along K (leading offset) and 256 along N (stride offset; unused at N = 8).
// The low word is the start address / 16 (plus the leading offset), so moving
// the descriptor by n bytes adds n / 16 to it.
__device__ __forceinline__ uint32_t b_desc_lo(const void* p) {
  return ((ptx::smem_u32(p) & 0x3FFFF) >> 4) | ((128 >> 4) << 16);
}
__device__ __forceinline__ uint64_t b_desc(uint32_t lo) { return (uint64_t(256 >> 4) << 32) | lo; }

__device__ __forceinline__ float2 e4m3x2_to_f32(uint32_t codes) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(codes), __NV_E4M3);
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
}

// Byte offset, within a stage's A scales, of the pair of codes (blocks 2t,
// 2t+1 of group j) of tile row r.
template <bool BLOCKED>
__device__ __forceinline__ int sa_offset(int r, int t, int j) {
  if constexpr (BLOCKED) {  // 8 whole 128 x 4 tiles, as in global memory
    return (2 * j + t / 2) * 512 + (r % 32) * 16 + (r / 32) * 4 + 2 * (t % 2);
  } else {  // [row][32 codes]
    return r * 32 + 8 * j + 2 * t;
  }
}

// Which chunk a stage holds, written by the producer before it arrives on
// the stage's full barrier. item < 0: no more work.
struct ChunkTag {
  int item, c;
};

// Where the consumers are: a group of the chunk in a ring stage, and the
// item that chunk belongs to (read from the stage's tag).
struct Position {
  int stage, phase;  // ring slot and its barrier parity
  int j, groups;     // group in the chunk, groups in this chunk
  int item, c;       // item and chunk
  int l, mt, tile;   // the item's batch, row tile, and tile index
  int c_end;         // the item's end chunk

  template <int STAGES>
  __device__ void next() {
    if (++j < groups) return;
    j = 0;
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// One group's operands of one lane: A in wgmma register order, scale codes.
// (B's scales are read when the group's sums are scaled: held from the fetch
// on, they would cost two registers per token in each of the two sets.)
struct Operands {
  uint32_t a[4][4];  // [k32 step][register]
  uint32_t sc0, sc1;
};

__device__ __forceinline__ void keep_alive(const Operands& o) {
#pragma unroll
  for (int s = 0; s < 4; ++s)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" ::"r"(o.a[s][i]));
}

// A CTA is done with the counters (its last claim is back and, for cut
// tiles, it has seen every CTA's count): the last one leaves them zero for
// the next call.
__device__ __forceinline__ void leave_counters(const GemvWgmmaParams& p) {
  unsigned* counters = reinterpret_cast<unsigned*>(p.counters);
  __threadfence();
  if (atomicAdd(counters + 2, 1u) == unsigned(p.ctas) - 1) {
    atomicExch(counters, 0u);
    atomicExch(counters + 1, 0u);
    atomicExch(counters + 2, 0u);
  }
}

}  // namespace gemv_wgmma

// CTAS_PER_SM: 2 caps registers at 96 (92 used at one token, 96 at two) so
// that two CTAs of 2 stages share an SM: twice the warps to hide the
// consumers' latencies.
template <typename OUT, int STAGES, int CTAS_PER_SM, bool A_BLOCKED, bool B_BLOCKED, int TOKENS>
__global__ void __launch_bounds__(gemv_wgmma::kThreads, CTAS_PER_SM)
    nvfp4_gemv_wgmma_kernel(const __grid_constant__ TmaMap tmap_a,
                            const __grid_constant__ TmaMap tmap_sfa,
                            const __grid_constant__ GemvWgmmaParams p) {
  using namespace gemv_wgmma;
  using L = StageLayout<TOKENS>;
  constexpr int kStageBytes = L::kBytes, kBBytes = L::kBBytes, kBTileBytes = L::kBTileBytes;
  static_assert(STAGES <= 8, "the stage barriers fill the first 128 bytes of the header");
  static_assert(TOKENS == 1 || TOKENS == 2, "measured at 1 and 2 tokens (wgmma N = 8 x TOKENS)");
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + STAGES;
  ChunkTag* tags = reinterpret_cast<ChunkTag*>(smem + 128);
  uint8_t* ring = smem + kHeaderBytes;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int kblocks = p.o.k / 16;

  // The B tiles' zeros are written once; the producer rewrites only live words.
  for (int i = threadIdx.x; i < STAGES * kBBytes / 16; i += kThreads) {
    const int s = i / (kBBytes / 16), o = i % (kBBytes / 16);
    *reinterpret_cast<uint4*>(ring + s * kStageBytes + kABytes + o * 16) = make_uint4(0, 0, 0, 0);
  }
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      // Every producer lane arrives after its own shared writes (linear: and
      // once more when its scale cp.async copies land).
      ptx::mbar_init(&full[s], A_BLOCKED ? 32 : 64);
      // Every consumer thread arrives: its own reads of the stage are then
      // ordered before the producer's rewrite (racecheck follows this).
      ptx::mbar_init(&empty[s], kConsumerThreads);
    }
    ptx::fence_barrier_init();
  }
  ptx::fence_proxy_async_smem();
  __syncthreads();

  if (warp == kProducerWarp) {
    // ================= Load: the producer warp =================
    // Per chunk: read its B words and scale codes (L2-resident) into
    // registers, wait for its stage, load A and A's scales, build the B tiles
    // and the chunk tag. (Loads run no further ahead: consumers release a
    // chunk only once they have fetched the next one, so a load that waits
    // for a stage must come after the previous chunk's B.)
    ptx::prefetch_tma_map(&tmap_a);
    if (!A_BLOCKED && p.sfa_tma) ptx::prefetch_tma_map(&tmap_sfa);
    // A and its scales are read once, by this CTA: their L2 lines are marked
    // evict-first (the seeds -1 to -3%, H100, session 15). The policy is
    // built once (createpolicy is volatile: ptxas keeps every copy).
    const uint64_t a_policy = ptx::l2_evict_first();
    int stage = 0, phase = 0, issued = 0;
    auto wait_stage = [&] {
      if (issued >= STAGES) ptx::mbar_wait(&empty[stage], phase ^ 1);
    };
    auto advance = [&] {
      ++issued;
      if (++stage == STAGES) {
        stage = 0;
        phase ^= 1;
      }
    };
    // The next item is claimed when this one starts and read when it ends,
    // so the claim's round trip hides behind this item's loads. (Nothing may
    // copy the claim in between: a register move waits for the atomic.)
    unsigned* claims = reinterpret_cast<unsigned*>(p.counters);
    for (int item = blockIdx.x; item < p.items;) {
      int claimed = 0;
      if (lane == 0) claimed = int(ptx::atomic_inc_unaggregated(claims));
      const SplitKItems::Item it = p.work.at(item);
      const uint8_t* brow = p.o.b + it.l * p.o.b_batch;
      const uint8_t* srow = p.o.sfb + it.l * p.o.sfb_batch;
      for (int c = it.c_begin; c < it.c_end; ++c) {
        // B: for each token, lane i holds words i and i + 32 of the chunk and
        // block scale i.
        uint32_t bw[TOKENS][2], sb_code[TOKENS];
        const int kb = c * 32 + lane;
#pragma unroll
        for (int j = 0; j < TOKENS; ++j) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int word = c * 64 + lane + 32 * h;
            bw[j][h] = word < p.o.k / 8
                           ? __ldg(reinterpret_cast<const uint32_t*>(brow + j * p.o.b_token) + word)
                           : 0u;
          }
          sb_code[j] = 0;
          if (kb < kblocks)
            sb_code[j] =
                B_BLOCKED ? __ldg(p.o.sfb + blocked_scale_index(it.l, j, kb, p.o.b_rows, kblocks))
                          : __ldg(srow + j * p.o.sfb_token + kb);
        }

        wait_stage();
        uint8_t* st = ring + stage * kStageBytes;
        // A by TMA (rows past M and K past the row end are zero-filled); its
        // scales by bulk copy (blocked), by TMA (linear, 16-byte aligned rows)
        // or by 4-byte cp.async (other linear).
        if (lane == 0) {
          uint32_t bytes = kABytes;
          const int kt0 = 8 * c, k_tiles = (kblocks + 3) / 4;
          const uint32_t sa_bulk = uint32_t(min(8, k_tiles - kt0) * 512);
          if constexpr (A_BLOCKED) bytes += sa_bulk;
          if (!A_BLOCKED && p.sfa_tma) bytes += kSABytes;
          ptx::mbar_expect_tx(&full[stage], bytes);
          ptx::tma_load_3d(st, &tmap_a, &full[stage], c * (kABytes / kRows), it.mt * kRows, it.l,
                           a_policy);
          if (!A_BLOCKED && p.sfa_tma)
            ptx::tma_load_3d(st + L::kSA, &tmap_sfa, &full[stage], c * 32, it.mt * kRows, it.l,
                             a_policy);
          if constexpr (A_BLOCKED)
            ptx::bulk_load(st + L::kSA,
                           p.o.sfa + blocked_scale_index(it.l, (long long)it.mt * kRows, 4LL * kt0,
                                                         p.o.m, kblocks),
                           sa_bulk, &full[stage]);
          tags[stage] = ChunkTag{item, c};
        }
        if (!A_BLOCKED && !p.sfa_tma) {
          const uint8_t* sfa = p.o.sfa + it.l * p.o.sfa_batch;
#pragma unroll
          for (int i = 0; i < kRows / 32; ++i) {
            const int r = lane + 32 * i, row = it.mt * kRows + r;
#pragma unroll
            for (int w = 0; w < 8; ++w) {
              const int kbw = 32 * c + 4 * w;
              if (row < p.o.m && kbw < kblocks)
                ptx::cp_async_4(st + L::kSA + r * 32 + 4 * w,
                                sfa + (long long)row * p.o.sfa_row + kbw);
            }
          }
        }
        // (Linear: the barrier counts one cp.async arrival per lane either way.)
        if constexpr (!A_BLOCKED) {
          ptx::cp_async_arrive_noinc(&full[stage]);
        }
        // B: each token's 64 words of the chunk (16 per group) become its live
        // words of the group tiles (even nibbles: k32 step 2 * half, odd: 2 *
        // half + 1).
#pragma unroll
        for (int j = 0; j < TOKENS; ++j) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int q = lane + 32 * h;
            const int g = q / 16, blk = (q % 16) / 2, half = q % 2, t = blk / 2, hb = blk % 2;
            uint32_t even, odd;
            decode_fp4x8_e4m3(bw[j][h], even, odd);
            uint8_t* bt = st + kABytes + g * kBTileBytes + b_word_offset(j, t, hb);
            *reinterpret_cast<uint32_t*>(bt + (2 * half) * L::kStepBytes) = even;
            *reinterpret_cast<uint32_t*>(bt + (2 * half + 1) * L::kStepBytes) = odd;
          }
        }
#pragma unroll
        for (int j = 0; j < TOKENS; ++j)
          reinterpret_cast<float*>(st + L::kSB)[j * 32 + lane] =
              kb < kblocks ? e4m3_to_float(uint8_t(sb_code[j])) : 0.f;
        ptx::fence_proxy_async_smem();
        ptx::mbar_arrive(&full[stage]);
        advance();
      }
      item = p.ctas + __shfl_sync(0xffffffffu, claimed, 0);
    }
    // No more items: a tag that says so.
    wait_stage();
    if (lane == 0) tags[stage] = ChunkTag{-1, 0};
    if constexpr (!A_BLOCKED) ptx::cp_async_arrive_noinc(&full[stage]);
    ptx::mbar_arrive(&full[stage]);
    if (p.work.segs == 1 && lane == 0) leave_counters(p);  // its last claim is back
    return;
  }

  // ================= Compute: two consumer warpgroups =================
  const int g = lane / 4, t = lane % 4;
  const int r0 = warp * 16 + g, r1 = r0 + 8;  // tile rows (warpgroup w: rows 64w..64w+63)
  const bool k_tail = kblocks % 8 != 0;

  // This lane's offsets in a stage, for group 0 of the chunk.
  const int a_off0 = r0 * 256 + 16 * t, a_off1 = r1 * 256 + 16 * t;
  const int sa_off0 = L::kSA + sa_offset<A_BLOCKED>(r0, t, 0);
  const int sa_off1 = L::kSA + sa_offset<A_BLOCKED>(r1, t, 0);
  const int sb_off = L::kSB + 8 * t;
  constexpr int kSAGroupStep = A_BLOCKED ? 1024 : 8;
  const uint32_t desc_lo = b_desc_lo(ring + kABytes);

  // Loads group j of the chunk in the position's stage; at a chunk's first
  // group, waits for the stage and reads its tag (false: no more work).
  auto fetch = [&](Position& cu, Operands& o) {
    const uint8_t* st = ring + cu.stage * kStageBytes;
    if (cu.j == 0) {
      ptx::mbar_wait(&full[cu.stage], cu.phase);
      const ChunkTag tag = tags[cu.stage];
      if (tag.item < 0) return false;
      if (tag.item != cu.item) {
        const SplitKItems::Item it = p.work.at(tag.item);
        cu.item = tag.item;
        cu.l = it.l;
        cu.mt = it.mt;
        cu.tile = it.tile;
        cu.c_end = it.c_end;
      }
      cu.c = tag.c;
      cu.groups = min(kChunkGroups, p.groups - kChunkGroups * tag.c);
    }
    const uint4 c0 = *reinterpret_cast<const uint4*>(st + a_off0 + cu.j * 64);
    const uint4 c1 = *reinterpret_cast<const uint4*>(st + a_off1 + cu.j * 64);
    o.sc0 = *reinterpret_cast<const uint16_t*>(st + sa_off0 + cu.j * kSAGroupStep);
    o.sc1 = *reinterpret_cast<const uint16_t*>(st + sa_off1 + cu.j * kSAGroupStep);
    // Chunk words 0, 1: block 2t (values 0-7, 8-15); words 2, 3: block 2t+1.
    const uint32_t w0[4] = {c0.x, c0.y, c0.z, c0.w}, w1[4] = {c1.x, c1.y, c1.z, c1.w};
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      decode_fp4x8_e4m3(w0[half], o.a[2 * half][0], o.a[2 * half + 1][0]);
      decode_fp4x8_e4m3(w1[half], o.a[2 * half][1], o.a[2 * half + 1][1]);
      decode_fp4x8_e4m3(w0[2 + half], o.a[2 * half][2], o.a[2 * half + 1][2]);
      decode_fp4x8_e4m3(w1[2 + half], o.a[2 * half][3], o.a[2 * half + 1][3]);
    }
    return true;
  };
  constexpr int kAcc = 4 * TOKENS;  // token j: d[4j..4j+3] (rows r0, r1 x blocks 2t, 2t+1)
  auto issue = [&](const Position& cu, const Operands& o, float(&d)[kAcc]) {
    const uint32_t lo = desc_lo + uint32_t(cu.stage * kStageBytes + cu.j * kBTileBytes) / 16;
    // Zeroed here rather than by the first wgmma's scale-d: an accumulator
    // that is not read lets ptxas give A's registers to it, which serializes.
#pragma unroll
    for (int i = 0; i < kAcc; ++i) d[i] = 0.f;
    ptx::fence_regs(d);
    ptx::wgmma_fence();
#pragma unroll
    for (int s = 0; s < 4; ++s)
      wgmma::RSFp8<8 * TOKENS>::mma(d, o.a[s], b_desc(lo + s * L::kStepBytes / 16), 1);
    ptx::wgmma_commit();
  };

  auto store = [&](const Position& cu, int j, float s0, float s1) {
    OUT* out = reinterpret_cast<OUT*>(p.o.c) + cu.l * p.o.c_batch + j * p.o.c_token;
    const int row0 = cu.mt * kRows + r0, row1 = cu.mt * kRows + r1;
    if (row0 < p.o.m) out[(long long)row0 * p.o.c_row] = OUT(s0 * p.o.alpha);
    if (row1 < p.o.m) out[(long long)row1 * p.o.c_row] = OUT(s1 * p.o.alpha);
  };
  // Applies the scales of a finished group; at a chunk's end frees its stage,
  // at an item's end stores the rows or leaves a partial.
  float acc0[TOKENS] = {}, acc1[TOKENS] = {};
  auto finish = [&](const Position& cu, const Operands& o, const float(&d)[kAcc]) {
    float2 sa0 = e4m3x2_to_f32(o.sc0), sa1 = e4m3x2_to_f32(o.sc1);
    if (k_tail && kChunkGroups * cu.c + cu.j == p.groups - 1) {
      // Codes past K are padding (any value, NaN included) of zero blocks.
      const int kb = (p.groups - 1) * 8 + 2 * t;
      if (kb >= kblocks) sa0.x = sa1.x = 0.f;
      if (kb + 1 >= kblocks) sa0.y = sa1.y = 0.f;
    }
    const uint8_t* sb = ring + cu.stage * kStageBytes + sb_off + cu.j * 32;
#pragma unroll
    for (int j = 0; j < TOKENS; ++j) {
      const float2 b = *reinterpret_cast<const float2*>(sb + j * 128);
      acc0[j] = fmaf(d[4 * j], sa0.x * b.x, acc0[j]);
      acc0[j] = fmaf(d[4 * j + 1], sa0.y * b.y, acc0[j]);
      acc1[j] = fmaf(d[4 * j + 2], sa1.x * b.x, acc1[j]);
      acc1[j] = fmaf(d[4 * j + 3], sa1.y * b.y, acc1[j]);
    }
    if (cu.j != cu.groups - 1) return;
    ptx::mbar_arrive(&empty[cu.stage]);
    if (cu.c != cu.c_end - 1) return;
    // Each quad's four lanes add their blocks; lane j % 4 keeps token j's rows.
#pragma unroll
    for (int j = 0; j < TOKENS; ++j) {
      acc0[j] += __shfl_xor_sync(0xffffffffu, acc0[j], 1);
      acc1[j] += __shfl_xor_sync(0xffffffffu, acc1[j], 1);
      acc0[j] += __shfl_xor_sync(0xffffffffu, acc0[j], 2);
      acc1[j] += __shfl_xor_sync(0xffffffffu, acc1[j], 2);
      if (j % 4 == t) {
        if (p.work.segs == 1) {
          store(cu, j, acc0[j], acc1[j]);
        } else {  // slot [item][token][row]
          float* part = p.partial + ((long long)cu.item * TOKENS + j) * kRows;
          part[r0] = acc0[j];
          part[r1] = acc1[j];
        }
      }
      acc0[j] = acc1[j] = 0.f;
    }
  };

  // Group q's wgmma runs while group q+1 is fetched and decoded into the other
  // operand registers. (Accumulators are only read after wait<0>: reading one
  // while another wgmma is in flight makes ptxas serialize every wgmma.)
  Position fc{};
  fc.item = -1;
  Operands o0, o1;
  float d[kAcc];
  auto step = [&](Operands& cur, Operands& nxt) {
    const Position at = fc;
    issue(at, cur, d);
    fc.next<STAGES>();
    const bool more = fetch(fc, nxt);
    ptx::wgmma_wait<0>();
    ptx::fence_regs(d);
    keep_alive(cur);
    finish(at, cur, d);
    return more;
  };
  if (fetch(fc, o0))
    while (step(o0, o1) && step(o1, o0)) {
    }

  // ================= Cut tiles: add the partials =================
  // This CTA's partial stores, ordered before its count by the barrier and
  // thread 0's fence; every CTA is resident (cooperative launch), so the
  // wait ends once all have run out of items.
  if (p.work.segs == 1) return;
  unsigned* counters = reinterpret_cast<unsigned*>(p.counters);
  ptx::named_barrier<1, kConsumerThreads>();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(counters + 1, 1u);
    while (ptx::ld_relaxed_gpu(counters + 1) < unsigned(p.ctas)) __nanosleep(64);
    (void)ptx::ld_acquire_gpu(counters + 1);
    leave_counters(p);
  }
  ptx::named_barrier<1, kConsumerThreads>();
  // Two (tile, token) rows at a time, one row per thread, slots in segment order. A
  // round's loads all go out before its sum, so up to kSlotRound segments
  // (K up to 16384 at one chunk per item) cost one L2 round trip (rounds of
  // 8, which ptxas unrolled to 16: two at K = 16384; session 10's trace: the
  // sums ended 1.4-2.9 us after the last consumer).
  constexpr int kSlotRound = 32;
  const int row = threadIdx.x % kRows, units = p.items / p.work.segs * TOKENS;
  for (int u = 2 * blockIdx.x + threadIdx.x / kRows; u < units; u += 2 * p.ctas) {
    const int tile = u / TOKENS, j = u - tile * TOKENS;
    const float* slots = p.partial + ((long long)tile * p.work.segs * TOKENS + j) * kRows + row;
    float sum = 0.f;
    for (int s0 = 0; s0 < p.work.segs; s0 += kSlotRound) {
      float v[kSlotRound];
#pragma unroll
      for (int w = 0; w < kSlotRound; ++w)
        v[w] = s0 + w < p.work.segs ? __ldcg(slots + (long long)(s0 + w) * TOKENS * kRows) : 0.f;
#pragma unroll
      for (int w = 0; w < kSlotRound; ++w) sum += v[w];
    }
    const SplitKItems::Item it = p.work.at(tile * p.work.segs);
    const int m_row = it.mt * kRows + row;
    if (m_row < p.o.m)
      (reinterpret_cast<OUT*>(p.o.c) + it.l * p.o.c_batch +
       j * p.o.c_token)[(long long)m_row * p.o.c_row] = OUT(sum * p.o.alpha);
  }
}

}  // namespace kestrel
