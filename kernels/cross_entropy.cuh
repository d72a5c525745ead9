// Cross-entropy over rows of logits with torch.nn.functional.cross_entropy
// semantics: ignore_index, label smoothing eps, reduction none/sum/mean.
//
// Forward: the row is read once; one MaxExpSumPlusSum reduction gives
// max, sum e^(x - max) and sum x, so lse = max + log(sum) and
//   loss = (1 - eps) (lse - x_t) + eps (lse - sum(x) / V)
// (x_t is one element, read directly). Ignored rows get loss 0; a target
// outside [0, V) that is not ignore_index gets NaN (PyTorch raises instead).
// Losses go per row to `loss` (reduction none) or to a workspace that
// xent_finish_kernel sums in a fixed order (sum/mean: deterministic).
//
// Backward: elementwise given the saved lse,
//   dx_j = g (e^(x_j - lse) - eps / V) - g (1 - eps) [j == t],
// g = dloss_i (none), dloss (sum) or dloss / kept rows (mean: the forward's
// total_weight, or counted by xent_count_kernel). Ignored rows get zeros.
// Each thread reads its elements before writing them, so dlogits may be the
// logits themselves.
#pragma once
#include "common/reduce.cuh"
#include "common/row_io.cuh"

namespace kestrel {

struct XentFwdParams {
  const void* logits;
  long long row_stride;
  const long long* target;  // [m]
  long long ignore_index;
  float smoothing;
  float* lse;   // [m]
  float* loss;  // [m]: per-row losses
  long long m;
  int n;
};

template <typename T, int THREADS, int TPR, int VPT, int CLUSTER, int ACCESS>
__global__ void __launch_bounds__(THREADS)
    xent_fwd_kernel(const __grid_constant__ XentFwdParams p) {
  using G = RowGeom<THREADS, TPR, VPT, CLUSTER>;
  constexpr int VEC = 16 / sizeof(T);
  const float kNegInf = -__int_as_float(0x7f800000);
  RowReducer<reduce::MaxExpSumPlusSum, THREADS, TPR, CLUSTER> red;
  red.init();
  const RowSlice<T, G> s(cta_rank<CLUSTER>());
  const long long row = (long long)(blockIdx.x / CLUSTER) * G::ROWS + s.row_local;
  const int n = row < p.m ? p.n : 0;

  uint4 v[VPT];
  const T* x = static_cast<const T*>(p.logits) + row * p.row_stride;
  const RowWindow<const T, ACCESS> xw(x, n);
  load_row<kRowStreamed>(v, xw, s, Elem<T>::kNegInf);  // -inf outside the row: no masks
  // The thread that writes the loss fetches the target logit now, so that its
  // dependent loads overlap the row's instead of following the reduction.
  const bool writer = n > 0 && s.rank == 0 && s.tr == 0;
  const long long t = writer ? p.target[row] : 0;
  const bool counted = t != p.ignore_index, in_range = t >= 0 && t < n;
  const float x_t = writer && counted && in_range ? load_f32(x + t) : 0.0f;
  red.ready();

  Floats<3> st = reduce::MaxExpSumPlusSum::identity();
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    float a[VEC];
    unpack<T>(v[i], a);
#pragma unroll
    for (int e = 0; e < VEC; ++e) st.f[0] = fmaxf(st.f[0], a[e]);
  }
  opaque(v);
  if (p.smoothing != 0.0f) {
    // The sum of the logits. The fill is -inf, so a thread holding a slot
    // outside the row masks element by element; in aligned rows all others
    // (every thread but a row's last ones) add without a compare, the same
    // adds in the same order. H100, session 32, bf16, us: 32768 x 32768 720
    // -> 681, 32768 x 4096 102.7 -> 99.6, 16384 x 50256 660 -> 652, 8192 x
    // 151936 1025 -> 1031. Not in shifted rows, which it made slower (16384
    // x 50257 675 -> 701, 16384 x 32001 462 -> 472).
    auto add_logits = [&](auto masked) {
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        float a[VEC];
        unpack<T>(v[i], a);
#pragma unroll
        for (int e = 0; e < VEC; ++e)
          if (!masked || xw.has(s.col(i) + e)) st.f[2] += a[e];
      }
    };
    if (ACCESS != kRowShifted && xw.whole(s.col(0)) && xw.whole(s.col(VPT - 1)))
      add_logits(cuda::std::false_type{});
    else
      add_logits(cuda::std::true_type{});
    opaque(v);
  }
  if (st.f[0] != kNegInf) {
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      float a[VEC];
      unpack<T>(v[i], a);
#pragma unroll
      for (int e = 0; e < VEC; ++e) st.f[1] += ptx::ex2_approx((a[e] - st.f[0]) * reduce::kLog2e);
    }
  }
  st = red.reduce(st);

  if (writer) {
    // An infinite max is the lse itself (all -inf row, or a +inf logit).
    const float lse = isinf(st.f[0]) ? st.f[0] : st.f[0] + logf(st.f[1]);
    float loss = 0.0f;
    if (counted) {
      if (!in_range) {
        loss = __int_as_float(0x7fc00000);
      } else {
        loss = (1.0f - p.smoothing) * (lse - x_t);
        if (p.smoothing != 0.0f) loss += p.smoothing * (lse - st.f[2] / float(n));
      }
    }
    p.lse[row] = lse;
    p.loss[row] = loss;
  }
}

// xent_count_kernel's CTAs (mirrored in src/ops/cross_entropy_ops.cpp).
constexpr int kXentCountParts = 8;

struct XentBwdParams {
  const void* logits;
  long long logits_row;
  void* dlogits;  // may equal logits
  long long dlogits_row;
  const long long* target;
  long long ignore_index;
  float smoothing;
  const float* lse;
  const float* grad;  // g of row i is grad[i * grad_stride] ...
  long long grad_stride;
  const float* kept;  // ... or, if set (mean), grad[0] / (kept[0] + ... + kept[kept_parts - 1])
  int kept_parts;
  long long m;
  int n;
};

// No reduction: SPLIT CTAs (not a cluster) share a row, each its own slice.
// A CTA whose rows are all whole runs a kRowWhole copy (as for_cta_rows):
// no per-vector bounds or fallback addresses ahead of the loads. H100, 32768
// rows, session 22, us: bf16 N = 256 13.4-13.6 -> 13.0 (reduction mean
// 13.6 -> 12.9), fp32 256 21.4 -> 21.3; N >= 1024 unchanged. The branch is
// written out here, not taken from for_cta_rows with a rank argument: that
// cost 0.3-0.6% at N = 256 (session 23).
template <typename T, class G, int ACCESS>
__device__ __forceinline__ void xent_bwd_row(const XentBwdParams& p, const RowSlice<T, G>& s,
                                             long long row) {
  constexpr int VEC = 16 / sizeof(T);
  const int n = p.n;
  uint4 v[G::VPT];
  // L2 evict_last, as the forwards' rows (common/row_io.cuh, kRowKept): fp32
  // 32768 x 4096 357.6 -> 354.5 us, bf16 x 1024 43.0 -> 42.4 (H100, session 25).
  load_row<kRowKept>(
      v, RowWindow<const T, ACCESS>(static_cast<const T*>(p.logits) + row * p.logits_row, n), s);
  const long long t = p.target[row];
  const float lse = p.lse[row];
  // Mean without the forward's total_weight: the kept rows are counted by
  // xent_count_kernel, launched just before this kernel, which starts early
  // (programmatic dependent) so that the row loads above overlap the count.
  ptx::griddep_wait();
  float g_row;
  if (p.kept != nullptr) {
    float kept = 0.0f;
#pragma unroll 1
    for (int c = 0; c < p.kept_parts; ++c) kept += p.kept[c];
    g_row = p.grad[0] / kept;
  } else {
    g_row = p.grad[row * p.grad_stride];
  }
  const bool ignored = t == p.ignore_index;
  const float g = ignored ? 0.0f : (t < 0 || t >= n) ? __int_as_float(0x7fc00000) : g_row;
  const float uniform = p.smoothing / float(n);
  const RowWindow<T, ACCESS> dw(static_cast<T*>(p.dlogits) + row * p.dlogits_row, n);
  store_row(dw, s, [&](int i) {
    float a[VEC];
    unpack<T>(v[i], a);
    // The element of this vector that is the target (column t + lo), if any.
    const long long target_lane = t + dw.lo - s.col(i);
    // There p - 1 is e^(x_t - lse) - 1, which cancels when p is near 1
    // (few classes): expm1 keeps its relative error at fp32's.
    float x_t = 0.0f, p_t_minus_1 = 0.0f;
#pragma unroll
    for (int e = 0; e < VEC; ++e) x_t = e == target_lane ? a[e] : x_t;
    if (target_lane >= 0 && target_lane < VEC) p_t_minus_1 = expm1f(x_t - lse);
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      const float p_e = ptx::ex2_approx((a[e] - lse) * reduce::kLog2e);
      const float d = e == target_lane ? p_t_minus_1 + p.smoothing - uniform : p_e - uniform;
      a[e] = ignored ? 0.0f : g * d;
    }
    return pack<T>(a);
  });
}

template <typename T, int THREADS, int TPR, int VPT, int SPLIT, int ACCESS>
__global__ void __launch_bounds__(THREADS)
    xent_bwd_kernel(const __grid_constant__ XentBwdParams p) {
  using G = RowGeom<THREADS, TPR, VPT, SPLIT>;
  const RowSlice<T, G> s(int(blockIdx.x % SPLIT));
  const long long first_row = (long long)(blockIdx.x / SPLIT) * G::ROWS;
  if constexpr (ACCESS == kRowVector) {
    if (cta_rows_whole<T, G>(first_row, p.m, p.n, s.rank)) {
      xent_bwd_row<T, G, kRowWhole>(p, s, first_row + s.row_local);
      return;
    }
  }
  if (first_row + s.row_local >= p.m) return;  // no barriers in this kernel
  xent_bwd_row<T, G, ACCESS>(p, s, first_row + s.row_local);
}

// A CTA's count of the targets in [lo, hi) that are not ignore_index, valid
// in thread 0. Each thread keeps kLoads loads in flight: the count is a few
// round trips to DRAM, not (hi - lo) / THREADS of them.
template <int THREADS>
__device__ unsigned count_kept(const long long* target, long long lo, long long hi,
                               long long ignore_index) {
  constexpr int kLoads = 8;
  __shared__ unsigned warp_kept[THREADS / 32];
  unsigned kept = 0;
  for (long long base = lo + threadIdx.x; base < hi; base += THREADS * kLoads) {
    long long t[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const long long i = base + u * THREADS;
      t[u] = i < hi ? target[i] : ignore_index;
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) kept += t[u] != ignore_index ? 1u : 0u;
  }
  for (int o = 16; o > 0; o >>= 1) kept += __shfl_xor_sync(0xffffffffu, kept, o);
  if (threadIdx.x % 32 == 0) warp_kept[threadIdx.x / 32] = kept;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < THREADS / 32; ++w) kept += warp_kept[w];
  return kept;
}

// Backward mean without the forward's total_weight: kXentCountParts CTAs of
// 1024 threads count the kept rows of their contiguous shares of the targets
// into parts[c]; the backward, this kernel's programmatic dependent, adds the
// parts in order (exact below 2^24 rows). Several CTAs rather than one: 32768
// targets are 256 KiB, ~2.4 us for one SM.
__global__ void __launch_bounds__(1024)
    xent_count_kernel(const long long* target, long long m, long long ignore_index,
                      float* parts) {
  ptx::griddep_launch_dependents();
  const long long share = (m + kXentCountParts - 1) / kXentCountParts;
  const long long lo = min(m, blockIdx.x * share), hi = min(m, lo + share);
  const unsigned kept = count_kept<1024>(target, lo, hi, ignore_index);
  if (threadIdx.x == 0) parts[blockIdx.x] = float(kept);
}

// Forward sum/mean, one CTA of 1024 threads:
//   out = sum_i row_loss[i] / (mean ? kept rows : 1),
// kept = rows whose target is not ignore_index. The sum runs in a fixed order
// (thread t adds rows t, t + 1024, ... in turn, then the reduction ladder).
// Mean also writes kept to total_weight, if set. This kernel is the
// forward's programmatic dependent: it starts as the forward's last CTAs exit
// and counts the targets before it waits for their losses. (The forward does
// not trigger it earlier: at bf16 32768 x 256 a trigger at its start took
// 12.1 -> 14.0 us without a dependent, 18.2 -> 19.5 with; H100, session 20.)
__global__ void __launch_bounds__(1024)
    xent_finish_kernel(const float* row_loss, const long long* target, long long m,
                       long long ignore_index, bool mean, float* out, float* total_weight) {
  constexpr int kLoads = 16;
  RowReducer<reduce::Sum, 1024, 1024, 1> red;
  red.init();
  const unsigned kept = mean ? count_kept<1024>(target, 0, m, ignore_index) : 0u;
  ptx::griddep_wait();  // the forward's row losses
  float sum = 0.0f;
  for (long long base = threadIdx.x; base < m; base += 1024 * kLoads) {
    float l[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const long long i = base + u * 1024;
      l[u] = i < m ? row_loss[i] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) sum += l[u];
  }
  red.ready();
  sum = red.reduce({{sum}}).f[0];
  // 0 / 0 = NaN when every row is ignored, as torch.
  if (threadIdx.x == 0) {
    *out = mean ? sum / float(kept) : sum;
    if (total_weight != nullptr) *total_weight = float(kept);
  }
}

}  // namespace kestrel
