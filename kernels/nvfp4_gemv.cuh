// NVFP4 batched GEMV: c[l][m] = alpha * sum_k A[l][m][k] * B[l][0][k].
//
// Memory-bound on A (0.5625 bytes per value). A warp copies SUPER groups of
// its 16-row tile at a time into a ring of shared-memory stages by cp.async,
// one instruction per row covering SUPER * 64 contiguous bytes: DRAM sees
// long runs of few rows (many short runs of many rows, or more of them in
// flight, measured slower), and bytes in flight cost no registers. Each lane
// then takes 16-byte chunks of rows g and g+8, decodes them to fp16 by bit
// placement (common/fp4_decode.cuh) and feeds them to mma.m16n8k16 with fp32
// accumulation. Products e2m1 x (e2m1*e4m3) are exact and the tensor
// core sums them in fp32, as the Blackwell block-scaled MMA does.
//
// The N = 8 columns of the mma carry no second vector; they separate scale
// blocks instead: column 2x collects only the slots that lane x fills from the
// first 16-value block of its chunk, column 2x+1 those from the second, so
// after the 8 mmas of a 128-value group each column holds one block's dot
// product, A's block scale is applied once per block in fp32, and the two
// columns a lane accumulates are adjacent blocks (one 2-byte scale load).
//
// B (small, shared by all rows) is decoded once per call by a pre-pass into
// a global buffer in exactly the slot order the lanes need, so the main loop
// spends no instructions on it; the main kernel starts streaming A before
// the pre-pass has finished (programmatic dependent launch) and waits only
// before its first read of B.
//
// Work split (stream-K over warps): the (batch, 16-row tile, 128-value group)
// units are cut into one contiguous range per warp of the grid, so every warp
// streams the same number of bytes whatever M, K and L are. A tile cut
// between warps is finished by the last of them to arrive (a counter per
// tile), which adds the partial sums in warp order: results do not depend on
// timing.
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
  int m, k, l, b_rows;
  float alpha;  // global scales times 2^28 (the decode's two 2^-14 factors)
  // Workspace, laid out by the host (src/ops/gemv.cpp):
  uint4* b_slots;          // 32 zero bytes, then [L][groups][4][2] x 32 bytes of decoded B
  float* partials;         // [warps of the grid][2][16]
  unsigned* tile_counts;   // [L][tiles]
  int groups, tiles;       // per row: ceil(K / 128); per batch: ceil(M / 16)
  long long units;         // L * tiles * groups
  long long grid_warps;
};

namespace gemv {

constexpr int kGroup = 128;      // K values per lane-quad step: 4 lanes x 32 values
constexpr int kGroupBytes = 64;  // packed bytes of one row per group
constexpr int kSlotWords = 8;    // decoded B per (group, lane t, half): 8 f16x2
constexpr int kGroupSlots = 16;  // uint4s of decoded B per group: [t][half] x 32 bytes

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

// fp32 values of the two e4m3 codes packed in the low 16 bits.
__device__ __forceinline__ float2 e4m3x2_to_f32(uint32_t codes) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(codes), __NV_E4M3);
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
}

template <bool VEC16>
__device__ __forceinline__ uint4 load_chunk(const uint8_t* row, int byte_off, int row_bytes) {
  uint4 v = make_uint4(0, 0, 0, 0);
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

// One stage (SUPER groups of one warp) in shared memory: 16 rows of A, each
// SUPER * 64 bytes padded by 64 (rows g and g + 1 then fall in different
// banks); decoded B as [group][t][half] x 32 bytes; A's scale codes as
// [row][group] x 8 bytes.
constexpr int kRowPad = 64;
template <int SUPER>
struct StageLayout {
  static constexpr int kRowStride = SUPER * kGroupBytes + kRowPad;
  static constexpr int kA = 16 * kRowStride;
  static constexpr int kB = SUPER * 256;
  static constexpr int kRowScales = SUPER * 8;
  static constexpr int kS = 16 * kRowScales;
  static constexpr int kBytes = kA + kB + kS;
};
constexpr int kZeroBytes = 32;  // read by lanes whose B fragment is zero

template <int WARPS, int DEPTH, int SUPER>
__host__ __device__ constexpr int smem_bytes() {
  return kZeroBytes + WARPS * DEPTH * StageLayout<SUPER>::kBytes;
}

// Which warp of the grid owns unit x: the largest w with units * w / W <= x.
__device__ __forceinline__ long long owner_warp(long long x, const GemvParams& p) {
  return (long long)(((unsigned long long)(x + 1) * (unsigned long long)p.grid_warps - 1ull) /
                     (unsigned long long)p.units);
}
__device__ __forceinline__ long long first_unit(long long w, const GemvParams& p) {
  return (long long)((unsigned long long)p.units * (unsigned long long)w /
                     (unsigned long long)p.grid_warps);
}

// The loop is latency-bound per warp, so registers must not be what keeps
// the SM under 16 warps (shared memory may).
template <int WARPS, int DEPTH, int SUPER>
__host__ __device__ constexpr int min_blocks() {
  const int by_warps = 512 / (WARPS * 32), by_smem = (227 * 1024) / smem_bytes<WARPS, DEPTH, SUPER>();
  return by_warps < by_smem ? by_warps : (by_smem > 0 ? by_smem : 1);
}

}  // namespace gemv

// Pre-pass: B decoded to fp16 (times its block scale: exact), one 32-byte slot
// per (batch, group, lane t, half) in the order of the main loop's B
// fragments; the zero slot and the tile counters are cleared for this call.
template <bool B_BLOCKED>
__global__ void __launch_bounds__(256) nvfp4_gemv_b_prepass_kernel(const __grid_constant__ GemvParams p) {
  using namespace gemv;
  // Let the main kernel launch and start streaming A now.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int kblocks = p.k / 16, row_bytes = p.k / 2;
  const long long slots = (long long)p.l * p.groups * 8;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < slots; i += stride) {
    const int l = int(i / (p.groups * 8)), rest = int(i % (p.groups * 8));
    const int gi = rest / 8, t = (rest % 8) / 2, half = rest % 2;
    const uint8_t* brow = p.b + l * p.b_batch;
    const int byte_off = gi * kGroupBytes + t * 16 + half * 8;
    uint32_t out[kSlotWords];
#pragma unroll
    for (int wi = 0; wi < 2; ++wi) {
      uint32_t h[4] = {0, 0, 0, 0};
      if (byte_off + wi * 4 < row_bytes) {
        decode_fp4x8(ptx::ld_nc_u32(brow + byte_off + wi * 4), h);
        const int kb = (byte_off + wi * 4) / 8;
        const uint32_t s = splat_e4m3_as_half2(ptx::ld_nc_u8(
            p.sfb + scale_off<B_BLOCKED>(p.sfb_batch, 0, l, 0, kb, p.b_rows, kblocks)));
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&h[q]),
                                    *reinterpret_cast<const __half2*>(&s));
          h[q] = *reinterpret_cast<const uint32_t*>(&v);
        }
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) out[4 * wi + q] = h[q];
    }
    uint4* dst = p.b_slots + 2 + 2 * i;
    dst[0] = make_uint4(out[0], out[1], out[2], out[3]);
    dst[1] = make_uint4(out[4], out[5], out[6], out[7]);
  }
  const long long counts = (long long)p.l * p.tiles;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < counts; i += stride)
    p.tile_counts[i] = 0u;
  if (blockIdx.x == 0 && threadIdx.x < 2) p.b_slots[threadIdx.x] = make_uint4(0, 0, 0, 0);
}

template <typename OUT, int WARPS, int DEPTH, int SUPER, bool A_BLOCKED, bool VEC16, bool SCALE4>
__global__ void __launch_bounds__(WARPS * 32, (gemv::min_blocks<WARPS, DEPTH, SUPER>()))
    nvfp4_gemv_kernel(const __grid_constant__ GemvParams p) {
  using namespace gemv;
  using L = StageLayout<SUPER>;
  static_assert(SUPER == 4 || SUPER == 8, "a row copy is SUPER * 64 bytes: 8 or 16 bytes per lane");
  extern __shared__ __align__(16) uint8_t smem[];
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const long long warp = blockIdx.x * (long long)WARPS + threadIdx.x / 32;
  const int kblocks = p.k / 16, row_bytes = p.k / 2;
  const int g_full = p.k / kGroup;  // groups with all 128 values inside K

  if (threadIdx.x < kZeroBytes / 4) reinterpret_cast<uint32_t*>(smem)[threadIdx.x] = 0u;
  __syncthreads();
  uint8_t* ring = smem + kZeroBytes + (threadIdx.x / 32) * DEPTH * L::kBytes;
  const uint32_t ring_s = ptx::smem_u32(ring);

  // B fragments: lanes g == 2t read half 0 of their chunk's slot into b0,
  // lanes g == 2t+1 half 1 into b1; every other fragment reads zeros (its
  // column owns no slot of that lane), which keeps the loop free of
  // per-lane branches.
  const bool b0_lane = g == 2 * t, b1_lane = g == 2 * t + 1;
  const int b0_off = b0_lane ? L::kA + t * 64 : -1, b1_off = b1_lane ? L::kA + t * 64 + 32 : -1;

  // Copy roles within a stage: a row copy gives each lane kCopy bytes of the
  // row's SUPER groups (the warp covers them in one instruction).
  constexpr int kCopy = SUPER * kGroupBytes / 32;  // bytes per lane per row: 8 or 16
  const int copy_group = lane * kCopy / kGroupBytes;
  constexpr int kPieces = SUPER * 2;  // 4-byte scale pieces per row and stage
  const int q = lane % kPieces;

  const long long u_begin = first_unit(warp, p), u_end = first_unit(warp + 1, p);
  const long long begin_tile = u_begin / p.groups;
  bool b_ready = false;
  for (long long u = u_begin; u < u_end;) {
    const long long tile_id = u / p.groups;  // l * tiles + tile
    const int g0 = int(u - tile_id * p.groups);
    const int g1 = int(min(u_end - tile_id * p.groups, (long long)p.groups));
    u = tile_id * p.groups + g1;
    const int l = int(tile_id / p.tiles), tile = int(tile_id % p.tiles);
    const int gend = min(g1, g_full);  // full groups run through the ring

    // Rows past M read row M-1 (never stored): the loop needs no predicates.
    const int row0 = tile * 16 + g, row1 = row0 + 8;
    const uint8_t* a_tile = p.a + l * p.a_batch;
    auto a_row = [&](int r) { return a_tile + (long long)min(tile * 16 + r, p.m - 1) * p.a_row; };
    auto scale_at = [&](int r, int kb) {
      return p.sfa + scale_off<A_BLOCKED>(p.sfa_batch, p.sfa_row, l, min(tile * 16 + r, p.m - 1),
                                          kb, p.m, kblocks);
    };

    auto issue_a = [&](int slot, int gs) {
      const uint32_t st = ring_s + slot * L::kBytes;
      const bool a_ok = gs + copy_group < gend;
#pragma unroll
      for (int r = 0; r < 16; ++r) {
        if (!a_ok) break;
        const uint8_t* src = a_row(r) + gs * kGroupBytes + lane * kCopy;
        const uint32_t dst = st + r * L::kRowStride + lane * kCopy;
        if constexpr (VEC16 && kCopy == 16) {
          ptx::cp_async_16(dst, src);
        } else {
#pragma unroll
          for (int h = 0; h < kCopy; h += 8) ptx::cp_async_8(dst + h, src + h);
        }
      }
      // Scale codes: piece q (blocks 4q..4q+3, of group q / 2) of rows
      // lane / kPieces + i * 32 / kPieces.
      if (gs + q / 2 < gend) {
#pragma unroll
        for (int i = 0; i < 16 * kPieces / 32; ++i) {
          const int r = lane / kPieces + i * (32 / kPieces);
          const uint8_t* src = scale_at(r, gs * 8 + 4 * q);
          const uint32_t off = L::kA + L::kB + r * L::kRowScales + 4 * q;
          if constexpr (SCALE4) {
            ptx::cp_async_4(st + off, src);
          } else {  // unaligned scale rows: a plain copy (exposes latency)
            uint32_t v = 0;
#pragma unroll
            for (int b = 0; b < 4; ++b) v |= uint32_t(__ldg(src + b)) << (8 * b);
            *reinterpret_cast<uint32_t*>(ring + slot * L::kBytes + off) = v;
          }
        }
      }
    };
    auto issue_b = [&](int slot, int gs) {
      const uint4* src = p.b_slots + 2 + ((long long)l * p.groups + gs) * kGroupSlots;
#pragma unroll
      for (int i = 0; i < SUPER * kGroupSlots / 32; ++i) {
        const int piece = lane + 32 * i;
        if (gs + piece / kGroupSlots < gend)
          ptx::cp_async_16(ring_s + slot * L::kBytes + L::kA + piece * 16, src + piece);
      }
    };
    auto wait_b = [&] {
      if (!b_ready) {  // the pre-pass has written B and cleared the counters
        asm volatile("griddepcontrol.wait;" ::: "memory");
        b_ready = true;
      }
    };

    float acc0 = 0.f, acc1 = 0.f, acc2 = 0.f, acc3 = 0.f;
    // bq: this lane's b0 fragments (8 f16x2), then its b1 fragments.
    auto mma_group = [&](const uint4& x0, const uint4& x1, uint32_t sc0, uint32_t sc1,
                         const uint4 (&bq)[4]) {
      const uint32_t b0[8] = {bq[0].x, bq[0].y, bq[0].z, bq[0].w,
                              bq[1].x, bq[1].y, bq[1].z, bq[1].w};
      const uint32_t b1[8] = {bq[2].x, bq[2].y, bq[2].z, bq[2].w,
                              bq[3].x, bq[3].y, bq[3].z, bq[3].w};
      uint32_t h0[4][4], h1[4][4];
      const uint32_t w0[4] = {x0.x, x0.y, x0.z, x0.w};
      const uint32_t w1[4] = {x1.x, x1.y, x1.z, x1.w};
#pragma unroll
      for (int wi = 0; wi < 4; ++wi) {
        decode_fp4x8(w0[wi], h0[wi]);
        decode_fp4x8(w1[wi], h1[wi]);
      }
      // Two independent mma chains (even and odd j): the 8 dependent mmas of
      // one chain were the warp's critical path. Their sum is exact (at most
      // 16 products per column, all multiples of 2^-28 far below 2^24 ulps).
      float c[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int wlo = j / 4, whi = 2 + j / 4, qq = j % 4;
        const uint32_t a[4] = {h0[wlo][qq], h1[wlo][qq], h0[whi][qq], h1[whi][qq]};
        ptx::mma_m16n8k16_f16_f32(c[j % 2], a, b0[j], b1[j]);
      }
      const float2 sa = e4m3x2_to_f32(sc0), sb = e4m3x2_to_f32(sc1);
      acc0 = fmaf(c[0][0] + c[1][0], sa.x, acc0);
      acc1 = fmaf(c[0][1] + c[1][1], sa.y, acc1);
      acc2 = fmaf(c[0][2] + c[1][2], sb.x, acc2);
      acc3 = fmaf(c[0][3] + c[1][3], sb.y, acc3);
    };
    auto compute = [&](int slot, int j) {
      const uint8_t* st = ring + slot * L::kBytes;
      const uint4 x0 = ptx::ld_shared_v4(st + g * L::kRowStride + j * kGroupBytes + t * 16);
      const uint4 x1 = ptx::ld_shared_v4(st + (g + 8) * L::kRowStride + j * kGroupBytes + t * 16);
      const uint8_t* sc = st + L::kA + L::kB + g * L::kRowScales + j * 8 + 2 * t;
      const uint32_t sc0 = *reinterpret_cast<const unsigned short*>(sc);
      const uint32_t sc1 = *reinterpret_cast<const unsigned short*>(sc + 8 * L::kRowScales);
      const uint8_t* q0 = b0_off >= 0 ? st + b0_off + j * 256 : smem;
      const uint8_t* q1 = b1_off >= 0 ? st + b1_off + j * 256 : smem;
      const uint4 bq[4] = {ptx::ld_shared_v4(q0), ptx::ld_shared_v4(q0 + 16), ptx::ld_shared_v4(q1),
                           ptx::ld_shared_v4(q1 + 16)};
      mma_group(x0, x1, sc0, sc1, bq);
    };

    // Full groups of [g0, g1) through the ring, SUPER at a time: DEPTH - 1
    // stages in flight while one is computed.
    const int stages = (gend - g0 + SUPER - 1) / SUPER;
#pragma unroll
    for (int d = 0; d < DEPTH - 1; ++d)
      if (d < stages) issue_a(d, g0 + d * SUPER);
    wait_b();
#pragma unroll
    for (int d = 0; d < DEPTH - 1; ++d) {
      if (d < stages) issue_b(d, g0 + d * SUPER);
      ptx::cp_async_commit();
    }
    int slot = 0, next = DEPTH - 1;  // ring slots of the stage computed / copied next
    for (int i = 0; i < stages; ++i) {
      if (i + DEPTH - 1 < stages) {
        issue_a(next, g0 + (i + DEPTH - 1) * SUPER);
        issue_b(next, g0 + (i + DEPTH - 1) * SUPER);
      }
      ptx::cp_async_commit();
      ptx::cp_async_wait_group<DEPTH - 1>();
      __syncwarp();
      const int gs = g0 + i * SUPER;
#pragma unroll 4
      for (int j = 0; j < SUPER; ++j)
        if (gs + j < gend) compute(slot, j);
      __syncwarp();  // every lane is done with the slot before it is refilled
      slot = slot + 1 == DEPTH ? 0 : slot + 1;
      next = next + 1 == DEPTH ? 0 : next + 1;
    }
    if (g1 > g_full) {  // the partial last group of the row, straight from global memory
      const int gi = g_full, off = gi * kGroupBytes + t * 16;
      const uint4 x0 = load_chunk<VEC16>(a_row(g), off, row_bytes);
      const uint4 x1 = load_chunk<VEC16>(a_row(g + 8), off, row_bytes);
      const int kb = gi * 8 + 2 * t;
      auto sc = [&](int r, int b) -> uint32_t { return b < kblocks ? uint32_t(__ldg(scale_at(r, b))) : 0u; };
      const uint32_t sc0 = sc(g, kb) | (sc(g, kb + 1) << 8);
      const uint32_t sc1 = sc(g + 8, kb) | (sc(g + 8, kb + 1) << 8);
      const uint8_t* bg = reinterpret_cast<const uint8_t*>(
          p.b_slots + 2 + ((long long)l * p.groups + gi) * kGroupSlots);
      const uint8_t* zero = reinterpret_cast<const uint8_t*>(p.b_slots);
      const uint8_t* q0 = b0_lane ? bg + t * 64 : zero;
      const uint8_t* q1 = b1_lane ? bg + t * 64 + 32 : zero;
      wait_b();
      const uint4 bq[4] = {ptx::ld_nc_v4(q0), ptx::ld_nc_v4(q0 + 16), ptx::ld_nc_v4(q1),
                           ptx::ld_nc_v4(q1 + 16)};
      mma_group(x0, x1, sc0, sc1, bq);
    }

    // ---- Reduce: columns -> lanes of a quad; lanes t == 0 hold rows g, g+8 ----
    float r0 = acc0 + acc1, r1 = acc2 + acc3;
    r0 += __shfl_xor_sync(0xffffffffu, r0, 1);
    r1 += __shfl_xor_sync(0xffffffffu, r1, 1);
    r0 += __shfl_xor_sync(0xffffffffu, r0, 2);
    r1 += __shfl_xor_sync(0xffffffffu, r1, 2);
    OUT* out = reinterpret_cast<OUT*>(p.c) + l * p.c_batch;
    if (g0 == 0 && g1 == p.groups) {  // the whole tile is this warp's
      if (t == 0) {
        if (row0 < p.m) out[(long long)row0 * p.c_row] = OUT(r0 * p.alpha);
        if (row1 < p.m) out[(long long)row1 * p.c_row] = OUT(r1 * p.alpha);
      }
      continue;
    }
    // A tile cut between warps: publish the partial sums, and the last warp
    // to arrive adds them in warp order.
    const int which = tile_id == begin_tile ? 0 : 1;  // the warp's first or last tile
    if (t == 0) {
      float* mine = p.partials + (warp * 2 + which) * 16;
      mine[g] = r0;
      mine[g + 8] = r1;
      __threadfence();
    }
    __syncwarp();
    const long long first = owner_warp(tile_id * p.groups, p);
    const long long last = owner_warp(tile_id * p.groups + p.groups - 1, p);
    unsigned arrived = 0;
    if (lane == 0) arrived = atomicAdd(p.tile_counts + tile_id, 1u);
    arrived = __shfl_sync(0xffffffffu, arrived, 0);
    if (arrived != unsigned(last - first)) continue;
    __threadfence();
    if (lane < 16) {
      float total = 0.f;
      for (long long w = first; w <= last; ++w) {
        const int s = first_unit(w, p) / p.groups == tile_id ? 0 : 1;
        total += __ldcg(p.partials + (w * 2 + s) * 16 + lane);
      }
      const int row = tile * 16 + lane;
      if (row < p.m) out[(long long)row * p.c_row] = OUT(total * p.alpha);
    }
  }
}

}  // namespace kestrel
