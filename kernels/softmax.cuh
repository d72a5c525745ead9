// Softmax over rows, forward and backward.
//
// Forward: the row is read once into registers; each thread forms its online
// (max, sum of e^(x - max)) pair, one MaxExpSum reduction merges the pairs
// over the row, and y = e^(x - max) / sum is written from the registers (the
// exponentials are recomputed rather than stored: SFU throughput is far above
// what DRAM bandwidth needs, registers are not). Short rows within a warp take
// two butterflies instead (the max, then the sum of exponentials evaluated
// once and held): see softmax_fwd_rows_held. Elements past the row end load as
// -inf, which both reductions ignore without masks.
// Backward: dx = y * (dy - sum_j dy_j y_j). Two inputs of a long row do not
// fit in registers, so both go to shared memory by cp.async (every load of
// the slice in flight at once, no registers held; the longest rows hold y in
// registers instead) and two passes compute the Sum reduction and dx. At one
// vector a thread (rows of up to 1024 vectors) nothing is staged: the second
// pass reads dy and y again, from L2 (softmax_bwd_l2_kernel).
#pragma once
#include "common/reduce.cuh"
#include "common/row_io.cuh"
#include "common/row_reread.cuh"

namespace kestrel {

struct SoftmaxFwdParams {
  const void* x;
  long long x_row;
  void* y;
  long long y_row;
  long long m;
  int n;
};

// The largest of a thread's values of one row (-inf if it has none).
template <typename T, int VPT>
__device__ __forceinline__ float slice_max(const uint4 (&v)[VPT]) {
  constexpr int VEC = 16 / sizeof(T);
  float m = -__int_as_float(0x7f800000);
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    float a[VEC];
    unpack<T>(v[i], a);
#pragma unroll
    for (int e = 0; e < VEC; ++e) m = fmaxf(m, a[e]);
  }
  return m;
}

// Rows held by the lanes of one warp, at most 32 values a thread: the row's
// max by one butterfly, each exponential evaluated once against it and kept
// in registers, their sum by a second butterfly, and y from the held values.
// Here two plain butterflies cost less than one of the online pairs (two
// rescaling exponentials a step), and the output pass has no exponentials:
// fp32 N = 1024 444 -> 283 instructions a thread. H100, 32768 rows, session
// 24, us, two rounds: fp32 N = 1024 87.5 / 87.5 -> 86.6 / 86.6, fp32 256
// 20.8 / 20.9 -> 20.4 / 20.5, bf16 256 12.2 / 12.2 -> 12.2 / 12.3.
template <class G, int VEC>
constexpr bool kSoftmaxFwdHeld = G::CLUSTER == 1 && G::TPR <= 32 && G::RPT * G::VPT * VEC <= 32;

template <typename T, class G, int ACCESS>
__device__ __forceinline__ void softmax_fwd_rows_held(const SoftmaxFwdParams& p,
                                                      const RowSlice<T, G>& s, long long row0,
                                                      uint4 (&v)[G::RPT][G::VPT]) {
  constexpr int VEC = 16 / sizeof(T), RPT = G::RPT, VPT = G::VPT;
  auto row_of = [&](int r) { return row0 + r * G::ROWS; };
  auto row_n = [&](int r) { return ACCESS == kRowWhole || row_of(r) < p.m ? p.n : 0; };
  Floats<1> mx[RPT], sum[RPT];
#pragma unroll
  for (int r = 0; r < RPT; ++r) mx[r].f[0] = slice_max<T>(v[r]);
  reduce::warp_allreduce_rows<reduce::Max, G::TPR>(mx);
  // A row of -inf has max -inf: x - max is NaN, so y is NaN, as in PyTorch.
  float ex[RPT][VPT][VEC];
#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    sum[r].f[0] = 0.0f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      float a[VEC];
      unpack<T>(v[r][i], a);
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        ex[r][i][e] = ptx::ex2_approx((a[e] - mx[r].f[0]) * reduce::kLog2e);
        sum[r].f[0] += ex[r][i][e];
      }
    }
  }
  reduce::warp_allreduce_rows<reduce::Sum, G::TPR>(sum);
#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    const float inv = 1.0f / sum[r].f[0];
    store_row(RowWindow<T, ACCESS>(static_cast<T*>(p.y) + row_of(r) * p.y_row, row_n(r)), s,
              [&](int i) {
                float a[VEC];
#pragma unroll
                for (int e = 0; e < VEC; ++e) a[e] = ex[r][i][e] * inv;
                return pack<T>(a);
              });
  }
}

template <typename T, class G, int ACCESS>
__device__ __forceinline__ void softmax_fwd_rows(const SoftmaxFwdParams& p, long long first_row) {
  constexpr int VEC = 16 / sizeof(T), RPT = G::RPT, VPT = G::VPT;
  const float kNegInf = -__int_as_float(0x7f800000);
  RowReducer<reduce::MaxExpSum, G::THREADS, G::TPR, G::CLUSTER> red;
  red.init();
  const RowSlice<T, G> s(cta_rank<G::CLUSTER>());
  const long long row0 = first_row + s.row_local;
  auto row_of = [&](int r) { return row0 + r * G::ROWS; };
  auto row_n = [&](int r) { return ACCESS == kRowWhole || row_of(r) < p.m ? p.n : 0; };

  uint4 v[RPT][VPT];
#pragma unroll
  for (int r = 0; r < RPT; ++r)
    load_row<kRowKept>(
        v[r], RowWindow<const T, ACCESS>(static_cast<const T*>(p.x) + row_of(r) * p.x_row, row_n(r)),
        s, Elem<T>::kNegInf);
  if constexpr (kSoftmaxFwdHeld<G, VEC>) {
    softmax_fwd_rows_held<T, G, ACCESS>(p, s, row0, v);
    return;
  }
  red.ready();

  Floats<2> st[RPT];
#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    st[r] = reduce::MaxExpSum::identity();
    st[r].f[0] = slice_max<T>(v[r]);
    opaque(v[r]);
    if (st[r].f[0] != kNegInf) {  // else nothing to sum (and no -inf - -inf)
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        float a[VEC];
        unpack<T>(v[r][i], a);
#pragma unroll
        for (int e = 0; e < VEC; ++e)
          st[r].f[1] += ptx::ex2_approx((a[e] - st[r].f[0]) * reduce::kLog2e);
      }
    }
  }
  red.reduce_rows(st);

#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    // A row of -inf has max -inf: x - max is NaN, so y is NaN, as in PyTorch.
    const float mx = st[r].f[0], inv = 1.0f / st[r].f[1];
    opaque(v[r]);
    store_row(RowWindow<T, ACCESS>(static_cast<T*>(p.y) + row_of(r) * p.y_row, row_n(r)), s,
              [&](int i) {
                float a[VEC];
                unpack<T>(v[r][i], a);
#pragma unroll
                for (int e = 0; e < VEC; ++e)
                  a[e] = ptx::ex2_approx((a[e] - mx) * reduce::kLog2e) * inv;
                return pack<T>(a);
              });
  }
}

template <typename T, int THREADS, int TPR, int VPT, int CLUSTER, int ACCESS, int RPT>
__global__ void __launch_bounds__(THREADS)
    softmax_fwd_kernel(const __grid_constant__ SoftmaxFwdParams p) {
  using G = RowGeom<THREADS, TPR, VPT, CLUSTER, RPT>;
  for_cta_rows<T, G, ACCESS>(p.m, p.n, [&](long long first_row, auto access) {
    softmax_fwd_rows<T, G, decltype(access)::value>(p, first_row);
  });
}

struct SoftmaxBwdParams {
  const void* dy;
  long long dy_row;
  const void* y;
  long long y_row;
  void* dx;
  long long dx_row;
  long long m;
  int n;
};

// Dynamic shared memory: dy, then (unless Y_REGS) y, each [ROWS][VPT][TPR] x
// 16 bytes. Y_REGS holds y in registers instead: for the longest rows, where
// staging both would leave room for one CTA per SM, whose loads could then
// not overlap another's reduction (the host decides: softmax_bwd_y_in_registers).
template <typename T, int THREADS, int TPR, int VPT, int CLUSTER, int ACCESS, bool Y_REGS>
__global__ void __launch_bounds__(THREADS)
    softmax_bwd_kernel(const __grid_constant__ SoftmaxBwdParams p) {
  using G = RowGeom<THREADS, TPR, VPT, CLUSTER>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr int UNROLL = Y_REGS ? VPT : 1;  // register arrays need constant indices
  extern __shared__ uint4 smem[];
  RowReducer<reduce::Sum, THREADS, TPR, CLUSTER> red;
  red.init();
  const RowSlice<T, G> s(cta_rank<CLUSTER>());
  const long long row = (long long)(blockIdx.x / CLUSTER) * G::ROWS + s.row_local;
  const int n = row < p.m ? p.n : 0;

  const StagedRow<G> dys(smem, s.row_local, s.tr), ys(smem + THREADS * VPT, s.row_local, s.tr);
  const RowWindow<const T, ACCESS> dyrow(static_cast<const T*>(p.dy) + row * p.dy_row, n),
      yrow(static_cast<const T*>(p.y) + row * p.y_row, n);
  // Every cp.async first: a shifted row's partial vectors, loaded through
  // registers, then wait under them, not before them. H100, session 24, us:
  // shifted fp32 32768 x 4097 in CTAs of 1024 653 -> 570, bf16 16384 x 50257
  // 1666 -> 1662 (default configurations), aligned rows unchanged.
  // Both rows with L2 evict_last, as the forwards' (common/row_io.cuh,
  // kRowKept): bf16 32768 x 16384 1047 -> 1039 us, x 32768 2096 -> 2078
  // (H100, session 25).
  stage_row_async<kRowKept>(dys, dyrow, s);
  if constexpr (!Y_REGS) stage_row_async<kRowKept>(ys, yrow, s);
  stage_row_rest<kRowKept>(dys, dyrow, s);
  uint4 yv[Y_REGS ? VPT : 1];
  if constexpr (Y_REGS) {
    ptx::cp_async_commit();
    load_row<kRowKept>(yv, yrow, s);
  } else {
    stage_row_rest<kRowKept>(ys, yrow, s);
    ptx::cp_async_commit();
  }
  ptx::cp_async_wait_all();
  red.ready();
  auto y = [&](int i) {
    if constexpr (Y_REGS) {
      return yv[i];
    } else {
      return ys.get(i);
    }
  };

  float dot = 0.0f;
#pragma unroll UNROLL
  for (int i = 0; i < VPT; ++i) {
    float g[VEC], a[VEC];
    unpack<T>(dys.get(i), g);
    unpack<T>(y(i), a);
#pragma unroll
    for (int e = 0; e < VEC; ++e) dot = fmaf(g[e], a[e], dot);
  }
  if constexpr (Y_REGS) opaque(yv);
  dot = red.reduce({{dot}}).f[0];

  const RowWindow<T, ACCESS> dx(static_cast<T*>(p.dx) + row * p.dx_row, n);
#pragma unroll UNROLL
  for (int i = 0; i < VPT; ++i) {
    float g[VEC], a[VEC];
    unpack<T>(dys.get(i), g);
    unpack<T>(y(i), a);
#pragma unroll
    for (int e = 0; e < VEC; ++e) g[e] = a[e] * (g[e] - dot);
    store_vec(dx, s.col(i), pack<T>(g));
  }
}

// One vector a thread: dy and y read twice, from L2 the second time
// (common/row_reread.cuh).
template <typename T, int THREADS, int TPR, int VPT, int CLUSTER, int ACCESS>
__global__ void __launch_bounds__(THREADS)
    softmax_bwd_l2_kernel(const __grid_constant__ SoftmaxBwdParams p) {
  dot_then_map_rereading_l2<T, RowGeom<THREADS, TPR, VPT, CLUSTER>, ACCESS>(
      p.dy, p.dy_row, p.y, p.y_row, p.dx, p.dx_row, p.m, p.n, [](long long, int) {
        return [](float dot) { return [dot](float dy, float y) { return y * (dy - dot); }; };
      });
}

}  // namespace kestrel
