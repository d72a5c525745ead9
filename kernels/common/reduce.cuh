// The reduction ladder shared by the row-wise kernels (RMSNorm, softmax,
// cross-entropy): thread -> warp (butterfly shuffles) -> block (shared memory)
// -> cluster (distributed shared memory: st.async into every peer's buffer,
// completing on that peer's mbarrier), or instead of a cluster a group of
// co-resident CTAs exchanging through L2 (L2GroupReducer, rmsnorm_bwd).
//
// Values are small float tuples (Floats<K>) combined by an Op. Every stage
// combines in a fixed order, and every combine is commutative bit for bit
// (products are rounded separately, never fused into an FMA), so a butterfly
// leaves the identical value in every lane and every CTA of a cluster reads
// identical buffers: all threads of a row agree on the result, and repeated
// runs are bitwise equal.
#pragma once
#include <cuda/std/cstdint>

#include "common/ptx.cuh"

namespace kestrel {

// K floats, aligned so that one st.async (b32, v2 or v4) moves the tuple.
template <int K>
struct alignas(K == 1   ? 4
               : K == 2 ? 8
                        : 16) Floats {
  float f[K];
};

namespace reduce {

constexpr float kLog2e = 1.4426950408889634f;

// R independent sums at once (the R rows a thread holds in rmsnorm_bwd).
template <int R>
struct Sums {
  static constexpr int K = R;
  __device__ static Floats<R> identity() {
    Floats<R> v;
#pragma unroll
    for (int k = 0; k < R; ++k) v.f[k] = 0.0f;
    return v;
  }
  __device__ static Floats<R> combine(Floats<R> a, Floats<R> b) {
    Floats<R> v;
#pragma unroll
    for (int k = 0; k < R; ++k) v.f[k] = a.f[k] + b.f[k];
    return v;
  }
};
using Sum = Sums<1>;

struct Max {
  static constexpr int K = 1;
  __device__ static Floats<1> identity() { return {{-__int_as_float(0x7f800000)}}; }
  __device__ static Floats<1> combine(Floats<1> a, Floats<1> b) {
    return {{fmaxf(a.f[0], b.f[0])}};
  }
};

// e^(m_from - m_to) for merging a partial sum of exponentials taken relative
// to m_from into one relative to m_to >= m_from. Equal maxima give exactly 1,
// which also keeps (-inf, 0) partials of empty or all -inf slices NaN-free.
__device__ __forceinline__ float rescale(float m_from, float m_to) {
  return m_from == m_to ? 1.0f : ptx::ex2_approx((m_from - m_to) * kLog2e);
}

// Online softmax statistics (QuACK's trick: one exchange instead of two):
// f[0] = max m, f[1] = sum_j e^(x_j - m). A thread builds its own pair from
// the values it holds; pairs merge by rescaling to the larger max.
struct MaxExpSum {
  static constexpr int K = 2;
  __device__ static Floats<2> identity() { return {{-__int_as_float(0x7f800000), 0.0f}}; }
  __device__ static Floats<2> combine(Floats<2> a, Floats<2> b) {
    const float m = fmaxf(a.f[0], b.f[0]);
    return {{m, __fadd_rn(__fmul_rn(a.f[1], rescale(a.f[0], m)),
                          __fmul_rn(b.f[1], rescale(b.f[0], m)))}};
  }
};

// MaxExpSum plus a plain sum in f[2] (cross-entropy's sum of logits for label
// smoothing).
struct MaxExpSumPlusSum {
  static constexpr int K = 3;
  __device__ static Floats<3> identity() { return {{-__int_as_float(0x7f800000), 0.0f, 0.0f}}; }
  __device__ static Floats<3> combine(Floats<3> a, Floats<3> b) {
    const Floats<2> ms = MaxExpSum::combine({{a.f[0], a.f[1]}}, {{b.f[0], b.f[1]}});
    return {{ms.f[0], ms.f[1], a.f[2] + b.f[2]}};
  }
};

// Butterfly over the LANES lanes of aligned lane groups (LANES a power of two
// <= 32): every lane of a group ends with the group's combined value.
template <class Op, int LANES>
__device__ __forceinline__ Floats<Op::K> warp_allreduce(Floats<Op::K> v) {
#pragma unroll
  for (int o = LANES / 2; o > 0; o >>= 1) {
    Floats<Op::K> u;
#pragma unroll
    for (int k = 0; k < Op::K; ++k) u.f[k] = __shfl_xor_sync(0xffffffffu, v.f[k], o);
    v = Op::combine(v, u);
  }
  return v;
}

// warp_allreduce of R independent tuples (a thread's R rows), their
// butterflies interleaved: R shuffles in flight per step instead of R chains
// of dependent ones.
template <class Op, int LANES, int R>
__device__ __forceinline__ void warp_allreduce_rows(Floats<Op::K> (&v)[R]) {
#pragma unroll
  for (int o = LANES / 2; o > 0; o >>= 1) {
    Floats<Op::K> u[R];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int k = 0; k < Op::K; ++k) u[r].f[k] = __shfl_xor_sync(0xffffffffu, v[r].f[k], o);
#pragma unroll
    for (int r = 0; r < R; ++r) v[r] = Op::combine(v[r], u[r]);
  }
}

// Sends a tuple into the same slot of CTA `rank`'s buffer, completing its bytes
// on that CTA's mbarrier (`slot` and `bar` are local shared::cta addresses).
template <int K>
__device__ __forceinline__ void send(const Floats<K>& v, uint32_t slot, uint32_t bar,
                                     uint32_t rank) {
  const uint32_t a = ptx::map_shared_rank(slot, rank), b = ptx::map_shared_rank(bar, rank);
  if constexpr (K == 1) {
    ptx::st_async(a, __float_as_uint(v.f[0]), b);
  } else if constexpr (K == 2) {
    ptx::st_async(a, __float_as_uint(v.f[0]), __float_as_uint(v.f[1]), b);
  } else {
    uint32_t w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int k = 0; k < K; ++k) w[k] = __float_as_uint(v.f[k]);
    ptx::st_async(a, w[0], w[1], w[2], w[3], b);
  }
}

}  // namespace reduce

// Reduces one value per thread over the TPR threads of each row of a CTA
// (THREADS / TPR rows, threads [r*TPR, (r+1)*TPR) hold row r) and over the
// CLUSTER CTAs that split the row. Every thread of the row gets the result.
//
// Stages: warp butterfly; then, when a row spans several warps and
// WARP_STAGE, lane 0 of each writes the warp's value into local slot
// [row][warp], and after a barrier every warp combines the row's WARPS slots;
// then, when a row spans several CTAs, lanes 0..CLUSTER-1 of the row's
// sending warps (all its warps, or only the first after the warp stage) send
// their value into slot [row][rank][warp] of CTA 0..CLUSTER-1 (st.async +
// mbarrier), and every warp combines the row's slots. A warp combines slots
// in a fixed lane assignment (lane l reads slot l % SLOTS when SLOTS <= 32),
// then finishes with a butterfly.
//
// Rows split over a cluster take the warp stage only when each CTA would
// otherwise receive 512 or more messages per row: its barrier sits on the
// critical path of every row. H100, against one message per warp:
// rmsnorm_bwd bf16 N = 262144 (clusters of 16 CTAs of 32 warps per row) 84.2
// -> 86.6% of the copy bandwidth; N = 131072 (8 x 32) 87.7 -> 82.6%,
// softmax_bwd bf16 262144 (16 x 8) 94.5 -> 90.0%.
//
// A kernel may reduce several times (a persistent loop over rows): the
// buffers and mbarrier alternate with the call index, which is safe because
// a warp writes or sends call i+1's values only after reading call i's slots
// (after the warp stage, a CTA's message for call i+1 leaves after its
// barrier of call i+1, which all its warps pass after reading call i), and
// no peer can reach call i+2 before receiving call i+1.
// Usage: init() first (all threads), ready() before the first reduce().
template <class Op, int THREADS, int TPR, int CLUSTER>
struct RowReducer {
  static constexpr int K = Op::K;
  static constexpr int ROWS = THREADS / TPR;
  static constexpr int LANES = TPR < 32 ? TPR : 32;
  static constexpr int WARPS = TPR < 32 ? 1 : TPR / 32;  // warps per row
  static constexpr bool WARP_STAGE = WARPS > 1 && (CLUSTER == 1 || CLUSTER * WARPS >= 512);
  static constexpr int SENDERS = WARP_STAGE ? 1 : WARPS;  // a row's warps that send to peers
  static constexpr int SLOTS = CLUSTER * SENDERS;         // a row's messages from the cluster
  static_assert(THREADS % 32 == 0 && THREADS % TPR == 0 && (TPR & (TPR - 1)) == 0, "row shape");
  static_assert(CLUSTER == 1 || TPR >= 32, "a row split over a cluster must span whole warps");
  static constexpr uint32_t kTxBytes = uint32_t(ROWS * SLOTS * sizeof(Floats<K>));

  Floats<K> (*warp_slots)[ROWS][WARPS];  // [2] buffers (WARP_STAGE)
  Floats<K> (*cta_slots)[ROWS][SLOTS];   // [2] buffers (CLUSTER > 1)
  uint64_t* bars;                        // [2] mbarriers (CLUSTER > 1)

  __device__ RowReducer() {
    __shared__ Floats<K> s_warp[WARP_STAGE ? 2 : 1][ROWS][WARPS];
    __shared__ Floats<K> s_cta[CLUSTER > 1 ? 2 : 1][ROWS][SLOTS];
    __shared__ uint64_t s_bars[2];
    warp_slots = s_warp;
    cta_slots = s_cta;
    bars = s_bars;
  }

  __device__ void init() {
    if constexpr (CLUSTER > 1) {
      if (threadIdx.x == 0) {
        for (int i = 0; i < 2; ++i) {
          ptx::mbarrier_init(ptx::smem_u32(&bars[i]), 1);
          ptx::mbarrier_arrive_expect_tx(ptx::smem_u32(&bars[i]), kTxBytes);
        }
        ptx::fence_mbarrier_init_cluster();
      }
      ptx::cluster_arrive_relaxed();
    }
  }

  // Every peer's mbarriers are initialised once this returns.
  __device__ void ready() {
    if constexpr (CLUSTER > 1) ptx::cluster_wait();
  }

  __device__ Floats<K> reduce(Floats<K> v, int call = 0) {
    v = reduce::warp_allreduce<Op, LANES>(v);
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % TPR) / 32;
    const int row = threadIdx.x / TPR;
    if constexpr (WARP_STAGE) {
      Floats<K>(*b)[WARPS] = warp_slots[call & 1];
      if (lane == 0) b[row][warp] = v;
      __syncthreads();
      v = combine_slots<WARPS>(b[row], lane);
    }
    if constexpr (CLUSTER > 1) {
      Floats<K>(*b)[SLOTS] = cta_slots[call & 1];
      const uint32_t rank = ptx::cluster_ctarank();
      const uint32_t bar = ptx::smem_u32(&bars[call & 1]);
      if (warp < SENDERS && lane < CLUSTER)
        reduce::send<K>(v, ptx::smem_u32(&b[row][rank * SENDERS + warp]), bar, uint32_t(lane));
      ptx::mbarrier_wait_parity(bar, uint32_t(call >> 1) & 1u);
      // Re-arm for call + 2; peers cannot send that before our call + 1 message.
      if (threadIdx.x == 0) ptx::mbarrier_arrive_expect_tx(bar, kTxBytes);
      v = combine_slots<SLOTS>(b[row], lane);
    }
    return v;
  }

  // The N slots combined, the same in every lane.
  template <int N>
  __device__ static Floats<K> combine_slots(const Floats<K> (&slot)[N], int lane) {
    if constexpr (N <= 32) {
      return reduce::warp_allreduce<Op, N>(slot[lane % N]);
    } else {
      Floats<K> v = Op::identity();
#pragma unroll
      for (int s = lane; s < N; s += 32) v = Op::combine(v, slot[s]);
      return reduce::warp_allreduce<Op, 32>(v);
    }
  }

  // R rows per thread (RowGeom::RPT): reduce() of each; more than one only
  // for rows within a warp, whose butterflies then interleave.
  template <int R>
  __device__ void reduce_rows(Floats<K> (&v)[R]) {
    if constexpr (R == 1) {
      v[0] = reduce(v[0]);
    } else {
      static_assert(WARPS == 1 && CLUSTER == 1, "several rows per thread: warp-only rows");
      reduce::warp_allreduce_rows<Op, LANES>(v);
    }
  }
};

// The same reduction over GROUP ordinary CTAs (blockIdx.x / GROUP, rank
// blockIdx.x % GROUP) that exchange their rows' partial values through L2:
// a row may span more CTAs than fit on the GPU as clusters (clusters of 16
// fit 7 times on a 132-SM H100, co-resident groups of 16 fit 8 times). Every
// CTA of a group must be resident at once (a cooperative launch), since each
// waits for the others.
//
// Per call, each row's value goes to its slot [call & 1][row][rank]; thread 0
// then counts the CTA in (release) and waits until the group's count reaches
// GROUP x (call + 1); each row then combines its GROUP slots in rank order, so
// every CTA of the group gets the same value. The slot parity is enough: a CTA
// writes call i + 2's slots only after every peer has counted itself into
// call i + 1, which each does after reading call i's slots.
//
// slots: the group's [2][ROWS][GROUP] tuples; counter: the group's two words
// (arrivals, finished CTAs). All zero on entry; finish() (all threads, after
// the last reduce()) leaves them zero. Thread 0 polls with relaxed loads and
// acquires once: an acquire load also invalidates L1 (CCTL.IVALL), where the
// kernels keep small operands such as RMSNorm's weight. Measured and not
// kept: slot words carrying their own flag ((call + 1) << 32 | value, no
// counter, 16 lanes polling with acquire loads), 10-25% slower.
template <class Op, int THREADS, int TPR, int GROUP>
struct L2GroupReducer {
  static constexpr int K = Op::K;
  static constexpr int ROWS = THREADS / TPR;
  static constexpr int LANES = TPR < 32 ? TPR : 32;

  RowReducer<Op, THREADS, TPR, 1> cta;
  Floats<K>* slots;
  unsigned* counter;

  __device__ L2GroupReducer(Floats<K>* group_slots, unsigned* group_counter)
      : slots(group_slots), counter(group_counter) {}
  __device__ void init() { cta.init(); }
  __device__ void ready() {}

  __device__ Floats<K> reduce(Floats<K> v, int call = 0) {
    v = cta.reduce(v, call);
    const int row = threadIdx.x / TPR, tr = threadIdx.x % TPR;
    Floats<K>* const s = slots + ((call & 1) * ROWS + row) * GROUP;
    if (tr == 0) s[blockIdx.x % GROUP] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
      // The barrier orders the row leaders' slot writes before this release.
      ptx::red_release_gpu_add(counter, 1u);
      const unsigned all = unsigned(GROUP) * unsigned(call + 1);
      while (ptx::ld_relaxed_gpu(counter) < all) {
      }
      (void)ptx::ld_acquire_gpu(counter);
    }
    __syncthreads();
    // L2 reads (.cg): this SM's L1 may still hold the slots of call - 2.
    v = Op::identity();
#pragma unroll
    for (int r = tr % LANES; r < GROUP; r += LANES) {
      Floats<K> u;
#pragma unroll
      for (int k = 0; k < K; ++k) u.f[k] = __ldcg(&s[r].f[k]);
      v = Op::combine(v, u);
    }
    return reduce::warp_allreduce<Op, LANES>(v);
  }

  __device__ void finish() {
    __syncthreads();  // this CTA's threads have all read their last slots
    if (threadIdx.x == 0 && atomicAdd(counter + 1, 1u) == unsigned(GROUP) - 1) {
      // So has every CTA of the group.
      for (int i = 0; i < 2 * ROWS * GROUP; ++i) slots[i] = Floats<K>{};
      counter[0] = 0u;
      counter[1] = 0u;
    }
  }
};

}  // namespace kestrel
