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
// fit in registers; this way every load is in flight at once), the first pass
// (the Sum reduction's) moves them into registers, and the second computes dx
// from there while the next row's loads are in flight. dweight must be
// deterministic: clusters are persistent, each walks a fixed set of rows and
// accumulates its columns of dweight in fp32 (in shared memory), then writes
// one partial row; column_sum_kernel adds the partial rows in a fixed order.
#pragma once
#include "common/reduce.cuh"
#include "common/row_io.cuh"
#include "common/row_reread.cuh"

namespace kestrel {

struct RmsNormFwdParams {
  // m, n and the row operands first, in the first 64 bytes: what a CTA reads
  // before its first load. With m and n at the end, ncu put 4% of the stall
  // samples of bf16 32768 x 256 on constant-cache misses at their loads;
  // this order took it 12.75 / 12.74 -> 12.58 / 12.54 us (H100, session 24).
  long long m;
  int n;
  float eps;
  const void* x;
  long long x_row;
  const void* w;  // WEIGHT: [n]
  void* y;
  long long y_row;
  float* rstd;  // [m] or null
  const void* residual;  // RESIDUAL
  long long residual_row;
  void* h;  // RESIDUAL
  long long h_row;
};

// A thread's weight columns (vector i at s.col(i)). HELD: loaded once, at
// construction, into registers (at most 16 values per thread), for a short
// forward row, whose weight latency then hides behind the row's, and for the
// rows a backward CTA walks; else read through L1 at each use. Shifted rows
// (the forward's) are never held: the weight's place under a row's columns
// moves with the row's shift `lo`, element by element.
template <typename W, int VEC, int VPT, int ACCESS, bool HELD>
struct SliceWeight {
  static_assert(!(HELD && ACCESS == kRowShifted), "a shifted row's weight moves with the row");
  const W* p;
  float held[HELD ? VPT : 1][VEC];
  template <class Slice>
  __device__ SliceWeight(const W* w, const Slice& s, int n) : p(w) {
    // Braces: nvcc drops the statement after an unbraced `if constexpr` +
    // `#pragma unroll` loop along with a discarded branch.
    if constexpr (HELD) {
#pragma unroll
      for (int i = 0; i < VPT; ++i) load_floats_cached<W, VEC, ACCESS>(p, s.col(i), n, held[i]);
    }
  }
  // Vector i (column c, of a row shifted by lo) as floats, zero outside the row.
  __device__ void get(int i, int c, int n, float (&f)[VEC], int lo = 0) const {
    if constexpr (HELD) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) f[e] = held[i][e];
    } else {
      load_floats_cached<W, VEC, ACCESS>(p, c, n, f, lo);
    }
  }
};

template <typename T, typename W, class G, int ACCESS, bool RESIDUAL, bool WEIGHT>
__device__ __forceinline__ void rmsnorm_fwd_rows(const RmsNormFwdParams& p, long long first_row) {
  constexpr int VEC = 16 / sizeof(T), RPT = G::RPT, VPT = G::VPT;
  static_assert(RPT <= G::TPR, "a lane of its own for each row's rstd");
  RowReducer<reduce::Sum, G::THREADS, G::TPR, G::CLUSTER> red;
  red.init();
  const RowSlice<T, G> s(cta_rank<G::CLUSTER>());
  const long long row0 = first_row + s.row_local;
  auto row_of = [&](int r) { return row0 + r * G::ROWS; };
  auto row_n = [&](int r) { return ACCESS == kRowWhole || row_of(r) < p.m ? p.n : 0; };

  uint4 v[RPT][VPT];
#pragma unroll
  for (int r = 0; r < RPT; ++r)
    load_row<kRowKept>(
        v[r],
        RowWindow<const T, ACCESS>(static_cast<const T*>(p.x) + row_of(r) * p.x_row, row_n(r)), s);
  if constexpr (RESIDUAL) {
    uint4 res[RPT][VPT];
#pragma unroll
    for (int r = 0; r < RPT; ++r)
      load_row<kRowKept>(
          res[r],
          RowWindow<const T, ACCESS>(static_cast<const T*>(p.residual) + row_of(r) * p.residual_row,
                                     row_n(r)),
          s);
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        float a[VEC], b[VEC];
        unpack<T>(v[r][i], a);
        unpack<T>(res[r][i], b);
#pragma unroll
        for (int e = 0; e < VEC; ++e) a[e] += b[e];
        v[r][i] = pack<T>(a);
      }
      store_row(RowWindow<T, ACCESS>(static_cast<T*>(p.h) + row_of(r) * p.h_row, row_n(r)), s,
                [&](int i) { return v[r][i]; });
    }
  }
  // A short row's weight is held, loaded with the rows, once for all RPT of
  // them: they share the columns. Read it as far as the first row reaches
  // (p.n, or 0 past M; a later row past M stores nothing).
  const SliceWeight<W, VEC, VPT, ACCESS,
                    WEIGHT && VPT * VEC <= 16 && ACCESS != kRowShifted>
      wt(static_cast<const W*>(p.w), s, row_n(0));
  red.ready();

  Floats<1> ss[RPT];
#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    ss[r].f[0] = 0.0f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      float a[VEC];
      unpack<T>(v[r][i], a);
#pragma unroll
      for (int e = 0; e < VEC; ++e) ss[r].f[0] = fmaf(a[e], a[e], ss[r].f[0]);
    }
  }
  red.reduce_rows(ss);
#pragma unroll
  for (int r = 0; r < RPT; ++r) opaque(v[r]);

  // One division (IEEE, with its slow-path branch) for all the rows.
  const float inv_n = 1.0f / float(p.n);
  float rstds[RPT];
#pragma unroll
  for (int r = 0; r < RPT; ++r) rstds[r] = rsqrtf(ss[r].f[0] * inv_n + p.eps);
  if (p.rstd != nullptr && s.rank == 0) {
    // Lane tr writes row tr's value (RPT <= TPR): one store for the RPT rows.
    float mine = rstds[0];
#pragma unroll
    for (int r = 1; r < RPT; ++r) mine = s.tr == r ? rstds[r] : mine;
    if (s.tr < RPT && row_n(s.tr) > 0) p.rstd[row_of(s.tr)] = mine;
  }

#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    const int n = row_n(r);
    const float rstd = rstds[r];

    // Every tensor of a shifted row has the same shift (the host checks).
    const RowWindow<T, ACCESS> yw(static_cast<T*>(p.y) + row_of(r) * p.y_row, n);
    store_row(yw, s, [&](int i) {
      float a[VEC], w[VEC];
      unpack<T>(v[r][i], a);
      if constexpr (WEIGHT) wt.get(i, s.col(i), n, w, yw.lo);
#pragma unroll
      for (int e = 0; e < VEC; ++e) a[e] = WEIGHT ? a[e] * rstd * w[e] : a[e] * rstd;
      return pack<T>(a);
    });
  }
}

template <typename T, typename W, int THREADS, int TPR, int VPT, int CLUSTER, int ACCESS,
          bool RESIDUAL, bool WEIGHT, int RPT>
__global__ void __launch_bounds__(THREADS)
    rmsnorm_fwd_kernel(const __grid_constant__ RmsNormFwdParams p) {
  using G = RowGeom<THREADS, TPR, VPT, CLUSTER, RPT>;
  for_cta_rows<T, G, ACCESS>(p.m, p.n, [&](long long first_row, auto access) {
    rmsnorm_fwd_rows<T, W, G, decltype(access)::value, RESIDUAL, WEIGHT>(p, first_row);
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
  float* group_slots;        // L2: [gridDim.x / CLUSTER][2][ROWS][CLUSTER], zero
  unsigned* group_counters;  // L2: [gridDim.x / CLUSTER][2], zero
};

// Dynamic shared memory: dy, then x, each [RPT][ROWS][VPT][TPR] x 16 bytes,
// then (WEIGHT) the dweight accumulators, [ROWS][VPT][VEC/4][TPR] x float4.
// Two row groups in flight: the first pass copies the staged rows into
// registers, so their slots are free and the next group's cp.async go out at
// once; those loads then overlap this group's reduction (with a cluster, the
// wait for the slowest CTA) and second pass. Each thread stages, reads and
// accumulates only its own slots, so none of this needs a barrier. The
// registers that hold the rows are the ones the dweight accumulators would
// need, hence those live in shared memory.
// RPT rows per thread (ROWS apart) share one reduction (a tuple of RPT sums)
// and the thread's dweight columns (one shared-memory round trip for all):
// rows that would split 4 ways run 8 ways with 2 rows per thread
// (ops/rowwise_config.cpp).
// L2: the CLUSTER CTAs of a row are a co-resident group exchanging through L2
// (L2GroupReducer) instead of a cluster, so that every SM can take one.
template <typename T, typename W, int THREADS, int TPR, int VPT, int CLUSTER, int ACCESS,
          bool WEIGHT, bool L2, int RPT>
__global__ void __launch_bounds__(THREADS)
    rmsnorm_bwd_kernel(const __grid_constant__ RmsNormBwdParams p) {
  using G = RowGeom<THREADS, TPR, VPT, CLUSTER, RPT>;
  using Op = reduce::Sums<RPT>;
  constexpr int VEC = 16 / sizeof(T), Q = VEC / 4, SLICE = THREADS * VPT;
  static_assert(ACCESS != kRowShifted, "dweight columns follow the row: no shifted rows");
  extern __shared__ uint4 smem[];
  const long long cluster = blockIdx.x / CLUSTER;
  auto reducer = [&] {
    if constexpr (L2) {
      return L2GroupReducer<Op, THREADS, TPR, CLUSTER>(
          reinterpret_cast<Floats<RPT>*>(p.group_slots) + cluster * 2 * G::ROWS * CLUSTER,
          p.group_counters + 2 * cluster);
    } else {
      return RowReducer<Op, THREADS, TPR, CLUSTER>();
    }
  };
  auto red = reducer();
  red.init();
  const RowSlice<T, G> s(L2 ? int(blockIdx.x % CLUSTER) : cta_rank<CLUSTER>());
  auto dys = [&](int r) { return StagedRow<G>(smem + r * SLICE, s.row_local, s.tr); };
  auto xs = [&](int r) { return StagedRow<G>(smem + (RPT + r) * SLICE, s.row_local, s.tr); };
  const W* w = static_cast<const W*>(p.w);
  // This thread's dweight columns summed over its rows: (vector i, quarter q)
  // at dw[(i * Q + q) * TPR].
  float4* const acc = reinterpret_cast<float4*>(smem + 2 * RPT * SLICE);
  float4* const dw = acc + s.row_local * VPT * Q * TPR + s.tr;
  if constexpr (WEIGHT) {
#pragma unroll
    for (int j = 0; j < VPT * Q; ++j) dw[j * TPR] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }

  const long long groups = (p.m + G::ROWS * RPT - 1) / (G::ROWS * RPT);
  const long long stride = gridDim.x / CLUSTER;
  auto row_of = [&](long long grp, int r) { return (grp * RPT + r) * G::ROWS + s.row_local; };
  auto stage = [&](long long grp) {
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      const long long row = row_of(grp, r);
      const int n = row < p.m ? p.n : 0;
      stage_row(dys(r), RowWindow<const T, ACCESS>(static_cast<const T*>(p.dy) + row * p.dy_row, n),
                s);
      stage_row(xs(r), RowWindow<const T, ACCESS>(static_cast<const T*>(p.x) + row * p.x_row, n),
                s);
    }
    ptx::cp_async_commit();
  };
  // The CTA's weight columns are the same for every row it walks: 16-bit
  // rows (2 vectors per thread at 1024 threads: 16 floats) hold them instead
  // of reading L1 in both passes of every row. fp32 rows (4 vectors), or two
  // 16-bit rows per thread, would spill.
  const SliceWeight<W, VEC, VPT, ACCESS, WEIGHT && sizeof(T) == 2 && RPT * VPT * VEC <= 16> wt(w, s,
                                                                                               p.n);
  stage(cluster);
  for (long long grp = cluster, k = 0; grp < groups; grp += stride, ++k) {
    int n[RPT];
    float rstd[RPT];
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      n[r] = row_of(grp, r) < p.m ? p.n : 0;
      rstd[r] = n[r] > 0 ? p.rstd[row_of(grp, r)] : 0.0f;
    }
    ptx::cp_async_wait_all();
    if (k == 0) red.ready();

    uint4 dyv[RPT][VPT], xv[RPT][VPT];
    Floats<RPT> dot = Op::identity();  // sum_j g_j x_j of each row
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      float wv[VEC];
      if constexpr (WEIGHT) wt.get(i, s.col(i), p.n, wv);
#pragma unroll
      for (int r = 0; r < RPT; ++r) {
        float g[VEC], a[VEC];
        dyv[r][i] = dys(r).get(i);
        xv[r][i] = xs(r).get(i);
        unpack<T>(dyv[r][i], g);
        unpack<T>(xv[r][i], a);
#pragma unroll
        for (int e = 0; e < VEC; ++e) dot.f[r] = fmaf(WEIGHT ? g[e] * wv[e] : g[e], a[e], dot.f[r]);
      }
    }
    if (grp + stride < groups) stage(grp + stride);
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      opaque(dyv[r]);
      opaque(xv[r]);
    }
    dot = red.reduce(dot, int(k));
    float a_coef[RPT];
#pragma unroll
    for (int r = 0; r < RPT; ++r) a_coef[r] = rstd[r] * rstd[r] * dot.f[r] / float(p.n);

#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      float wv[VEC];
      float4 t[Q];
      if constexpr (WEIGHT) {
        wt.get(i, s.col(i), p.n, wv);
#pragma unroll
        for (int q = 0; q < Q; ++q) t[q] = dw[(i * Q + q) * TPR];
      }
#pragma unroll
      for (int r = 0; r < RPT; ++r) {
        float g[VEC], a[VEC];
        unpack<T>(dyv[r][i], g);
        unpack<T>(xv[r][i], a);
        if constexpr (WEIGHT) {
#pragma unroll
          for (int q = 0; q < Q; ++q) {
            t[q].x += g[4 * q] * (a[4 * q] * rstd[r]);
            t[q].y += g[4 * q + 1] * (a[4 * q + 1] * rstd[r]);
            t[q].z += g[4 * q + 2] * (a[4 * q + 2] * rstd[r]);
            t[q].w += g[4 * q + 3] * (a[4 * q + 3] * rstd[r]);
            if (r == RPT - 1) dw[(i * Q + q) * TPR] = t[q];
          }
        }
#pragma unroll
        for (int e = 0; e < VEC; ++e)
          g[e] = rstd[r] * ((WEIGHT ? g[e] * wv[e] : g[e]) - a[e] * a_coef[r]);
        store_vec<kRowStoreStreamed>(
            RowWindow<T, ACCESS>(static_cast<T*>(p.dx) + row_of(grp, r) * p.dx_row, n[r]), s.col(i),
            pack<T>(g));
      }
    }
  }
  if constexpr (L2) red.finish();

  if constexpr (WEIGHT) {
    // This CTA's partial dweight: its rows' accumulators summed in row order.
    __syncthreads();
    float* out = p.dw_partial + cluster * p.dw_stride;
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

// No weight, one vector a thread: dy and x read twice, from L2 the second
// time (common/row_reread.cuh); one CTA (or cluster) per row group.
template <typename T, int THREADS, int TPR, int VPT, int CLUSTER, int ACCESS>
__global__ void __launch_bounds__(THREADS)
    rmsnorm_bwd_l2_kernel(const __grid_constant__ RmsNormBwdParams p) {
  dot_then_map_rereading_l2<T, RowGeom<THREADS, TPR, VPT, CLUSTER>, ACCESS>(
      p.dy, p.dy_row, p.x, p.x_row, p.dx, p.dx_row, p.m, p.n, [&](long long row, int n) {
        const float rstd = n > 0 ? p.rstd[row] : 0.0f;
        return [&, rstd](float dot) {
          const float coef = rstd * rstd * dot / float(p.n);
          return [rstd, coef](float dy, float x) { return rstd * (dy - x * coef); };
        };
      });
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
