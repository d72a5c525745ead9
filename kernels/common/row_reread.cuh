// The backward passes of softmax and of RMSNorm without weight share one
// shape: a row's sum of u_j v_j over two inputs, then out_j = f(u_j, v_j)
// for an f that depends on the sum. At one vector a thread nothing is held
// on chip between the two: the first pass loads u and v with L2 evict_last,
// the second loads them again (evict_first: their last use) for out. Held
// in registers or shared memory across the reduction instead, they would cap
// the CTAs per SM, which keep the loads in flight here (torch.compile's
// looped reductions do the same). H100, 32768 rows, session 21, softmax_bwd
// at one vector a thread, staged -> two passes, us: bf16 N = 1024 62.7 ->
// 62.3, 4096 257.9 -> 255.7, 8192 517.3 -> 512.8; fp32 1024 127.7 -> 126.0,
// 4096 517.0 -> 512.4. At two vectors a thread and more staging wins (bf16
// 16384: 1047 vs 1068).
#pragma once
#include "common/reduce.cuh"
#include "common/row_io.cuh"

namespace kestrel {

// The CTA's rows of u and v (row strides in elements) and of out, rows past
// M with n = 0. begin(row, n) runs first: it loads what the row's map needs
// and returns map(sum) -> f(u_j, v_j) -> out_j.
template <typename T, class G, int ACCESS, class Begin>
__device__ __forceinline__ void dot_then_map_rereading_l2(const void* u, long long u_row,
                                                          const void* v, long long v_row,
                                                          void* out, long long out_row,
                                                          long long m, int n_cols, Begin begin) {
  constexpr int VEC = 16 / sizeof(T);
  RowReducer<reduce::Sum, G::THREADS, G::TPR, G::CLUSTER> red;
  red.init();
  const RowSlice<T, G> s(cta_rank<G::CLUSTER>());
  const long long row = (long long)(blockIdx.x / G::CLUSTER) * G::ROWS + s.row_local;
  const int n = row < m ? n_cols : 0;
  const auto map = begin(row, n);
  const RowWindow<const T, ACCESS> ur(static_cast<const T*>(u) + row * u_row, n);
  const RowWindow<const T, ACCESS> vr(static_cast<const T*>(v) + row * v_row, n);
  const RowWindow<T, ACCESS> outr(static_cast<T*>(out) + row * out_row, n);
  auto load = [&](int i, uint64_t policy, float (&a)[VEC], float (&b)[VEC]) {
    unpack<T>(load_vec<T, ACCESS, kRowL2Hint>(ur, s.col(i), 0, policy), a);
    unpack<T>(load_vec<T, ACCESS, kRowL2Hint>(vr, s.col(i), 0, policy), b);
  };
  const uint64_t again = ptx::l2_evict_last(), last = ptx::l2_evict_first();
  red.ready();
  float dot = 0.0f;
#pragma unroll
  for (int i = 0; i < G::VPT; ++i) {
    float a[VEC], b[VEC];
    load(i, again, a, b);
#pragma unroll
    for (int e = 0; e < VEC; ++e) dot = fmaf(a[e], b[e], dot);
  }
  const auto f = map(red.reduce({{dot}}).f[0]);
#pragma unroll
  for (int i = 0; i < G::VPT; ++i) {
    float a[VEC], b[VEC];
    load(i, last, a, b);
#pragma unroll
    for (int e = 0; e < VEC; ++e) a[e] = f(a[e], b[e]);
    store_vec(outr, s.col(i), pack<T>(a));
  }
}

}  // namespace kestrel
