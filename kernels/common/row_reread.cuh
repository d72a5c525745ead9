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

// u, v: this thread's rows of the two inputs; out: the output row. `map`
// takes the row's sum and returns f(u_j, v_j) -> out_j. Every thread of the
// CTA calls it (rows past M with n = 0), after red.init().
template <typename T, class G, int ACCESS, class Reducer, class Map>
__device__ __forceinline__ void dot_then_map_rereading_l2(const RowWindow<const T, ACCESS>& u,
                                                          const RowWindow<const T, ACCESS>& v,
                                                          const RowWindow<T, ACCESS>& out,
                                                          const RowSlice<T, G>& s, Reducer& red,
                                                          Map map) {
  constexpr int VEC = 16 / sizeof(T);
  auto load = [&](int i, uint64_t policy, float (&a)[VEC], float (&b)[VEC]) {
    unpack<T>(load_vec<T, ACCESS, kRowL2Hint>(u, s.col(i), 0, policy), a);
    unpack<T>(load_vec<T, ACCESS, kRowL2Hint>(v, s.col(i), 0, policy), b);
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
    store_vec(out, s.col(i), pack<T>(a));
  }
}

}  // namespace kestrel
