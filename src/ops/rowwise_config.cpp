// The row-wise configuration space and its heuristic.
//
// Heuristic: a CTA of 256 threads holds 8 vectors of 16 bytes per thread of a
// row (32 KiB: ~32 data registers per thread in the forward kernels, 64 KiB of
// shared memory for the two staged inputs of softmax_bwd). That leaves room
// for several CTAs per SM, so that one CTA's loads overlap another's
// reduction. rmsnorm_bwd (persistent CTAs, each with a row in registers, the
// next one staged and fp32 dweight accumulators in shared memory) has its own
// rule, below.
// - Short rows: the fewest threads per row that keep the vectors per thread
//   at the target (a warp or less per row needs no shared memory for the
//   reduction), in CTAs of 32..128 threads holding about 4 rows.
// - Long rows: split over a cluster of 2..16 CTAs, partial statistics
//   exchanged through distributed shared memory; past 16 CTAs the CTAs grow
//   to 512, then 1024 threads.
// - Few rows: split them over more CTAs until the grid covers the GPU.
#include "ops/rowwise_config.h"

#include <algorithm>

namespace kestrel {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int pow2_at_least(int64_t v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}
bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }


// rmsnorm_bwd, measured on H100 (bf16 and fp32, 4K..262K): few, large CTAs
// win. Up to 4 vectors per thread in CTAs of 256 threads for short rows (one
// vector a thread from 128 vectors, below); past
// that, one CTA of 1024 threads per SM, with the most vectors per thread whose
// staged row and fp32 dweight accumulators fit in shared memory (fp32: 4,
// 16-bit types: 2), long rows split over a cluster of 2..16 such CTAs.
// fp32 rows split 4 ways or more go to L2 groups instead (co-resident CTAs,
// no cluster): 65536 / 131072 / 262144 at 86-89 / 92-93 / 91-95% of the copy
// bandwidth against 84 / 86 / 75% as clusters, whose every row waits for the
// slowest of its CTAs and whose clusters of 16 fit on 112 SMs. 16-bit rows
// keep clusters (83-86%): as groups they ran at 82 / 82 / 77%, and at 80 /
// 78 / 82% with 3 vectors per thread in groups of 3 / 6 / 11 that fill all
// 132 SMs. fp32 rows split 2 ways keep clusters too (90 vs 82%).
// Rows split 4 ways go 8 ways instead, each thread holding two rows at half
// the vectors (one exchange for both): 16384 x 65536 fp32 (L2 groups) 85.5 ->
// 93.5%, bf16 87.2 -> 89.0% (H100, session 9). The same at 2 and 8 ways lost
// 1-4%.
// Rows of 128..1024 vectors: one vector a thread in CTAs of at least 512
// threads (without weight the kernel then rereads L2 instead of staging,
// common/row_reread.cuh). H100, 32768 rows, session 21, us, 4 vectors a
// thread -> one: without weight bf16 N = 1024 64.6 -> 62.3, 4096 263.0 ->
// 255.4, 8192 526.3 -> 513.4, fp32 1024 132.1 -> 125.8, 4096 525.8 ->
// 512.8; with weight bf16 74.5 -> 71.3, 295.1 -> 274.1, 578.3 -> 545.6,
// fp32 143.8 -> 144.2, 565.0 -> 570.1.
RowwiseConfig rmsnorm_bwd_config(int64_t vectors, DType t) {
  if (vectors < 128) return {256, pow2_at_least(ceil_div(vectors, 4)), 1};
  if (vectors <= 1024) {
    const int tpr = pow2_at_least(vectors);
    return {std::max(512, tpr), tpr, 1};
  }
  const bool fp32 = dtype_size(t) == 4;
  const int cluster =
      int(std::min<int64_t>(16, pow2_at_least(ceil_div(vectors, 1024 * (fp32 ? 4 : 2)))));
  if (cluster == 4) return {1024, 1024, 8, fp32, 2};
  return {1024, 1024, cluster, fp32 && cluster >= 4};
}

}  // namespace

const char* rowwise_op_name(RowwiseOp op) {
  switch (op) {
    case RowwiseOp::kRmsNormFwd:
      return "rmsnorm_fwd";
    case RowwiseOp::kRmsNormBwd:
      return "rmsnorm_bwd";
    case RowwiseOp::kSoftmaxFwd:
      return "softmax_fwd";
    case RowwiseOp::kSoftmaxBwd:
      return "softmax_bwd";
    case RowwiseOp::kCrossEntropyFwd:
      return "cross_entropy_fwd";
    case RowwiseOp::kCrossEntropyBwd:
      return "cross_entropy_bwd";
  }
  return "?";
}

std::string RowwiseConfig::describe() const {
  return "t" + std::to_string(threads) + " r" + std::to_string(threads_per_row) +
         (l2_group ? " g" : " c") + std::to_string(cluster) +
         (rows_per_thread > 1 ? " x" + std::to_string(rows_per_thread) : "");
}

namespace ops {

int vectors_per_thread(const RowwiseConfig& c, int64_t n, DType t) {
  return int(ceil_div(ceil_div(n, elements_per_vector(t)), int64_t(c.cluster) * c.threads_per_row));
}

// The reduction buffers' static shared memory, at most (common/reduce.cuh:
// 2 x rows x (warps per row + cluster) x 16 bytes, a tuple of up to 4 floats;
// rows x warps per row <= threads / 32, and rows <= threads / 32 with a
// cluster).
size_t static_smem_bound(const RowwiseConfig& c) {
  return size_t(c.cluster + 1) * size_t(c.threads) + 64;
}

bool softmax_bwd_y_in_registers(const RowwiseConfig& c, int vpt) {
  return 2 * 2 * size_t(c.threads) * size_t(vpt) * 16 > kRowwiseSmemOptin;
}

bool rowwise_rereads(RowwiseOp op, const RowwiseConfig& c, int vpt, bool dweight) {
  const bool pair = op == RowwiseOp::kSoftmaxBwd || (op == RowwiseOp::kRmsNormBwd && !dweight);
  return pair && vpt == 1 && c.rows_per_thread == 1 && !c.l2_group;
}

size_t rowwise_smem_bytes(RowwiseOp op, const RowwiseConfig& c, int vpt, DType t, bool dweight) {
  const bool staged = (op == RowwiseOp::kSoftmaxBwd || op == RowwiseOp::kRmsNormBwd) &&
                      !rowwise_rereads(op, c, vpt, dweight);
  const size_t vectors = size_t(c.threads) * size_t(vpt);
  const size_t accumulators =
      op == RowwiseOp::kRmsNormBwd && dweight ? vectors * size_t(elements_per_vector(t)) * 4 : 0;
  if (!staged) return 0;
  const size_t inputs = op == RowwiseOp::kSoftmaxBwd && softmax_bwd_y_in_registers(c, vpt) ? 1 : 2;
  return inputs * size_t(c.rows_per_thread) * vectors * 16 + accumulators;
}

std::string rowwise_config_error(RowwiseOp op, const RowwiseConfig& c, int64_t n, DType t,
                                 size_t max_smem) {
  if (!is_pow2(c.threads) || c.threads < 32 || c.threads > 1024)
    return "threads must be 32, 64, 128, 256, 512 or 1024";
  // rmsnorm_bwd writes one dweight partial row per CTA.
  if (op == RowwiseOp::kRmsNormBwd && c.threads < 128) return "rmsnorm_bwd needs threads >= 128";
  if (!is_pow2(c.threads_per_row) || c.threads_per_row > c.threads)
    return "threads_per_row must be a power of two <= threads";
  if (!is_pow2(c.cluster) || c.cluster > 16) return "cluster must be 1, 2, 4, 8 or 16";
  if (c.cluster > 1 && c.threads_per_row < 32)
    return "a row split over several CTAs needs threads_per_row >= 32";
  if (c.l2_group && op != RowwiseOp::kRmsNormBwd) return "only rmsnorm_bwd has L2 groups";
  if (c.l2_group && c.cluster < 2) return "an L2 group needs cluster >= 2";
  if (!is_pow2(c.rows_per_thread) || c.rows_per_thread > 8)
    return "rows_per_thread must be 1, 2, 4 or 8";
  const bool forward_rows = op == RowwiseOp::kRmsNormFwd || op == RowwiseOp::kSoftmaxFwd;
  if (c.rows_per_thread > 1 && !forward_rows && op != RowwiseOp::kRmsNormBwd)
    return "only rmsnorm_fwd, softmax_fwd and rmsnorm_bwd take rows_per_thread > 1";
  // The backward reduces its rows' sums as one tuple (at most 4 floats).
  if (c.rows_per_thread > 4 && op == RowwiseOp::kRmsNormBwd)
    return "rmsnorm_bwd takes rows_per_thread of at most 4";
  // The forward kernels reduce several rows in warp butterflies only, and one
  // lane of a row writes each of the thread's rows' statistics.
  if (c.rows_per_thread > 1 && forward_rows && (c.cluster > 1 || c.threads_per_row > 32))
    return "rows_per_thread > 1 needs cluster 1 and threads_per_row <= 32";
  if (c.rows_per_thread > c.threads_per_row && forward_rows)
    return "rows_per_thread must be at most threads_per_row";
  const int vpt = vectors_per_thread(c, n, t);
  if (vpt > kMaxVectorsPerThread)
    return "rows of " + std::to_string(n) + " elements need " + std::to_string(vpt) +
           " vectors per thread, at most " + std::to_string(kMaxVectorsPerThread) +
           " are allowed: use more threads per row or a larger cluster";
  const size_t smem = rowwise_smem_bytes(op, c, vpt, t, true) + static_smem_bound(c);
  if (smem > max_smem)
    return "needs " + std::to_string(smem) + " bytes of shared memory, the GPU allows " +
           std::to_string(max_smem);
  return "";
}

}  // namespace ops

std::vector<RowwiseConfig> rowwise_config_space(RowwiseOp op, int64_t n, DType dtype) {
  std::vector<RowwiseConfig> out;
  if (n < 1) return out;
  // Skip shapes where over half of the thread slots of a row would stay empty.
  const int64_t slots = pow2_at_least(ceil_div(n, ops::elements_per_vector(dtype)));
  for (int threads : {32, 64, 128, 256, 512, 1024})
    for (int tpr = 1; tpr <= threads; tpr *= 2)
      for (int cluster = 1; cluster <= 16; cluster *= 2) {
        if (int64_t(tpr) * cluster > std::max<int64_t>(slots, 1)) continue;
        for (bool l2 : {false, true})
          for (int rpt = 1; rpt <= 8; rpt *= 2) {
            const RowwiseConfig c{threads, tpr, cluster, l2, rpt};
            if (ops::rowwise_config_error(op, c, n, dtype, ops::kRowwiseSmemOptin).empty())
              out.push_back(c);
          }
      }
  return out;
}

namespace ops {

RowwiseConfig default_config(RowwiseOp op, int64_t m, int64_t n, DType dtype, int sm_count,
                             bool residual, RowAccess access) {
  const int64_t vectors = ceil_div(std::max<int64_t>(n, 1), ops::elements_per_vector(dtype));
  // 8 vectors per thread; rmsnorm_fwd rows of at most 4096 vectors take 4
  // (H100, session 7, rmsnorm_fwd 32768 rows: bf16 16384 721 -> 707 us, fp32
  // 1024 / 4096 / 16384 +0.3-0.9%, the rest of that range within 0.6%; longer
  // rows, whose clusters would grow to 8 or 16, lost 1-18%).
  const int target = op == RowwiseOp::kRmsNormFwd && vectors <= 4096 ? 4 : 8;
  RowwiseConfig c;
  if (op == RowwiseOp::kRmsNormBwd) {
    c = rmsnorm_bwd_config(vectors, dtype);
  } else if (vectors <= 256 * target) {
    // At least 16 threads per row where the row has that many vectors: a
    // load instruction then covers 256 contiguous bytes of a row. bf16 N =
    // 256 (32 vectors; H100, 32768 rows, session 7): 4 -> 16 threads per row
    // took softmax_bwd 20.4 -> 17.4 us, softmax_fwd 13.8 -> 12.8, rmsnorm_fwd
    // 15.1 -> 14.2, cross_entropy_bwd 24.1 -> 23.1 (cross_entropy_fwd 19.7 ->
    // 19.9).
    c.threads_per_row =
        std::max(pow2_at_least(ceil_div(vectors, target)), std::min(16, pow2_at_least(vectors)));
    // CTAs of 4 rows (32..128 threads; rows of a few vectors: one warp), not
    // 256 threads. H100, 32768 rows (session 7, BENCHMARKS.md): rmsnorm_fwd
    // fp32 N = 256 23.5 -> 22.2 us, cross_entropy_bwd fp32 256 31.9 -> 30.1,
    // bf16 4096: rmsnorm_fwd 182.3 -> 180.4, softmax_bwd 265.2 -> 260.8; the
    // rest of N <= 4096 within -0.7..+2%.
    c.threads = std::max({32, c.threads_per_row, std::min(128, 4 * c.threads_per_row)});
  } else {
    c.threads = c.threads_per_row = 256;
    c.cluster = pow2_at_least(ceil_div(vectors, 256 * target));
    // A row just past a power of two would get about half the target: one
    // cluster size down keeps it within 1.5x of it (cross_entropy_fwd bf16
    // N = 151936: 5 -> 10 vectors per thread, 78 -> 100% of the copy bandwidth).
    if (c.cluster > 1 && ceil_div(vectors, 256 * (c.cluster / 2)) <= target * 3 / 2) c.cluster /= 2;
    while (c.cluster > 16) c.cluster /= 2, c.threads *= 2, c.threads_per_row *= 2;
  }
  // Forward rows of 4096+ vectors with little arithmetic per byte
  // (rmsnorm_fwd; softmax_fwd in fp32): CTAs of 1024 threads at about 8
  // vectors a thread, over clusters 4 times smaller. H100, session 23, us,
  // two rounds the same within 0.3%: rmsnorm_fwd fp32 32768 x 16384 1442 ->
  // 1418, bf16 32768 x 40000 1824 -> 1734, fp32 16384 x 100000 4482 -> 4388,
  // bf16 8192 x 262144 2889 -> 2846, fp32 2881 -> 2850 (N = 32768), 5824 ->
  // 5769 (262144); softmax_fwd fp32 32768 x 16384 1444 -> 1409, 32768 2891
  // -> 2863, 65536 2881 -> 2852 (262144, clusters of 8: 5667 -> 5676, not
  // taken). softmax_fwd in 16-bit types (8 exponentials a vector) lost up
  // to 17% at 4 to 10 vectors a thread, as cross_entropy_fwd did everywhere
  // (2-75%): one CTA per SM then leaves no other CTA to load while it
  // computes. Not with the fused residual: its two inputs of 8 vectors
  // would spill at 64 registers.
  // The rules with CTAs of 1024 threads, here and below, are for aligned
  // rows: misaligned ones lost there (H100, session 23, us, CTAs of 256 ->
  // 1024: rmsnorm_fwd element by element bf16 16384 x 50257 3887 -> 4616;
  // shifted, the same 1237 -> 1252 but fp32 16384 x 100001 4598 -> 4536,
  // softmax_bwd bf16 16384 x 50257 1666 -> 1925, fp32 32768 x 4097 547 ->
  // 653; with every cp.async issued before the partial vectors, session 24,
  // 1662 -> 1912 and 545 -> 570: a CTA of one row still waits on those).
  const bool aligned = access == kRowVector;
  const bool forward_light =
      (op == RowwiseOp::kRmsNormFwd && !residual) ||
      (op == RowwiseOp::kSoftmaxFwd && dtype == DType::kF32 && vectors <= 4 * 8192);
  if (forward_light && aligned && vectors >= 4096 && ceil_div(vectors, 8192) <= 16)
    c = {1024, 1024, pow2_at_least(ceil_div(vectors, 8192))};
  // softmax_bwd rows of 2049..4096 vectors: one CTA of 512 threads, not a
  // cluster of two of 256 (H100, 32768 rows, session 20: bf16 N = 32768 2214
  // -> 2096 us, fp32 16384 2213 -> 2096; t1024 2095 / 2095; bf16 4096 stays).
  if (op == RowwiseOp::kSoftmaxBwd && c.cluster == 2 && c.threads == 256 && vectors <= 4096)
    c = {512, 512, 1};
  // Longer softmax_bwd rows: CTAs of 1024 threads at up to 4 vectors a
  // thread, over a cluster of 2..16, not CTAs of 256 at 8 (clusters 4 times
  // as large). H100, session 22, us: bf16 16384 x 65536 2218.6 -> 2101.8,
  // fp32 32768 x 32768 4440.9 -> 4201.1, fp32 16384 x 65536 4436.0 ->
  // 4200.4, fp32 16384 x 131072 8973.3 -> 8489.9, bf16 8192 x 262144 4508.3
  // -> 4262.0 (CTAs of 512 at 8 vectors: the same within 0.1%). Rows past
  // 32768 vectors stay in clusters of 16 CTAs of 512: fp32 8192 x 262144
  // 9777 us there, 9848 in 16 of 1024 at 4 vectors (session 23).
  if (op == RowwiseOp::kSoftmaxBwd && aligned && vectors > 4096 && vectors <= 8 * 4096)
    c = {1024, 1024, pow2_at_least(ceil_div(vectors, 4096))};
  // softmax_bwd rows of 128..1024 vectors: one vector a thread (nothing
  // staged: the second pass rereads L2) in CTAs of at least 512 threads;
  // 1025..2048: two a thread in CTAs of 1024. H100, 32768 rows, session 21,
  // us: bf16 N = 1024 63.3 -> 62.3, 4096 260.5 -> 255.7, 8192 522.7 ->
  // 512.8, 16384 1059.6 -> 1046.7; fp32 1024 128.3 -> 126.0, 4096 522.6 ->
  // 512.4, 8192 1059.0 -> 1046.8.
  if (op == RowwiseOp::kSoftmaxBwd && aligned && vectors >= 128 && vectors <= 2048) {
    c.threads_per_row = vectors <= 1024 ? pow2_at_least(vectors) : 1024;
    c.threads = std::max(512, c.threads_per_row);
    c.cluster = 1;
  }
  // Shifted softmax_bwd rows of 1025..2048 vectors: one CTA of 512 threads
  // (H100, session 24, us: fp32 32768 x 4097 545.1 with 256, 536.1 with 512,
  // 569.5 with 1024; two runs: 546.9 / 547.2 -> 535.9 / 535.8).
  if (op == RowwiseOp::kSoftmaxBwd && !aligned && vectors > 1024 && vectors <= 2048)
    c = {512, 512, 1};
  // Few rows: spread each over more CTAs (keeping >= 2 vectors per thread)
  // until the grid covers the SMs.
  auto ctas = [&](const RowwiseConfig& k) { return ceil_div(m, k.rows_per_cta()) * k.cluster; };
  while (c.threads_per_row >= 32 && c.cluster < 16 && ctas(c) < sm_count) {
    RowwiseConfig wider = c;
    wider.cluster *= 2;
    if (ops::vectors_per_thread(wider, n, dtype) < 2) break;
    c = wider;
  }
  // rmsnorm_fwd CTAs of 4 rows of 16 or 32 threads: the same 4 rows from
  // half the threads, two rows each (H100, 32768 rows; session 9, bf16 N =
  // 1024: t128 r32 43.6 / 44.5 us, t64 r32 x2 42.6, t32 r32 x2 42.8; session
  // 19, 16 threads a row: bf16 N = 256 / 384 / 512 12.8 / 17.8 / 22.1 -> 12.5
  // / 16.8 / 21.2 us, fp32 128 / 256 12.45 / 21.2 -> 12.3 / 20.9).
  if (op == RowwiseOp::kRmsNormFwd && c.cluster == 1 &&
      (c.threads_per_row == 16 || c.threads_per_row == 32) && c.threads == 4 * c.threads_per_row) {
    c.threads /= 2;
    c.rows_per_thread = 2;
  }
  // cross_entropy_bwd rows of up to 256 vectors (no reduction: loads, then
  // stores): 2 vectors a thread, at most 64 threads a row, CTAs of at least
  // 128 threads. H100, 32768 rows, reduction none (session 20): bf16 N = 256
  // t64 r16 13.66 -> t128 r16 13.31 us, fp32 256 t64 r16 21.95 -> t128 r32
  // 21.39, bf16 1024 t64 r16 43.92 -> t128 r64 43.22, fp32 1024 t128 r32
  // 89.66 -> t128 r64 88.32 (t512 r64 88.06).
  if (op == RowwiseOp::kCrossEntropyBwd && c.cluster == 1 && vectors <= 256) {
    c.threads_per_row = std::min(64, pow2_at_least(ceil_div(vectors, 2)));
    c.threads = std::max(128, c.threads_per_row);
  }
  return c;
}

}  // namespace ops

RowwiseConfig rowwise_default_config(RowwiseOp op, int64_t m, int64_t n, DType dtype,
                                     int sm_count) {
  return ops::default_config(op, m, n, dtype, sm_count, false, kRowVector);
}

}  // namespace kestrel
