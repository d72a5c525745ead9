// RMSNorm forward (optionally fused with the residual add) and backward.
//
// Forward: y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps). The row is read
// once into registers, one Sum reduction (common/reduce.cuh) gives mean(x^2),
// and y is written from the registers. With a residual, h = x + residual is
// rounded to T and written first, and the norm is taken of the rounded h (what
// an eager `h = x + residual; rmsnorm(h)` computes).
//
// Backward, with xhat = x * rstd and g = dy * w:
//   dx = rstd * (g - x * a),   a = rstd^2 * sum_j(g_j x_j) / N,
//   dweight = sum over rows of dy * xhat.
// dy and x go to shared memory by cp.async (two inputs of a long row do not
// fit in registers; this way every load is in flight at once and no registers
// are held), and two passes over shared memory compute the Sum reduction and
// dx. dweight must be deterministic: clusters are persistent, each walks a
// fixed set of rows and accumulates its columns of dweight in fp32 registers,
// then writes one partial row; column_sum_kernel adds the partial rows in a
// fixed order.
#pragma once
#include "common/reduce.cuh"
#include "common/row_io.cuh"

namespace kestrel {

struct RmsNormFwdParams {
  const void* x;
  long long x_row;
  const void* residual;  // RESIDUAL
  long long residual_row;
  const void* w;  // WEIGHT: [n]
  void* y;
  long long y_row;
  void* h;  // RESIDUAL
  long long h_row;
  float* rstd;  // [m] or null
  long long m;
  int n;
  float eps;
};

template <typename T, typename W, int THREADS, int TPR, int VPT, int CLUSTER, bool ALIGNED,
          bool RESIDUAL, bool WEIGHT>
__global__ void __launch_bounds__(THREADS)
    rmsnorm_fwd_kernel(const __grid_constant__ RmsNormFwdParams p) {
  using G = RowGeom<THREADS, TPR, VPT, CLUSTER>;
  constexpr int VEC = 16 / sizeof(T);
  RowReducer<reduce::Sum, THREADS, TPR, CLUSTER> red;
  red.init();
  const RowSlice<T, G> s(cta_rank<CLUSTER>());
  const long long row = (long long)(blockIdx.x / CLUSTER) * G::ROWS + s.row_local;
  const int n = row < p.m ? p.n : 0;

  uint4 v[VPT];
  load_row<T, G, ALIGNED>(v, static_cast<const T*>(p.x) + row * p.x_row, s, n);
  if constexpr (RESIDUAL) {
    uint4 r[VPT];
    load_row<T, G, ALIGNED>(r, static_cast<const T*>(p.residual) + row * p.residual_row, s, n);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      float a[VEC], b[VEC];
      unpack<T>(v[i], a);
      unpack<T>(r[i], b);
#pragma unroll
      for (int e = 0; e < VEC; ++e) a[e] += b[e];
      v[i] = pack<T>(a);
    }
    store_row<T, G, ALIGNED>(static_cast<T*>(p.h) + row * p.h_row, s, n,
                             [&](int i) { return v[i]; });
  }
  red.ready();

  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    float a[VEC];
    unpack<T>(v[i], a);
#pragma unroll
    for (int e = 0; e < VEC; ++e) ss = fmaf(a[e], a[e], ss);
  }
  ss = red.reduce({{ss}}).f[0];
  const float rstd = rsqrtf(ss / float(p.n) + p.eps);
  opaque(v);
  if (p.rstd != nullptr && n > 0 && s.rank == 0 && s.tr == 0) p.rstd[row] = rstd;

  store_row<T, G, ALIGNED>(static_cast<T*>(p.y) + row * p.y_row, s, n, [&](int i) {
    float a[VEC], w[VEC];
    unpack<T>(v[i], a);
    if constexpr (WEIGHT)
      load_floats_cached<W, VEC, ALIGNED>(static_cast<const W*>(p.w), s.col(i), n, w);
#pragma unroll
    for (int e = 0; e < VEC; ++e) a[e] = WEIGHT ? a[e] * rstd * w[e] : a[e] * rstd;
    return pack<T>(a);
  });
}

struct RmsNormBwdParams {
  const void* dy;
  long long dy_row;
  const void* x;
  long long x_row;
  const void* w;  // WEIGHT
  const float* rstd;
  void* dx;
  long long dx_row;
  float* dw_partial;    // WEIGHT: [gridDim.x / CLUSTER][dw_stride]
  long long dw_stride;  // a multiple of 4
  long long m;
  int n;
};

// Dynamic shared memory: dy, then x, each [ROWS][VPT][TPR] x 16 bytes. The
// dweight accumulators live in registers (shared memory would cost CTAs per
// SM); at the end the staging area holds them, [ROWS][VPT][VEC/4][TPR] x
// float4, for the fixed-order sum over the CTA's rows.
// 512-thread CTAs (the longest rows) are held to 64 registers so that two fit
// on an SM: one CTA's loads then overlap the other's reduction.
template <typename T, typename W, int THREADS, int TPR, int VPT, int CLUSTER, bool ALIGNED,
          bool WEIGHT>
__global__ void __launch_bounds__(THREADS, THREADS == 512 ? 2 : 0)
    rmsnorm_bwd_kernel(const __grid_constant__ RmsNormBwdParams p) {
  using G = RowGeom<THREADS, TPR, VPT, CLUSTER>;
  constexpr int VEC = 16 / sizeof(T), Q = VEC / 4, SLICE = THREADS * VPT;
  extern __shared__ uint4 smem[];
  RowReducer<reduce::Sum, THREADS, TPR, CLUSTER> red;
  red.init();
  const RowSlice<T, G> s(cta_rank<CLUSTER>());
  const StagedRow<G> dys(smem, s.row_local, s.tr), xs(smem + SLICE, s.row_local, s.tr);
  const W* w = static_cast<const W*>(p.w);
  float dw[WEIGHT ? VPT * VEC : 1] = {};  // this thread's columns, summed over its rows

  const long long groups = (p.m + G::ROWS - 1) / G::ROWS;
  const long long stride = gridDim.x / CLUSTER;
  for (long long grp = blockIdx.x / CLUSTER, k = 0; grp < groups; grp += stride, ++k) {
    const long long row = grp * G::ROWS + s.row_local;
    const int n = row < p.m ? p.n : 0;
    stage_row<T, G, ALIGNED>(dys, static_cast<const T*>(p.dy) + row * p.dy_row, s, n);
    stage_row<T, G, ALIGNED>(xs, static_cast<const T*>(p.x) + row * p.x_row, s, n);
    ptx::cp_async_commit();
    const float rstd = n > 0 ? p.rstd[row] : 0.0f;
    ptx::cp_async_wait_all();
    if (k == 0) red.ready();

    float dot = 0.0f;  // sum_j g_j x_j
#pragma unroll 1
    for (int i = 0; i < VPT; ++i) {
      float g[VEC], a[VEC], wv[VEC];
      unpack<T>(dys.get(i), g);
      unpack<T>(xs.get(i), a);
      if constexpr (WEIGHT) load_floats_cached<W, VEC, ALIGNED>(w, s.col(i), n, wv);
#pragma unroll
      for (int e = 0; e < VEC; ++e) dot = fmaf(WEIGHT ? g[e] * wv[e] : g[e], a[e], dot);
    }
    dot = red.reduce({{dot}}, int(k)).f[0];
    const float a_coef = rstd * rstd * dot / float(p.n);

    T* dx = static_cast<T*>(p.dx) + row * p.dx_row;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      float g[VEC], a[VEC], wv[VEC];
      unpack<T>(dys.get(i), g);
      unpack<T>(xs.get(i), a);
      if constexpr (WEIGHT) {
        load_floats_cached<W, VEC, ALIGNED>(w, s.col(i), n, wv);
#pragma unroll
        for (int e = 0; e < VEC; ++e) dw[i * VEC + e] += g[e] * (a[e] * rstd);
      }
#pragma unroll
      for (int e = 0; e < VEC; ++e) g[e] = rstd * ((WEIGHT ? g[e] * wv[e] : g[e]) - a[e] * a_coef);
      store_vec<T, ALIGNED>(dx, s.col(i), n, pack<T>(g));
    }
  }

  if constexpr (WEIGHT) {
    // This CTA's partial dweight: its rows' accumulators summed in row order,
    // through the (now free) staging area.
    float4* const acc = reinterpret_cast<float4*>(smem);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < VPT * Q; ++j)
      acc[(s.row_local * VPT * Q + j) * TPR + s.tr] =
          make_float4(dw[4 * j], dw[4 * j + 1], dw[4 * j + 2], dw[4 * j + 3]);
    __syncthreads();
    float* out = p.dw_partial + (long long)(blockIdx.x / CLUSTER) * p.dw_stride;
    for (int j = threadIdx.x; j < VPT * Q * TPR; j += THREADS) {
      float4 t = acc[j];
      for (int r = 1; r < G::ROWS; ++r) {
        const float4 u = acc[r * VPT * Q * TPR + j];
        t.x += u.x, t.y += u.y, t.z += u.z, t.w += u.w;
      }
      const int i = j / (Q * TPR), q = j / TPR % Q, tr = j % TPR;
      const int c = ((s.rank * VPT + i) * TPR + tr) * VEC + 4 * q;
      if (c < p.n) *reinterpret_cast<float4*>(out + c) = t;
    }
  }
}

// out[j] = sum_{r < rows} partial[r][j] in row order (fixed, so deterministic).
// Block (32, 8): 32 columns; 8 interleaved subsets of the rows per column.
template <typename OUT>
__global__ void __launch_bounds__(256)
    column_sum_kernel(const float* partial, long long stride, int rows, int n, OUT* out) {
  __shared__ float part[8][32];
  const int col = blockIdx.x * 32 + threadIdx.x;
  float t = 0.0f;
  if (col < n)
    for (int r = threadIdx.y; r < rows; r += 8) t += partial[r * stride + col];
  part[threadIdx.y][threadIdx.x] = t;
  __syncthreads();
  if (threadIdx.y == 0 && col < n) {
    for (int k = 1; k < 8; ++k) t += part[k][threadIdx.x];
    float f[Elem<OUT>::PER_WORD] = {};
    f[0] = t;
    const uint32_t bits = Elem<OUT>::from_f32(f);
    if constexpr (sizeof(OUT) == 2) {
      reinterpret_cast<unsigned short*>(out)[col] = (unsigned short)bits;
    } else {
      reinterpret_cast<unsigned int*>(out)[col] = bits;
    }
  }
}

}  // namespace kestrel
