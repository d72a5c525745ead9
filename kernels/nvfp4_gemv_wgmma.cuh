// NVFP4 batched GEMV on the fp8 tensor cores: c[l][m] = alpha * sum_k A[l][m][k] * B[l][0][k].
//
// Memory-bound on A (0.5625 bytes per value), so the kernel is built around
// keeping DRAM busy with few instructions per value:
// - Load: one producer warp streams A by TMA, 128 rows x 128 values (8 KB) per
//   stage, into a ring of STAGES stages (~100 KB in flight per SM), with the
//   stage's A scales (cp.async / bulk copy) and the matching B operand.
// - Compute: two consumer warpgroups (64 rows each) turn each lane's 16-byte
//   chunks into e4m3 by bit placement (e2m1 * 2^-6, 7 integer ops per 8
//   values, common/fp4_decode.cuh) and feed wgmma m64n8k32 e4m3 with A from
//   registers. Products e2m1 x e2m1 and their sums over a 16-value block are
//   exact in the fp32 accumulator.
// - The 8 N columns of the wgmma carry no second vector; they separate scale
//   blocks: B column 2t is nonzero only in the K slots that lane t of a quad
//   fills from block 2t of the group, column 2t+1 only in those of block
//   2t+1. After 4 wgmmas a lane's accumulators hold exactly the dot products
//   of its two blocks for its two rows; A and B block scales (fp32) are
//   applied once per block. The zeros of B never change, so the producer
//   writes only the 128 live bytes of each 1 KB B tile.
// - Work split: stream-K. The L x ceil(M/128) row tiles times K/128 groups are
//   cut into one equal, contiguous range per CTA; a tile finished by one CTA is
//   stored directly, a cut tile's partial row sums go to `partial` and
//   nvfp4_gemv_fixup adds them in CTA order (deterministic, no atomics).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "common/fp4_decode.cuh"
#include "common/nvfp4_codec.cuh"
#include "common/nvfp4_scale_layout.cuh"
#include "common/ptx.cuh"
#include "common/tma_pipeline.cuh"

namespace kestrel {

struct GemvWgmmaParams {
  const uint8_t* sfa;  // linear: [L][M][K/16] with strides; blocked: flat
  long long sfa_batch, sfa_row;
  const uint8_t* b;  // row 0 of [L][rows_b][K/2]
  long long b_batch;
  const uint8_t* sfb;  // linear: row 0 of [L][rows_b][K/16]; blocked: flat
  long long sfb_batch;
  void* c;  // [L][M] fp16 / bf16
  long long c_batch, c_row;
  float* partial;    // [ctas][2][128]: a CTA's first and last cut segments
  long long units;   // row tiles x groups
  int m, k, l, b_rows;
  int tiles_m, groups, ctas;
  float alpha;  // global scales times 2^12 (the decode's two 2^-6 factors)
};

namespace gemv_wgmma {

constexpr int kRows = 128;  // rows per tile: two consumer warpgroups
constexpr int kGroup = 128;  // K values per stage
constexpr int kABytes = kRows * kGroup / 2;
constexpr int kBTileBytes = 4 * 256;  // 4 wgmma k32 steps x (8 columns x 32 bytes)
constexpr int kSABytes = kRows * 8;   // 8 scale codes per row (both layouts)
constexpr int kSBBytes = 128;         // 8 fp32 B scales, padded
constexpr int kStageBytes = kABytes + kBTileBytes + kSABytes + kSBBytes;
constexpr int kConsumerThreads = 256;
constexpr int kThreads = kConsumerThreads + 32;

// Shared memory: barriers, the stage ring, then the current batch's B row
// (packed values and scale codes), 16-byte rounded.
__host__ __device__ constexpr int smem_bytes(int stages, int k) {
  return 128 + stages * kStageBytes + (k / 2 + 15) / 16 * 16 + (k / 16 + 15) / 16 * 16;
}

// Stream-K: CTA c owns units [begin(c), begin(c + 1)).
struct Schedule {
  long long units;
  int ctas;
  __host__ __device__ long long begin(int c) const { return units * c / ctas; }
  __host__ __device__ int owner(long long u) const {
    return int(((u + 1) * ctas + units - 1) / units) - 1;
  }
};

// Position of the live word of lane quad index t, half h (block 2t + h) in one
// 256-byte k32 step of the B tile: K-major core matrices of 8 columns x 16
// bytes, K half h, column 2t + h, bytes 4t..4t+3 (the slots lane t fills).
__device__ __forceinline__ int b_word_offset(int t, int h) { return h * 128 + (2 * t + h) * 16 + 4 * t; }

// wgmma descriptor of one k32 step: no swizzle, core matrices 128 bytes apart
// along K (N = 8 has a single core matrix row, so both offsets are 128).
__device__ __forceinline__ uint64_t b_desc(const void* p) {
  const uint64_t addr = ptx::smem_u32(p);
  return ((addr & 0x3FFFF) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(128 >> 4) << 32);
}

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

// Byte offset of the scale pair (blocks 2t, 2t+1) of tile row r in a stage.
template <bool BLOCKED>
__device__ __forceinline__ int sa_offset(int r, int t) {
  if constexpr (BLOCKED) {
    return (t / 2) * 512 + (r % 32) * 16 + (r / 32) * 4 + 2 * (t % 2);
  } else {
    return r * 8 + 2 * t;
  }
}

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

template <typename OUT, int STAGES, bool A_BLOCKED, bool B_BLOCKED>
__global__ void __launch_bounds__(gemv_wgmma::kThreads, 1)
    nvfp4_gemv_wgmma_kernel(const __grid_constant__ TmaMap tmap_a,
                            const __grid_constant__ GemvWgmmaParams p) {
  using namespace gemv_wgmma;
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + STAGES;
  uint8_t* ring = smem + 128;
  uint8_t* b_raw = ring + STAGES * kStageBytes;
  uint8_t* sfb_raw = b_raw + (p.k / 2 + 15) / 16 * 16;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int kblocks = p.k / 16;
  const Schedule sched{p.units, p.ctas};
  const long long u_begin = sched.begin(blockIdx.x), u_end = sched.begin(blockIdx.x + 1);

  // The B tiles' zeros are written once; the producer rewrites only live words.
  for (int i = threadIdx.x; i < STAGES * kBTileBytes / 16; i += kThreads) {
    const int s = i / (kBTileBytes / 16), o = i % (kBTileBytes / 16);
    *reinterpret_cast<uint4*>(ring + s * kStageBytes + kABytes + o * 16) = make_uint4(0, 0, 0, 0);
  }
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      ptx::mbar_init(&full[s], A_BLOCKED ? 1 : 33);
      ptx::mbar_init(&empty[s], kConsumerThreads / 32);
    }
    ptx::fence_barrier_init();
  }
  ptx::fence_proxy_async_smem();
  __syncthreads();
  // The fixup kernel may launch now; it waits for this grid to finish.
  ptx::griddep_launch_dependents();

  if (warp == kConsumerThreads / 32) {
    // ================= Producer warp =================
    ptx::prefetch_tma_map(&tmap_a);
    int staged_l = -1;
    long long x = u_begin / p.groups;
    int gi = int(u_begin % p.groups);
    for (long long u = u_begin, it = 0; u < u_end; ++u, ++it) {
      const int stage = int(it % STAGES);
      uint8_t* st = ring + stage * kStageBytes;
      if (it >= STAGES) ptx::mbar_wait(&empty[stage], uint32_t((it / STAGES - 1) & 1));
      const int l = int(x / p.tiles_m), mt = int(x % p.tiles_m);

      if (l != staged_l) {
        // This batch's B row (values and scale codes): read by this warp only.
        staged_l = l;
        const uint8_t* brow = p.b + l * p.b_batch;
        for (int i = lane; i < p.k / 8; i += 32) ptx::cp_async_4(b_raw + 4 * i, brow + 4 * i);
        for (int kb4 = lane; kb4 < (kblocks + 3) / 4; kb4 += 32) {
          uint32_t codes = 0;
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int kb = 4 * kb4 + j;
            if (kb < kblocks)
              codes |= uint32_t(__ldg(p.sfb + scale_offset<B_BLOCKED>(p.sfb_batch, 0, l, 0, kb,
                                                                       p.b_rows, kblocks)))
                       << (8 * j);
          }
          *reinterpret_cast<uint32_t*>(sfb_raw + 4 * kb4) = codes;
        }
        ptx::cp_async_wait_all();
        __syncwarp();
      }

      // A by TMA; its scales by bulk copy (blocked) or 4-byte cp.async (linear).
      if (lane == 0) {
        uint32_t bytes = kABytes;
        const long long kt0 = 2LL * gi, k_tiles = (kblocks + 3) / 4;
        const uint32_t sa_bulk = uint32_t(min(2LL, k_tiles - kt0) * 512);
        if constexpr (A_BLOCKED) bytes += sa_bulk;
        ptx::mbar_expect_tx(&full[stage], bytes);
        ptx::tma_load_3d(st, &tmap_a, &full[stage], gi * (kGroup / 2), mt * kRows, l);
        if constexpr (A_BLOCKED)
          ptx::bulk_load(st + kABytes + kBTileBytes,
                         p.sfa + blocked_scale_offset(l, (long long)mt * kRows, 8LL * gi, p.m, kblocks),
                         sa_bulk, &full[stage]);
      }
      if constexpr (!A_BLOCKED) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int r = lane + 32 * i, row = mt * kRows + r;
#pragma unroll
          for (int w = 0; w < 2; ++w) {
            const int kb = gi * 8 + 4 * w;
            if (row < p.m && kb < kblocks)
              ptx::cp_async_4(st + kABytes + kBTileBytes + r * 8 + 4 * w,
                              p.sfa + l * p.sfa_batch + (long long)row * p.sfa_row + kb);
          }
        }
        ptx::cp_async_arrive_noinc(&full[stage]);
      }

      // B: 16 lanes place the group's 16 words (even / odd nibbles: k32 steps
      // 2*half and 2*half+1), 8 lanes its block scales.
      if (lane < 16) {
        const int q = lane, blk = q / 2, half = q % 2, t = blk / 2, h = blk % 2;
        const int word = gi * 16 + q;
        const uint32_t w = word < p.k / 8 ? *reinterpret_cast<const uint32_t*>(b_raw + 4 * word) : 0u;
        uint32_t even, odd;
        decode_fp4x8_e4m3(w, even, odd);
        uint8_t* bt = st + kABytes + b_word_offset(t, h);
        *reinterpret_cast<uint32_t*>(bt + (2 * half) * 256) = even;
        *reinterpret_cast<uint32_t*>(bt + (2 * half + 1) * 256) = odd;
      } else if (lane < 24) {
        const int kb = gi * 8 + lane - 16;
        const float s = kb < kblocks ? e4m3_to_float(sfb_raw[kb]) : 0.f;
        reinterpret_cast<float*>(st + kABytes + kBTileBytes + kSABytes)[lane - 16] = s;
      }
      ptx::fence_proxy_async_smem();
      __syncwarp();
      if (lane == 0) ptx::mbar_arrive(&full[stage]);
      if (++gi == p.groups) {
        gi = 0;
        ++x;
      }
    }
    return;
  }

  // ================= Consumer warpgroups =================
  const int g = lane / 4, t = lane % 4;
  const int r0 = warp * 16 + g, r1 = r0 + 8;  // tile rows (warpgroup w: rows 64w..)
  const bool k_tail = kblocks % 8 != 0;

  auto fetch = [&](long long it, Operands& o) {
    const int stage = int(it % STAGES);
    const uint8_t* st = ring + stage * kStageBytes;
    ptx::mbar_wait(&full[stage], uint32_t((it / STAGES) & 1));
    const uint4 c0 = *reinterpret_cast<const uint4*>(st + r0 * 64 + 16 * t);
    const uint4 c1 = *reinterpret_cast<const uint4*>(st + r1 * 64 + 16 * t);
    o.sc0 = *reinterpret_cast<const uint16_t*>(st + kABytes + kBTileBytes + sa_offset<A_BLOCKED>(r0, t));
    o.sc1 = *reinterpret_cast<const uint16_t*>(st + kABytes + kBTileBytes + sa_offset<A_BLOCKED>(r1, t));
    o.sb = *reinterpret_cast<const float2*>(st + kABytes + kBTileBytes + kSABytes + 8 * t);
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

  long long x = u_begin / p.groups;
  int gi = int(u_begin % p.groups), seg_start = gi;
  bool first_segment = true;
  float acc0 = 0.f, acc1 = 0.f;
  Operands ops[2];
  if (u_begin < u_end) fetch(0, ops[0]);

  // One group: mma on ops[cur] while the next group's operands are fetched.
  auto step = [&](long long u, long long it, Operands& cur, Operands& nxt) {
    const int stage = int(it % STAGES);
    const uint8_t* bt = ring + stage * kStageBytes + kABytes;
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    ptx::wgmma_fence();
#pragma unroll
    for (int s = 0; s < 4; ++s) mma_m64n8k32_e4m3(d, cur.a[s], b_desc(bt + s * 256), s);
    ptx::wgmma_commit();
    if (u + 1 < u_end) fetch(it + 1, nxt);
    ptx::wgmma_wait<0>();
    ptx::fence_regs(d);
    keep_alive(cur);
    __syncwarp();
    if (lane == 0) ptx::mbar_arrive(&empty[stage]);

    float2 sa0 = e4m3x2_to_f32(cur.sc0), sa1 = e4m3x2_to_f32(cur.sc1);
    if (k_tail && gi == p.groups - 1) {
      // Codes past K are padding (any value, NaN included): their blocks hold
      // zeros, and must stay zero.
      const int kb = gi * 8 + 2 * t;
      if (kb >= kblocks) sa0.x = sa1.x = 0.f;
      if (kb + 1 >= kblocks) sa0.y = sa1.y = 0.f;
    }
    acc0 = fmaf(d[0], sa0.x * cur.sb.x, acc0);
    acc0 = fmaf(d[1], sa0.y * cur.sb.y, acc0);
    acc1 = fmaf(d[2], sa1.x * cur.sb.x, acc1);
    acc1 = fmaf(d[3], sa1.y * cur.sb.y, acc1);

    if (gi == p.groups - 1 || u + 1 == u_end) {
      // End of a segment: reduce the quad, store or leave a partial.
      acc0 += __shfl_xor_sync(0xffffffffu, acc0, 1);
      acc1 += __shfl_xor_sync(0xffffffffu, acc1, 1);
      acc0 += __shfl_xor_sync(0xffffffffu, acc0, 2);
      acc1 += __shfl_xor_sync(0xffffffffu, acc1, 2);
      if (t == 0) {
        const bool whole = seg_start == 0 && gi == p.groups - 1;
        const int l = int(x / p.tiles_m), mt = int(x % p.tiles_m);
        if (whole) {
          OUT* out = reinterpret_cast<OUT*>(p.c) + l * p.c_batch;
          const int row0 = mt * kRows + r0, row1 = mt * kRows + r1;
          if (row0 < p.m) out[(long long)row0 * p.c_row] = OUT(acc0 * p.alpha);
          if (row1 < p.m) out[(long long)row1 * p.c_row] = OUT(acc1 * p.alpha);
        } else {
          float* part = p.partial + ((long long)blockIdx.x * 2 + (first_segment ? 0 : 1)) * kRows;
          part[r0] = acc0;
          part[r1] = acc1;
        }
      }
      acc0 = acc1 = 0.f;
      first_segment = false;
    }
    if (++gi == p.groups) {
      gi = 0;
      ++x;
    }
    seg_start = gi == 0 ? 0 : seg_start;
  };

  long long it = 0;
  for (long long u = u_begin; u < u_end; u += 2, it += 2) {
    step(u, it, ops[0], ops[1]);
    if (u + 1 < u_end) step(u + 1, it + 1, ops[1], ops[0]);
  }
}

// Sums the partial row sums of tiles cut between CTAs, in CTA order.
template <typename OUT>
__global__ void __launch_bounds__(gemv_wgmma::kRows)
    nvfp4_gemv_fixup(const __grid_constant__ GemvWgmmaParams p) {
  using namespace gemv_wgmma;
  const Schedule sched{p.units, p.ctas};
  const long long x = blockIdx.x;
  const int c_first = sched.owner(x * p.groups), c_last = sched.owner((x + 1) * p.groups - 1);
  if (c_first == c_last) return;  // stored by its only CTA
  ptx::griddep_wait();
  float sum = 0.f;
  for (int c = c_first; c <= c_last; ++c) {
    const int slot = sched.begin(c) / p.groups == x ? 0 : 1;
    sum += p.partial[((long long)c * 2 + slot) * kRows + threadIdx.x];
  }
  const int l = int(x / p.tiles_m), row = int(x % p.tiles_m) * kRows + threadIdx.x;
  if (row < p.m)
    reinterpret_cast<OUT*>(p.c)[l * p.c_batch + (long long)row * p.c_row] = OUT(sum * p.alpha);
}

}  // namespace kestrel
