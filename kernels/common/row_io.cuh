// How the row-wise kernels hold a row on chip, and how they move it.
//
// Geometry: a CTA of THREADS threads works on THREADS / TPR rows at once (TPR
// threads per row); a row may also be split over CLUSTER CTAs. Each thread
// holds VPT "vectors" of 16 bytes (VEC = 16 / sizeof(T) elements) of its row.
// Vector i of thread tr in CTA rank r starts at column
//     ((r * VPT + i) * TPR + tr) * VEC,
// so each CTA owns one contiguous slice of the row and every load instruction
// of a warp covers contiguous bytes (128-bit coalesced accesses).
//
// Access (the kernels' ACCESS argument, RowAccess): a vector entirely inside
// the row moves with one 16-byte access when rows start 16-byte aligned
// (kRowVector). A row that starts misaligned is addressed from the 16-byte
// boundary before it (kRowShifted): the columns above are then counted from
// that boundary, and only the row's first and last vectors are partial. This
// needs every tensor of the op to be misaligned by the same amount in each
// row (the host checks); otherwise every vector moves element by element
// (kRowElementwise). Partial vectors move element by element; elements
// outside the row read as a neutral fill value (0, or -inf for max/exp
// reductions, so the reductions need no masks) and are never stored. Passing
// n = 0 turns a whole row into fill/no-ops, which is how threads of rows past
// M stay in the reductions without touching memory.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cuda/std/type_traits>

#include "common/ptx.cuh"
#include "common/row_access.cuh"

namespace kestrel {

// One row of one tensor: vector column c starts at base + c, and the row's
// elements are columns [lo, hi). lo is the row's misalignment in elements
// under kRowShifted, else 0, so element j of the row is column j + lo.
template <typename T, int ACCESS>
struct RowWindow {
  static constexpr int VEC = 16 / int(sizeof(T));
  T* base;
  int lo, hi;
  __device__ RowWindow(T* row, int n)
      : lo(ACCESS == kRowShifted ? int(reinterpret_cast<unsigned long long>(row) % 16 / sizeof(T))
                                 : 0) {
    base = row - lo;
    hi = n + lo;
  }
  __device__ bool has(int c) const {  // one unsigned compare covers both ends
    return ACCESS == kRowWhole ||
           (ACCESS == kRowShifted ? unsigned(c - lo) < unsigned(hi - lo) : c < hi);
  }
  // Whether vector column c moves as one 16-byte access.
  __device__ bool whole(int c) const {
    return ACCESS == kRowWhole ||
           (ACCESS != kRowElementwise && (ACCESS != kRowShifted || c >= lo) && c + VEC <= hi);
  }
};

// RPT > 1: each thread holds RPT rows, ROWS apart, all loaded before the
// first reduction, which then reduces them together. Short forward rows: so
// that a row of a few vectors per thread still keeps 8 of them in flight.
// rmsnorm_bwd: so that a long row's cluster exchange is paid once per RPT
// rows.
template <int THREADS_, int TPR_, int VPT_, int CLUSTER_, int RPT_ = 1>
struct RowGeom {
  static constexpr int THREADS = THREADS_, TPR = TPR_, VPT = VPT_, CLUSTER = CLUSTER_, RPT = RPT_;
  static constexpr int ROWS = THREADS / TPR;  // rows per CTA and pass
};

// This thread's place in the geometry for element type T.
template <typename T, class G>
struct RowSlice {
  static constexpr int VEC = 16 / int(sizeof(T));
  int tr, row_local, rank;
  __device__ explicit RowSlice(int cta_rank)
      : tr(int(threadIdx.x) % G::TPR), row_local(int(threadIdx.x) / G::TPR), rank(cta_rank) {}
  static constexpr int STEP = G::TPR * VEC;  // col(i + 1) - col(i)
  __device__ int col(int i) const { return ((rank * G::VPT + i) * G::TPR + tr) * VEC; }
};

// ---- Element <-> fp32, on 32-bit words of packed elements; kNegInf: the
// raw bits of -infinity (the fill for max / exp-sum reductions) ----
template <typename X>
struct Elem;
template <>
struct Elem<float> {
  static constexpr int PER_WORD = 1;
  static constexpr uint32_t kNegInf = 0xff800000u;
  __device__ static void to_f32(uint32_t w, float* f) { f[0] = __uint_as_float(w); }
  __device__ static uint32_t from_f32(const float* f) { return __float_as_uint(f[0]); }
};
template <>
struct Elem<__nv_bfloat16> {
  static constexpr int PER_WORD = 2;
  static constexpr uint32_t kNegInf = 0xff80u;
  __device__ static void to_f32(uint32_t w, float* f) {
    f[0] = __uint_as_float(w << 16);
    f[1] = __uint_as_float(w & 0xffff0000u);
  }
  __device__ static uint32_t from_f32(const float* f) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(f[0], f[1]);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};
template <>
struct Elem<__half> {
  static constexpr int PER_WORD = 2;
  static constexpr uint32_t kNegInf = 0xfc00u;
  __device__ static void to_f32(uint32_t w, float* f) {
    const float2 v = __half22float2(*reinterpret_cast<const __half2*>(&w));
    f[0] = v.x;
    f[1] = v.y;
  }
  __device__ static uint32_t from_f32(const float* f) {
    const __half2 h = __floats2half2_rn(f[0], f[1]);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

template <typename X, int WORDS>
__device__ __forceinline__ void unpack_words(const uint32_t (&w)[WORDS],
                                             float (&f)[WORDS * Elem<X>::PER_WORD]) {
#pragma unroll
  for (int i = 0; i < WORDS; ++i) Elem<X>::to_f32(w[i], &f[i * Elem<X>::PER_WORD]);
}

// 16 bytes of T as VEC floats, and back (round to nearest even).
template <typename T>
__device__ __forceinline__ void unpack(const uint4& v, float (&f)[16 / sizeof(T)]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  unpack_words<T, 4>(w, f);
}
template <typename T>
__device__ __forceinline__ uint4 pack(const float (&f)[16 / sizeof(T)]) {
  constexpr int P = Elem<T>::PER_WORD;
  return make_uint4(Elem<T>::from_f32(&f[0]), Elem<T>::from_f32(&f[P]),
                    Elem<T>::from_f32(&f[2 * P]), Elem<T>::from_f32(&f[3 * P]));
}

template <typename X>
__device__ __forceinline__ uint32_t load_bits(const X* p) {
  if constexpr (sizeof(X) == 2) {
    return __ldg(reinterpret_cast<const unsigned short*>(p));
  } else {
    return __ldg(reinterpret_cast<const unsigned int*>(p));
  }
}
template <typename X>
__device__ __forceinline__ float load_f32(const X* p) {
  float f[Elem<X>::PER_WORD];
  Elem<X>::to_f32(load_bits(p), f);  // a 2-byte element lands in the low half
  return f[0];
}

// Element e (0 <= e < 16 / sizeof(T)) of a packed vector, as raw bits.
template <typename T>
__device__ __forceinline__ uint32_t lane_bits(const uint4& v, int e) {
  constexpr int P = Elem<T>::PER_WORD;
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  return P == 1 ? w[e] : (w[e / 2] >> (16 * (e % 2))) & 0xffffu;
}

// How a row's 16-byte loads treat L1. kRowCached (ld.global): the kernels
// that write rows back ran 1-3% faster than with kRowStreamed, by 2.6% at
// fp32 N = 32768. kRowStreamed (ld.global.nc.L1::no_allocate): the
// cross-entropy forward, which only reads rows, ran 2% faster with it (bf16
// N = 4096, 91 vs 89% of the copy bandwidth; H100, session 7).
// kRowL2Hint (ld.global.L2::cache_hint under the caller's policy): rows read
// twice, the second time from L2 (softmax_bwd at one vector a thread).
// kRowKept (ld.global.L2::cache_hint, evict_last, as torch.compile's first
// pass over a row): the forwards' rows, softmax_bwd's and cross_entropy_bwd's.
// Though read once, the forwards ran 0.7-1.1% faster with it at N >= 4096,
// e.g. rmsnorm_fwd fp32 32768 x 32768 2842 -> 2812 us, bf16 x 16384 704 -> 699
// (evict_first: 1-2% slower; y stored evict_last: no change; H100, session
// 25); rmsnorm_bwd's staged rows lost 1% with it (fp32 x 4096 570 -> 576) and
// keep the default. Dead lines are left in L2 at that priority after the
// call, as torch.compile's are.
enum RowLoad : int { kRowCached, kRowStreamed, kRowL2Hint, kRowKept };

template <int LOAD>
__device__ __forceinline__ uint4 ld_row_v4(const void* p, uint64_t policy) {
  if constexpr (LOAD == kRowL2Hint) return ptx::ld_hint_v4(p, policy);
  if constexpr (LOAD == kRowKept) return ptx::ld_hint_v4(p, ptx::l2_evict_last());
  return LOAD == kRowStreamed ? ptx::ld_stream_v4(p) : ptx::ld_global_v4(p);
}

// The VEC elements of T at vector column c; elements outside the row read
// as `fill` (raw bits of T). `policy`: kRowL2Hint's L2 cache policy.
template <typename T, int ACCESS, int LOAD = kRowCached>
__device__ __forceinline__ uint4 load_vec(const RowWindow<const T, ACCESS>& w, int c,
                                          uint32_t fill = 0, uint64_t policy = 0) {
  constexpr int VEC = 16 / sizeof(T);
  if (w.whole(c)) return ld_row_v4<LOAD>(w.base + c, policy);
  uint32_t q[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    const uint32_t bits = w.has(c + e) ? load_bits(w.base + c + e) : fill;
    if constexpr (sizeof(T) == 2) {
      q[e / 2] |= bits << (16 * (e % 2));
    } else {
      q[e] = bits;
    }
  }
  return make_uint4(q[0], q[1], q[2], q[3]);
}

// How a row's 16-byte stores treat the caches. kRowStoreStreamed
// (st.global.cs, evict first): rmsnorm_bwd's dx, bf16 8192 x 262144 86.2 ->
// 88.5% of the copy bandwidth; the forward kernels' outputs ran 0.1-0.5%
// slower with it (H100, session 9).
enum RowStore : int { kRowStoreDefault, kRowStoreStreamed };

// A whole vector's store. A plain store lets the compiler fold the column
// into the address; through a shifted base, whose alignment it cannot see,
// it would split the store into four, hence inline PTX there.
template <int ACCESS, int STORE = kRowStoreDefault, typename T>
__device__ __forceinline__ void store16(T* at, const uint4& v) {
  if constexpr (STORE == kRowStoreStreamed) {
    ptx::st_stream_v4(at, v);
  } else if constexpr (ACCESS == kRowShifted) {
    ptx::st_global_v4(at, v);
  } else {
    *reinterpret_cast<uint4*>(at) = v;
  }
}

template <int STORE = kRowStoreDefault, typename T, int ACCESS>
__device__ __forceinline__ void store_vec(const RowWindow<T, ACCESS>& w, int c, const uint4& v) {
  constexpr int VEC = 16 / sizeof(T);
  if (w.whole(c)) {
    store16<ACCESS, STORE>(w.base + c, v);
    return;
  }
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    if (w.has(c + e)) {
      if constexpr (sizeof(T) == 2) {
        reinterpret_cast<unsigned short*>(w.base)[c + e] = (unsigned short)lane_bits<T>(v, e);
      } else {
        reinterpret_cast<unsigned int*>(w.base)[c + e] = lane_bits<T>(v, e);
      }
    }
  }
}

// Whether every vector of this thread lies inside the row: then a whole row
// moves with unconditional 16-byte accesses (the common case; per-vector
// checks would cost registers and branches for nothing).
template <typename T, class G, typename WT, int ACCESS>
__device__ __forceinline__ bool slice_full(const RowSlice<T, G>& s,
                                           const RowWindow<WT, ACCESS>& w) {
  return w.whole(s.col(0)) && w.whole(s.col(G::VPT - 1));
}

// This thread's vectors of a row into registers; elements outside the row
// read as `fill` (raw bits of T).
template <int LOAD = kRowCached, typename T, class G, int ACCESS>
__device__ __forceinline__ void load_row(uint4 (&v)[G::VPT], const RowWindow<const T, ACCESS>& w,
                                         const RowSlice<T, G>& s, uint32_t fill = 0) {
  if (slice_full(s, w)) {
    const T* at = w.base + s.col(0);  // then constant offsets
#pragma unroll
    for (int i = 0; i < G::VPT; ++i) v[i] = ld_row_v4<LOAD>(at + i * s.STEP, 0);
  } else {
#pragma unroll
    for (int i = 0; i < G::VPT; ++i) v[i] = load_vec<T, ACCESS, LOAD>(w, s.col(i), fill);
  }
}

// Stores vector i of this thread, values from f(i) (an fp32 array's pack).
template <typename T, class G, int ACCESS, class F>
__device__ __forceinline__ void store_row(const RowWindow<T, ACCESS>& w, const RowSlice<T, G>& s,
                                          F&& f) {
  if (slice_full(s, w)) {
    T* at = w.base + s.col(0);
#pragma unroll
    for (int i = 0; i < G::VPT; ++i) store16<ACCESS>(at + i * s.STEP, f(i));
  } else {
#pragma unroll
    for (int i = 0; i < G::VPT; ++i) store_vec(w, s.col(i), f(i));
  }
}

// A thread's vectors of one row staged in shared memory, laid out
// [ROWS][VPT][TPR] x 16 bytes from `base` so that a warp's accesses to vector
// i are contiguous (conflict-free).
template <class G>
struct StagedRow {
  uint4* p;  // vector i at p[i * TPR]
  __device__ StagedRow(uint4* base, int row_local, int tr)
      : p(base + row_local * G::VPT * G::TPR + tr) {}
  // Volatile: a reload is cheaper than the registers a kept copy would hold.
  __device__ uint4 get(int i) const { return ptx::ld_shared_v4(p + i * G::TPR); }
  __device__ void put(int i, uint4 v) const { ptx::st_shared_v4(p + i * G::TPR, v); }
};

// A cp.async of 16 bytes (of which the first `bytes`, the rest zero-filled)
// under LOAD's L2 policy: kRowCached (the default) or kRowKept (evict_last).
template <int LOAD>
__device__ __forceinline__ void cp_row_16(uint32_t dst, const void* src) {
  static_assert(LOAD == kRowCached || LOAD == kRowKept, "cp.async rows: default or kept in L2");
  if constexpr (LOAD == kRowKept) {
    ptx::cp_async_16_hint(dst, src, ptx::l2_evict_last());
  } else {
    ptx::cp_async_16(dst, src);
  }
}
template <int LOAD>
__device__ __forceinline__ void cp_row_16_zfill(uint32_t dst, const void* src, uint32_t bytes) {
  static_assert(LOAD == kRowCached || LOAD == kRowKept, "cp.async rows: default or kept in L2");
  if constexpr (LOAD == kRowKept) {
    ptx::cp_async_16_zfill_hint(dst, src, bytes, ptx::l2_evict_last());
  } else {
    ptx::cp_async_16_zfill(dst, src, bytes);
  }
}

// This thread's vectors of a row into shared memory, in two steps, so that
// a kernel staging several inputs issues every cp.async before any load it
// must wait for: stage_row_async copies the vectors that cp.async can move
// (no register staging, so all are in flight at once; complete with
// cp_async_wait_all), stage_row_rest the others through registers. A 16-byte
// aligned row's partial last vector comes by a zero-filling cp.async too.
// Under kRowShifted the partial first and last vectors go through registers:
// compute-sanitizer counts all 16 bytes of a zero-filling cp.async as read,
// past the tensor's end for a shifted last row. Vectors past the end are
// zeroed. LOAD: kRowCached or kRowKept, for the cp.async and the loads alike.
template <int LOAD = kRowCached, typename T, class G, int ACCESS>
__device__ __forceinline__ void stage_row_async(const StagedRow<G>& dst,
                                                const RowWindow<const T, ACCESS>& w,
                                                const RowSlice<T, G>& s) {
  if (slice_full(s, w)) {
    const T* at = w.base + s.col(0);
#pragma unroll
    for (int i = 0; i < G::VPT; ++i)
      cp_row_16<LOAD>(ptx::smem_u32(dst.p + i * G::TPR), at + i * s.STEP);
    return;
  }
#pragma unroll
  for (int i = 0; i < G::VPT; ++i) {
    const int c = s.col(i);
    if (ACCESS == kRowVector && c < w.hi) {
      cp_row_16_zfill<LOAD>(ptx::smem_u32(dst.p + i * G::TPR), w.base + c,
                            uint32_t(min(w.hi - c, RowSlice<T, G>::VEC)) * uint32_t(sizeof(T)));
    } else if (ACCESS != kRowVector && w.whole(c)) {
      cp_row_16<LOAD>(ptx::smem_u32(dst.p + i * G::TPR), w.base + c);
    }
  }
}

template <int LOAD = kRowCached, typename T, class G, int ACCESS>
__device__ __forceinline__ void stage_row_rest(const StagedRow<G>& dst,
                                               const RowWindow<const T, ACCESS>& w,
                                               const RowSlice<T, G>& s) {
  if (slice_full(s, w)) return;
#pragma unroll
  for (int i = 0; i < G::VPT; ++i) {
    const int c = s.col(i);
    if (ACCESS == kRowVector) {
      if (c >= w.hi) dst.put(i, make_uint4(0u, 0u, 0u, 0u));
    } else if (!w.whole(c)) {
      dst.put(i, load_vec<T, ACCESS, LOAD>(w, c));
    }
  }
}

template <typename T, class G, int ACCESS>
__device__ __forceinline__ void stage_row(const StagedRow<G>& dst,
                                          const RowWindow<const T, ACCESS>& w,
                                          const RowSlice<T, G>& s) {
  stage_row_async(dst, w, s);
  stage_row_rest(dst, w, s);
}

// COUNT elements of X at p[c..c+COUNT) as floats (zero past n), through the
// L1-cached path: for small operands every row re-reads (RMSNorm weights).
// kRowShifted: the row's columns start lo elements before p, so column c + e
// is p[c + e - lo], read element by element (zero outside [0, n)).
template <typename X, int COUNT, int ACCESS>
__device__ __forceinline__ void load_floats_cached(const X* p, int c, int n, float (&f)[COUNT],
                                                   int lo = 0) {
  constexpr int BYTES = COUNT * int(sizeof(X));
  constexpr bool VECTORS = BYTES % 8 == 0 && (ACCESS == kRowVector || ACCESS == kRowWhole);
  static_assert(VECTORS || ACCESS != kRowWhole, "whole rows move in 8- and 16-byte accesses");
  if constexpr (VECTORS) {
    if (ACCESS == kRowWhole || c + COUNT <= n) {
      uint32_t w[BYTES / 4];
#pragma unroll
      for (int q = 0; q < BYTES / 16; ++q) {
        const uint4 v = ptx::ld_nc_v4(reinterpret_cast<const uint4*>(p + c) + q);
        w[4 * q] = v.x, w[4 * q + 1] = v.y, w[4 * q + 2] = v.z, w[4 * q + 3] = v.w;
      }
      if constexpr (BYTES % 16 == 8) {
        const uint2 v = ptx::ld_nc_v2(reinterpret_cast<const uint2*>(p + c) + BYTES / 16 * 2);
        w[BYTES / 4 - 2] = v.x, w[BYTES / 4 - 1] = v.y;
      }
      unpack_words<X, BYTES / 4>(w, f);
      return;
    }
  }
  if constexpr (ACCESS == kRowShifted) {
#pragma unroll
    for (int e = 0; e < COUNT; ++e) {
      const int j = c + e - lo;
      f[e] = unsigned(j) < unsigned(n) ? load_f32(p + j) : 0.0f;
    }
  } else if constexpr (ACCESS != kRowWhole) {
#pragma unroll
    for (int e = 0; e < COUNT; ++e) f[e] = c + e < n ? load_f32(p + c + e) : 0.0f;
  }
}

// Register pressure: a row is held packed (a bf16 vector in 4 registers, not
// 8). Between passes over it, opaque() makes the compiler re-derive the fp32
// values from the packed registers (a shift or convert per element) instead of
// keeping the previous pass's 2x larger fp32 copy alive.
template <int VPT>
__device__ __forceinline__ void opaque(uint4 (&v)[VPT]) {
#pragma unroll
  for (int i = 0; i < VPT; ++i)
    asm volatile("" : "+r"(v[i].x), "+r"(v[i].y), "+r"(v[i].z), "+r"(v[i].w));
}

// The CTA's rank in its cluster (CLUSTER > 1), else 0.
template <int CLUSTER>
__device__ __forceinline__ int cta_rank() {
  if constexpr (CLUSTER > 1) {
    return int(ptx::cluster_ctarank());
  } else {
    return 0;
  }
}

// Whether every vector of every row of this CTA (rows [first_row, first_row +
// ROWS * RPT), columns of cluster rank `rank`) lies inside its row, 16-byte
// aligned: the same answer for the whole CTA, so a kernel may branch on it to
// a kRowWhole copy of its body, where the loads go out without per-vector
// checks, fallback addresses or predicates (the compiler hoists the general
// body's ahead of the loads). H100, 32768 rows, with the forward kernels'
// interleaved row reductions: rmsnorm_fwd bf16 N = 256 13.84 -> 13.49 us,
// N = 1024 46.0 -> 45.1; softmax_fwd bf16 N = 256 13.22 -> 12.91.
template <typename T, class G>
__device__ __forceinline__ bool cta_rows_whole(long long first_row, long long m, int n, int rank) {
  constexpr int VEC = 16 / int(sizeof(T));
  return first_row + G::ROWS * G::RPT <= m && (rank + 1) * G::VPT * G::TPR * VEC <= n;
}

// Runs body(first_row, access): this CTA's first row, and kRowWhole where
// cta_rows_whole holds for a kRowVector kernel, else ACCESS (an
// integral_constant, so that the body is instantiated for each).
template <typename T, class G, int ACCESS, class Body>
__device__ __forceinline__ void for_cta_rows(long long m, int n, Body&& body) {
  const long long first_row = (long long)(blockIdx.x / G::CLUSTER) * G::ROWS * G::RPT;
  if constexpr (ACCESS == kRowVector) {
    if (cta_rows_whole<T, G>(first_row, m, n, cta_rank<G::CLUSTER>())) {
      body(first_row, cuda::std::integral_constant<int, kRowWhole>{});
      return;
    }
  }
  body(first_row, cuda::std::integral_constant<int, ACCESS>{});
}

}  // namespace kestrel
