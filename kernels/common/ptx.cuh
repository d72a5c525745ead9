// Named wrappers for PTX that CUDA C++ does not expose directly.
#pragma once
#include <cuda/std/cstdint>

namespace kestrel::ptx {

// Relaxed GPU-scope atomic increment, returning the old value. ptxas
// aggregates an atomic add over the warp and broadcasts its result at once,
// which waits out the round trip that a claim made ahead of time is meant to
// hide; an increment with a wrap bound below 2^32 - 1 is not aggregated
// (counts past 2^31 - 1 wrap to 0).
__device__ __forceinline__ unsigned atomic_inc_unaggregated(unsigned* p) {
  unsigned old;
  asm volatile("atom.relaxed.gpu.global.inc.u32 %0, [%1], 0x7fffffff;" : "=r"(old) : "l"(p) : "memory");
  return old;
}

// GPU-scope acquire load and release add: a flag that other CTAs of the grid
// wait on orders everything its writer wrote before the add.
__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Relaxed: no L1 invalidation per poll (an acquire load is LDG.STRONG.GPU +
// CCTL.IVALL); one acquire after the wait suffices.
__device__ __forceinline__ unsigned ld_relaxed_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_gpu_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// Release and acquire in one atomic add: it publishes what its CTA wrote
// before a barrier that led to it, and orders the adder's later reads (and,
// past a barrier, its CTA's) after what the earlier adders published.
__device__ __forceinline__ unsigned atom_add_acq_rel_gpu(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// Programmatic dependent launch: let the stream's next kernel (launched with
// programmatic serialization) start, and, in that kernel, wait until this
// one has finished and its writes are visible. Without the launch attribute
// both are no-ops.
__device__ __forceinline__ void griddep_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
__device__ __forceinline__ void griddep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// 16-byte streaming load: read once, keep it out of L1.
__device__ __forceinline__ uint4 ld_stream_v4(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// 16-byte load with the default cache policy (row loads: common/row_io.cuh).
__device__ __forceinline__ uint4 ld_global_v4(const void* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// L2 cache policies (createpolicy) for hinted loads: evict_first for data
// read for the last time (its lines go before anything else's), evict_last
// for data read again soon, evict_normal otherwise.
__device__ __forceinline__ uint64_t l2_evict_first() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ uint64_t l2_evict_last() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ uint64_t l2_evict_normal() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// 16-byte load under an L2 cache policy.
__device__ __forceinline__ uint4 ld_hint_v4(const void* p, uint64_t policy) {
  uint4 v;
  asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(policy));
  return v;
}

// 16-byte store with the default cache policy (for pointers whose 16-byte
// alignment the compiler cannot see: it would split a uint4 store into four).
__device__ __forceinline__ void st_global_v4(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

// 16-byte streaming store: written once, not re-read soon.
__device__ __forceinline__ void st_stream_v4(void* p, uint4 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

}  // namespace kestrel::ptx

namespace kestrel::ptx {

// D = A * B + C on one warp, m16n8 tiles with A from 4 and B from 2 registers
// per lane: one definition for both operand types.
#define KESTREL_MMA_M16N8(NAME, SHAPE_AND_TYPES, ACC, ACC_CONSTRAINT)                  \
  __device__ __forceinline__ void NAME(ACC(&d)[4], const uint32_t(&a)[4], uint32_t b0, \
                                       uint32_t b1) {                                  \
    asm volatile("mma.sync.aligned." SHAPE_AND_TYPES                                   \
                 " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"    \
                 : ACC_CONSTRAINT(d[0]), ACC_CONSTRAINT(d[1]), ACC_CONSTRAINT(d[2]),   \
                   ACC_CONSTRAINT(d[3])                                                \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));      \
  }
// m16n8k16: A row-major fp16 (f16x2 registers), B column-major fp16, fp32 sums.
KESTREL_MMA_M16N8(mma_m16n8k16_f16_f32, "m16n8k16.row.col.f32.f16.f16.f32", float, "+f")
// m16n8k32: A row-major unsigned bytes, B column-major signed bytes, int32 sums.
KESTREL_MMA_M16N8(mma_m16n8k32_u8s8_s32, "m16n8k32.row.col.s32.u8.s8.s32", int, "+r")
#undef KESTREL_MMA_M16N8

// Read-only, L1-cached load of one byte (scales: shared by neighbouring lanes).
__device__ __forceinline__ uint32_t ld_nc_u8(const void* p) {
  uint32_t v;
  asm volatile("ld.global.nc.u8 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

__device__ __forceinline__ uint32_t ld_nc_u32(const void* p) {
  uint32_t v;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// L1-cached 16- and 8-byte loads that the compiler may not merge with earlier
// ones (volatile): re-reading is cheaper than keeping the values in registers.
__device__ __forceinline__ uint4 ld_nc_v4(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ uint2 ld_nc_v2(const void* p) {
  uint2 v;
  asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
// x through a volatile move: ptxas can neither fold it into the
// instructions that use it nor recompute it from its inputs, so a per-thread
// constant stays in one register (left to itself, at a tight register budget
// ptxas rebuilt lane addresses from threadIdx every loop iteration).
__device__ __forceinline__ uint32_t opaque(uint32_t x) {
  uint32_t r;
  asm volatile("mov.b32 %0, %1;" : "=r"(r) : "r"(x));
  return r;
}
template <typename T>
__device__ __forceinline__ T* opaque(T* p) {
  uint64_t r;
  asm volatile("mov.b64 %0, %1;" : "=l"(r) : "l"(reinterpret_cast<uint64_t>(p)));
  return reinterpret_cast<T*>(r);
}
// Volatile like the mbarrier waits, so it stays after the one that makes
// its stage valid.
__device__ __forceinline__ uint32_t ld_shared_u16(uint32_t addr) {
  unsigned short v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint4 ld_shared_v4(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr));
  return v;
}
__device__ __forceinline__ float2 ld_shared_v2_f32(uint32_t addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint4 ld_shared_v4(const void* p) {
  return ld_shared_v4(static_cast<uint32_t>(__cvta_generic_to_shared(p)));
}

// Volatile like ld_shared_v4, so that the compiler keeps the two in program
// order (a slot re-staged after it was read).
__device__ __forceinline__ void st_shared_v4(void* p, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(
                   static_cast<uint32_t>(__cvta_generic_to_shared(p))),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
}

// One (x1) or two (x2) 8x8 b16 matrices stored transposed: lane l holds row
// l / 4, columns 2 (l % 4) and + 1 of each (an mma accumulator fragment);
// lanes 0-7 give the shared addresses of matrix 0's stored rows (the
// fragment's columns), lanes 8-15 matrix 1's.
__device__ __forceinline__ void stmatrix_x1_trans(uint32_t addr, uint32_t m0) {
  asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};" ::"r"(addr), "r"(m0)
               : "memory");
}
__device__ __forceinline__ void stmatrix_x2_trans(uint32_t addr, uint32_t m0, uint32_t m1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(addr),
               "r"(m0), "r"(m1)
               : "memory");
}

// Streaming 8-byte load (A rows that are only 8-byte aligned).
__device__ __forceinline__ uint2 ld_stream_v2(const void* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];"
               : "=r"(v.x), "=r"(v.y)
               : "l"(p));
  return v;
}

// ---- Thread-block clusters: distributed shared memory ----
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Address of `smem_addr` (a shared::cta address) in CTA `rank` of the cluster.
__device__ __forceinline__ uint32_t map_shared_rank(uint32_t smem_addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr), "r"(rank));
  return r;
}
__device__ __forceinline__ void st_cluster_f32(uint32_t cluster_addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(cluster_addr), "f"(v) : "memory");
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

}  // namespace kestrel::ptx

namespace kestrel::ptx {

// ---- Cluster barrier, split so that work can overlap the wait ----
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

// ---- mbarrier (shared::cta addresses from smem_u32) ----
__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Makes mbarrier.init visible to the other CTAs of the cluster (their st.async
// may complete on this barrier as soon as the next cluster barrier passes).
__device__ __forceinline__ void fence_mbarrier_init_cluster() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// One arrival that also expects `bytes` more transaction bytes in this phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
// Spins until the phase with parity `parity` has completed; acquire at cluster
// scope so that peers' st.async data is visible afterwards.
__device__ __forceinline__ void mbarrier_wait_parity(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// ---- st.async: store into a peer CTA's shared memory, completing `bytes`
// transaction bytes on the peer's mbarrier (both shared::cluster addresses).
__device__ __forceinline__ void st_async(uint32_t addr, uint32_t v, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                   addr),
               "r"(v), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void st_async(uint32_t addr, uint32_t v0, uint32_t v1, uint32_t bar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];" ::"r"(
          addr),
      "r"(v0), "r"(v1), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void st_async(uint32_t addr, uint32_t v0, uint32_t v1, uint32_t v2,
                                         uint32_t v3, uint32_t bar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, "
      "[%5];" ::"r"(addr),
      "r"(v0), "r"(v1), "r"(v2), "r"(v3), "r"(bar)
      : "memory");
}

// ---- cp.async: 16 bytes global -> shared without a register round trip,
// cached in L2 only.
__device__ __forceinline__ void cp_async_16(uint32_t smem_addr, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr), "l"(src) : "memory");
}
// The first `bytes` (0..16) of 16 from global, the rest zero-filled (a row's
// partial last vector).
__device__ __forceinline__ void cp_async_16_zfill(uint32_t smem_addr, const void* src,
                                                  uint32_t bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr), "l"(src),
               "r"(bytes)
               : "memory");
}
// The same under an L2 cache policy (createpolicy).
__device__ __forceinline__ void cp_async_16_hint(uint32_t smem_addr, const void* src,
                                                 uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(smem_addr),
               "l"(src), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void cp_async_16_zfill_hint(uint32_t smem_addr, const void* src,
                                                       uint32_t bytes, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"r"(smem_addr),
               "l"(src), "r"(bytes), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
// Until at most N of this thread's committed groups are pending.
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// 2^x on the SFU (relative error ~2 ulp; results below 2^-126 flush to 0).
__device__ __forceinline__ float ex2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace kestrel::ptx
