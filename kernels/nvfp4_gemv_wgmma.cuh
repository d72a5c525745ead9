// NVFP4 batched GEMV on the fp8 tensor cores: c[l][m] = alpha * sum_k A[l][m][k] * B[l][0][k].
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
//   writes only the 128 live bytes of each 1 KB B tile.
// - Work split: stream-K. The L x ceil(M/128) row tiles times K/512 chunks
//   are cut into one equal, contiguous range per CTA; a tile finished by one CTA is
//   stored directly, a cut tile's partial row sums go to `partial`, and the
//   last of its CTAs to arrive (an atomic counter per tile half) adds them in
//   CTA order: deterministic, no second kernel.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "common/fp4_decode.cuh"
#include "common/nvfp4_codec.cuh"
#include "common/nvfp4_gemv_operands.cuh"
#include "common/nvfp4_scale_layout.cuh"
#include "common/ptx.cuh"
#include "common/stream_k.cuh"
#include "common/tma_pipeline.cuh"

namespace kestrel {

struct GemvWgmmaParams {
  GemvOperands o;    // alpha: global scales times 2^12 (the decode's two 2^-6 factors)
  int* arrivals;     // [ctas][2]: zero between calls (the last arrival resets it)
  float* partial;    // [ctas][2][128]: a CTA's first and last cut segments
  long long units;   // row tiles x chunks
  int tiles_m, groups, chunks, ctas;  // groups of 128 and chunks of 512 values per row
};

namespace gemv_wgmma {

constexpr int kRows = 128;        // rows per tile: two consumer warpgroups x 64
constexpr int kGroup = 128;       // K values per wgmma group (4 x k32)
constexpr int kChunkGroups = 4;   // groups per stage: 256 contiguous bytes per row
constexpr int kABytes = kRows * kGroup * kChunkGroups / 2;
constexpr int kBTileBytes = 4 * 256;  // one group: 4 k32 steps x (8 columns x 32 bytes)
constexpr int kBBytes = kChunkGroups * kBTileBytes;
constexpr int kSABytes = kRows * 8 * kChunkGroups;  // 8 scale codes per row and group
constexpr int kSBBytes = 8 * 4 * kChunkGroups;      // fp32 B scales
constexpr int kStageBytes = kABytes + kBBytes + kSABytes + kSBBytes;
constexpr int kConsumerThreads = 256;
constexpr int kThreads = kConsumerThreads + 32;

// Shared memory: barriers, the stage ring, then the current batch's B row
// (packed values and scale codes), 16-byte rounded.
__host__ __device__ constexpr long long smem_bytes(int stages, long long k) {
  return 128 + (long long)stages * kStageBytes + (k / 2 + 15) / 16 * 16 + (k / 16 + 15) / 16 * 16;
}

// Position of the live word of quad lane t, half h (block 2t + h of a group)
// in one 256-byte k32 step of a B tile: K-major core matrices of 8 columns x
// 16 bytes; K half h, column 2t + h, bytes 4t..4t+3 (the slots lane t fills).
__device__ __forceinline__ int b_word_offset(int t, int h) {
  return h * 128 + (2 * t + h) * 16 + 4 * t;
}

// wgmma descriptor of a B tile: no swizzle, core matrices 128 bytes apart
// along K (N = 8 has a single core matrix row, so both offsets are 128). The
// low word is the start address / 16 (plus the leading offset), so moving the
// descriptor by n bytes adds n / 16 to it.
__device__ __forceinline__ uint32_t b_desc_lo(const void* p) {
  return ((ptx::smem_u32(p) & 0x3FFFF) >> 4) | ((128 >> 4) << 16);
}
__device__ __forceinline__ uint64_t b_desc(uint32_t lo) { return (uint64_t(128 >> 4) << 32) | lo; }

__device__ __forceinline__ void mma_m64n8k32_e4m3(float (&d)[4], const uint32_t (&a)[4],
                                                  uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "%8, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

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

// Where a warp is in its CTA's sequence of groups. Advanced incrementally:
// 64-bit divisions per chunk cost the producer more than a chunk's TMA.
struct Cursor {
  long long u;       // unit: (batch l, row tile mt, chunk c)
  int l, mt;         // batch and row tile
  int c, j, groups;  // chunk in the tile, group in the chunk, groups in this chunk
  int stage, phase;  // ring slot of the chunk and its barrier parity

  __device__ void start(long long u0, int chunks, int tile_groups, int tiles_m) {
    u = u0;
    const long long x = u0 / chunks;
    l = int(x / tiles_m);
    mt = int(x % tiles_m);
    c = int(u0 % chunks);
    j = 0;
    groups = min(kChunkGroups, tile_groups - kChunkGroups * c);
    stage = phase = 0;
  }
  template <int STAGES>
  __device__ void next(int chunks, int tile_groups, int tiles_m) {
    if (++j < groups) return;
    next_chunk<STAGES>(chunks, tile_groups, tiles_m);
  }
  template <int STAGES>
  __device__ void next_chunk(int chunks, int tile_groups, int tiles_m) {
    j = 0;
    ++u;
    if (++c == chunks) {
      c = 0;
      if (++mt == tiles_m) {
        mt = 0;
        ++l;
      }
    }
    groups = min(kChunkGroups, tile_groups - kChunkGroups * c);
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// One group's operands of one lane: A in wgmma register order, scale codes.
struct Operands {
  uint32_t a[4][4];  // [k32 step][register]
  uint32_t sc0, sc1;
  float2 sb;
};

__device__ __forceinline__ void keep_alive(const Operands& o) {
#pragma unroll
  for (int s = 0; s < 4; ++s)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" ::"r"(o.a[s][i]));
}

}  // namespace gemv_wgmma

// CTAS_PER_SM: 2 caps registers (84 used) so that two CTAs of 2 stages share
// an SM: twice the warps to hide the consumers' latencies.
template <typename OUT, int STAGES, int CTAS_PER_SM, bool A_BLOCKED, bool B_BLOCKED>
__global__ void __launch_bounds__(gemv_wgmma::kThreads, CTAS_PER_SM)
    nvfp4_gemv_wgmma_kernel(const __grid_constant__ TmaMap tmap_a,
                            const __grid_constant__ GemvWgmmaParams p) {
  using namespace gemv_wgmma;
  static_assert(STAGES <= 6, "barriers and the arrival flags share the first 128 bytes");
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + STAGES;
  uint8_t* ring = smem + 128;
  uint8_t* b_raw = ring + STAGES * kStageBytes;
  uint8_t* sfb_raw = b_raw + (p.o.k / 2 + 15) / 16 * 16;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int kblocks = p.o.k / 16;
  const StreamK sched{p.units, p.ctas};  // units: (row tile, 512-value chunk)
  const long long u_begin = sched.begin(blockIdx.x), u_end = sched.begin(blockIdx.x + 1);

  // The B tiles' zeros are written once; the producer rewrites only live words.
  for (int i = threadIdx.x; i < STAGES * kBBytes / 16; i += kThreads) {
    const int s = i / (kBBytes / 16), o = i % (kBBytes / 16);
    *reinterpret_cast<uint4*>(ring + s * kStageBytes + kABytes + o * 16) = make_uint4(0, 0, 0, 0);
  }
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      // Every producer lane arrives after its own B writes (linear: and once
      // more when its scale cp.async copies land).
      ptx::mbar_init(&full[s], A_BLOCKED ? 32 : 64);
      // Every consumer thread arrives: its own reads of the stage are then
      // ordered before the producer's rewrite (racecheck follows this).
      ptx::mbar_init(&empty[s], kConsumerThreads);
    }
    ptx::fence_barrier_init();
  }
  ptx::fence_proxy_async_smem();
  __syncthreads();
  if (u_begin >= u_end) return;

  if (warp == kConsumerThreads / 32) {
    // ================= Load: the producer warp =================
    // Per chunk: wait for its stage, load A and its scales, build its B. (Loads
    // run no further ahead: consumers release a chunk only once they have
    // fetched the next one, so a load that waits for a stage must come after
    // the previous chunk's B.)
    ptx::prefetch_tma_map(&tmap_a);
    int staged_l = -1;
    auto load = [&](const Cursor& ld) {
      uint8_t* st = ring + ld.stage * kStageBytes;
      if (ld.u - u_begin >= STAGES) ptx::mbar_wait(&empty[ld.stage], ld.phase ^ 1);
      const int l = ld.l, mt = ld.mt;
      // A by TMA (rows past M and K past the row end are zero-filled); its
      // scales by bulk copy (blocked) or 4-byte cp.async (linear).
      if (lane == 0) {
        uint32_t bytes = kABytes;
        const int kt0 = 8 * ld.c, k_tiles = (kblocks + 3) / 4;
        const uint32_t sa_bulk = uint32_t(min(8, k_tiles - kt0) * 512);
        if constexpr (A_BLOCKED) bytes += sa_bulk;
        ptx::mbar_expect_tx(&full[ld.stage], bytes);
        ptx::tma_load_3d(st, &tmap_a, &full[ld.stage], ld.c * (kABytes / kRows), mt * kRows, l);
        if constexpr (A_BLOCKED)
          ptx::bulk_load(st + kABytes + kBBytes,
                         p.o.sfa + blocked_scale_index(l, (long long)mt * kRows, 4LL * kt0, p.o.m,
                                                      kblocks),
                         sa_bulk, &full[ld.stage]);
      }
      if constexpr (!A_BLOCKED) {
        const uint8_t* sfa = p.o.sfa + l * p.o.sfa_batch;
#pragma unroll
        for (int i = 0; i < kRows / 32; ++i) {
          const int r = lane + 32 * i, row = mt * kRows + r;
#pragma unroll
          for (int w = 0; w < 8; ++w) {
            const int kb = 32 * ld.c + 4 * w;
            if (row < p.o.m && kb < kblocks)
              ptx::cp_async_4(st + kABytes + kBBytes + r * 32 + 4 * w,
                              sfa + (long long)row * p.o.sfa_row + kb);
          }
        }
        ptx::cp_async_arrive_noinc(&full[ld.stage]);
      }
    };
    Cursor cur;
    for (cur.start(u_begin, p.chunks, p.groups, p.tiles_m); cur.u < u_end;
         cur.next_chunk<STAGES>(p.chunks, p.groups, p.tiles_m)) {
      load(cur);
      uint8_t* st = ring + cur.stage * kStageBytes;
      const int l = cur.l;

      if (l != staged_l) {
        // This batch's B row (values and scale codes), read by this warp only.
        staged_l = l;
        const uint8_t* brow = p.o.b + l * p.o.b_batch;
        if (reinterpret_cast<uintptr_t>(brow) % 16 == 0 && p.o.k % 32 == 0) {
          for (int i = lane; i < p.o.k / 32; i += 32)
            ptx::cp_async_16(ptx::smem_u32(b_raw + 16 * i), brow + 16 * i);
        } else {
          for (int i = lane; i < p.o.k / 8; i += 32) ptx::cp_async_4(b_raw + 4 * i, brow + 4 * i);
        }
        const uint8_t* srow = p.o.sfb + l * p.o.sfb_batch;
        if (B_BLOCKED) {
          for (int kt = lane; kt < (kblocks + 3) / 4; kt += 32)
            ptx::cp_async_4(sfb_raw + 4 * kt,
                            p.o.sfb + blocked_scale_index(l, 0, 4LL * kt, p.o.b_rows, kblocks));
        } else if (reinterpret_cast<uintptr_t>(srow) % 4 == 0 && kblocks % 4 == 0) {
          for (int kt = lane; kt < kblocks / 4; kt += 32)
            ptx::cp_async_4(sfb_raw + 4 * kt, srow + 4 * kt);
        } else {
#pragma unroll 4
          for (int kb = lane; kb < kblocks; kb += 32) sfb_raw[kb] = __ldg(srow + kb);
        }
        ptx::cp_async_wait_all();
        __syncwarp();
      }

      // B: the chunk's 64 words (16 per group) become the live words of the
      // group tiles (even nibbles: k32 step 2 * half, odd: 2 * half + 1);
      // lane i also converts block scale i of the chunk.
#pragma unroll
      for (int q = lane; q < 64; q += 32) {
        const int j = q / 16, blk = (q % 16) / 2, half = q % 2, t = blk / 2, h = blk % 2;
        const int word = cur.c * 64 + q;
        const uint32_t w = word < p.o.k / 8 ? *reinterpret_cast<const uint32_t*>(b_raw + 4 * word) : 0u;
        uint32_t even, odd;
        decode_fp4x8_e4m3(w, even, odd);
        uint8_t* bt = st + kABytes + j * kBTileBytes + b_word_offset(t, h);
        *reinterpret_cast<uint32_t*>(bt + (2 * half) * 256) = even;
        *reinterpret_cast<uint32_t*>(bt + (2 * half + 1) * 256) = odd;
      }
      {
        const int kb = cur.c * 32 + lane;
        reinterpret_cast<float*>(st + kABytes + kBBytes + kSABytes)[lane] =
            kb < kblocks ? e4m3_to_float(sfb_raw[kb]) : 0.f;
      }
      ptx::fence_proxy_async_smem();
      ptx::mbar_arrive(&full[cur.stage]);
    }
    return;
  }

  // ================= Compute: two consumer warpgroups =================
  const int g = lane / 4, t = lane % 4;
  const int r0 = warp * 16 + g, r1 = r0 + 8;  // tile rows (warpgroup w: rows 64w..64w+63)
  const bool k_tail = kblocks % 8 != 0;

  // This lane's offsets in a stage, for group 0 of the chunk.
  const int a_off0 = r0 * 256 + 16 * t, a_off1 = r1 * 256 + 16 * t;
  const int sa_off0 = kABytes + kBBytes + sa_offset<A_BLOCKED>(r0, t, 0);
  const int sa_off1 = kABytes + kBBytes + sa_offset<A_BLOCKED>(r1, t, 0);
  const int sb_off = kABytes + kBBytes + kSABytes + 8 * t;
  constexpr int kSAGroupStep = A_BLOCKED ? 1024 : 8;
  const uint32_t desc_lo = b_desc_lo(ring + kABytes);

  auto fetch = [&](const Cursor& cu, Operands& o) {
    const uint8_t* st = ring + cu.stage * kStageBytes;
    if (cu.j == 0) ptx::mbar_wait(&full[cu.stage], cu.phase);
    const uint4 c0 = *reinterpret_cast<const uint4*>(st + a_off0 + cu.j * 64);
    const uint4 c1 = *reinterpret_cast<const uint4*>(st + a_off1 + cu.j * 64);
    o.sc0 = *reinterpret_cast<const uint16_t*>(st + sa_off0 + cu.j * kSAGroupStep);
    o.sc1 = *reinterpret_cast<const uint16_t*>(st + sa_off1 + cu.j * kSAGroupStep);
    o.sb = *reinterpret_cast<const float2*>(st + sb_off + cu.j * 32);
    // Chunk words 0, 1: block 2t (values 0-7, 8-15); words 2, 3: block 2t+1.
    const uint32_t w0[4] = {c0.x, c0.y, c0.z, c0.w}, w1[4] = {c1.x, c1.y, c1.z, c1.w};
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      decode_fp4x8_e4m3(w0[half], o.a[2 * half][0], o.a[2 * half + 1][0]);
      decode_fp4x8_e4m3(w1[half], o.a[2 * half][1], o.a[2 * half + 1][1]);
      decode_fp4x8_e4m3(w0[2 + half], o.a[2 * half][2], o.a[2 * half + 1][2]);
      decode_fp4x8_e4m3(w1[2 + half], o.a[2 * half][3], o.a[2 * half + 1][3]);
    }
  };
  auto issue = [&](const Cursor& cu, const Operands& o, float (&d)[4]) {
    const uint32_t lo = desc_lo + uint32_t(cu.stage * kStageBytes + cu.j * kBTileBytes) / 16;
    // Zeroed here rather than by the first wgmma's scale-d: an accumulator
    // that is not read lets ptxas give A's registers to it, which serializes.
#pragma unroll
    for (int i = 0; i < 4; ++i) d[i] = 0.f;
    ptx::fence_regs(d);
    ptx::wgmma_fence();
#pragma unroll
    for (int s = 0; s < 4; ++s) mma_m64n8k32_e4m3(d, o.a[s], b_desc(lo + s * 256 / 16), 1);
    ptx::wgmma_commit();
  };

  int seg_chunk = int(u_begin % p.chunks);
  bool first_segment = true;
  float acc0 = 0.f, acc1 = 0.f;
  // A cut tile: leave this warpgroup's 64 partial row sums; the last CTA of
  // the tile to arrive adds every CTA's partials in CTA order and stores.
  int* last_arrival = reinterpret_cast<int*>(smem + 112);  // [2], behind the barriers
  const int wg = warp / 4;
  auto wg_barrier = [&] {
    if (wg == 0) {
      ptx::named_barrier<1, 128>();
    } else {
      ptx::named_barrier<2, 128>();
    }
  };
  auto finish_cut_tile = [&](const Cursor& cu, float acc0, float acc1, bool first_segment) {
    const int slot = first_segment ? 0 : 1;
    if (t == 0) {
      float* part = p.partial + ((long long)blockIdx.x * 2 + slot) * kRows;
      part[r0] = acc0;
      part[r1] = acc1;
      __threadfence();
    }
    const long long tile_u0 = cu.u - cu.c;  // the tile's first unit
    const int c_first = sched.owner(tile_u0);
    wg_barrier();
    if (threadIdx.x % 128 == 0) {
      const int count = sched.owner(tile_u0 + p.chunks - 1) - c_first + 1;
      int* arrivals = p.arrivals + 2 * c_first + wg;
      const bool last = atomicAdd(arrivals, 1) == count - 1;
      if (last) *arrivals = 0;  // ready for the next call
      last_arrival[wg] = last ? count : 0;
      __threadfence();
    }
    wg_barrier();
    const int count = last_arrival[wg];
    if (count == 0 || t != 0) return;
    // Every contributor after c_first starts inside the tile (slot 0).
    const int first_slot = sched.slot(c_first, tile_u0);
    float s0 = 0.f, s1 = 0.f;
    for (int i = 0; i < count; ++i) {
      const float* part = p.partial + ((long long)(c_first + i) * 2 + (i == 0 ? first_slot : 0)) * kRows;
      s0 += __ldcg(part + r0);
      s1 += __ldcg(part + r1);
    }
    OUT* out = reinterpret_cast<OUT*>(p.o.c) + cu.l * p.o.c_batch;
    const int row0 = cu.mt * kRows + r0, row1 = cu.mt * kRows + r1;
    if (row0 < p.o.m) out[(long long)row0 * p.o.c_row] = OUT(s0 * p.o.alpha);
    if (row1 < p.o.m) out[(long long)row1 * p.o.c_row] = OUT(s1 * p.o.alpha);
  };

  // Applies the scales of a finished group; at a chunk's end frees its stage,
  // at a segment's end stores the rows or leaves a partial.
  auto finish = [&](const Cursor& cu, const Operands& o, const float (&d)[4]) {
    float2 sa0 = e4m3x2_to_f32(o.sc0), sa1 = e4m3x2_to_f32(o.sc1);
    if (k_tail && kChunkGroups * cu.c + cu.j == p.groups - 1) {
      // Codes past K are padding (any value, NaN included) of zero blocks.
      const int kb = (p.groups - 1) * 8 + 2 * t;
      if (kb >= kblocks) sa0.x = sa1.x = 0.f;
      if (kb + 1 >= kblocks) sa0.y = sa1.y = 0.f;
    }
    acc0 = fmaf(d[0], sa0.x * o.sb.x, acc0);
    acc0 = fmaf(d[1], sa0.y * o.sb.y, acc0);
    acc1 = fmaf(d[2], sa1.x * o.sb.x, acc1);
    acc1 = fmaf(d[3], sa1.y * o.sb.y, acc1);
    if (cu.j != cu.groups - 1) return;
    ptx::mbar_arrive(&empty[cu.stage]);
    if (cu.c != p.chunks - 1 && cu.u + 1 != u_end) return;
    acc0 += __shfl_xor_sync(0xffffffffu, acc0, 1);
    acc1 += __shfl_xor_sync(0xffffffffu, acc1, 1);
    acc0 += __shfl_xor_sync(0xffffffffu, acc0, 2);
    acc1 += __shfl_xor_sync(0xffffffffu, acc1, 2);
    OUT* out = reinterpret_cast<OUT*>(p.o.c) + cu.l * p.o.c_batch;
    const int row0 = cu.mt * kRows + r0, row1 = cu.mt * kRows + r1;
    if (seg_chunk == 0 && cu.c == p.chunks - 1) {  // the whole tile: store
      if (t == 0 && row0 < p.o.m) out[(long long)row0 * p.o.c_row] = OUT(acc0 * p.o.alpha);
      if (t == 0 && row1 < p.o.m) out[(long long)row1 * p.o.c_row] = OUT(acc1 * p.o.alpha);
    } else {
      finish_cut_tile(cu, acc0, acc1, first_segment);
    }
    acc0 = acc1 = 0.f;
    first_segment = false;
    seg_chunk = 0;
  };

  // Group q's wgmma runs while group q+1 is fetched and decoded into the other
  // operand registers. (Accumulators are only read after wait<0>: reading one
  // while another wgmma is in flight makes ptxas serialize every wgmma.)
  Cursor fc, wc;  // fetch and finish positions
  fc.start(u_begin, p.chunks, p.groups, p.tiles_m);
  wc = fc;
  Operands o0, o1;
  float d[4];
  fetch(fc, o0);
  auto step = [&](Operands& cur, Operands& nxt) {
    issue(fc, cur, d);
    fc.next<STAGES>(p.chunks, p.groups, p.tiles_m);
    const bool more = fc.u < u_end;
    if (more) fetch(fc, nxt);
    ptx::wgmma_wait<0>();
    ptx::fence_regs(d);
    keep_alive(cur);
    finish(wc, cur, d);
    wc.next<STAGES>(p.chunks, p.groups, p.tiles_m);
    return more;
  };
  while (step(o0, o1) && step(o1, o0)) {
  }
}

}  // namespace kestrel
