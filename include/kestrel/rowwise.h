// Row-wise reductions at DRAM speed: RMSNorm, softmax and cross-entropy,
// forward and backward, over the rows of [M][N] tensors (N up to 262144).
//
// Common rules:
// - Row tensors are rank 2, [M][N], innermost stride 1, any row stride (in
//   elements). fp32, bf16 or fp16; the tensors of one call share the dtype
//   unless noted. Statistics (rstd, lse, losses) are fp32, accumulation is fp32.
// - Optional tensors: pass a default-constructed TensorView ({}) to omit.
// - An output may alias the input of the same shape it replaces (y = x,
//   dx = dy, h = residual, dlogits = logits: same pointer and strides); other
//   overlaps are undefined.
// - Results are deterministic: two calls with the same inputs are bitwise equal
//   (every reduction, including dweight and the summed losses, runs in a fixed
//   order; no atomics).
// - Rows are read from DRAM once: a row lives in registers and shared memory of
//   one CTA, or of a cluster of up to 16 CTAs that exchange partial statistics
//   through distributed shared memory.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kestrel/status.h"
#include "kestrel/tensor.h"

namespace kestrel {

constexpr int64_t kRowwiseMaxN = 262144;

enum class RowwiseOp {
  kRmsNormFwd,
  kRmsNormBwd,
  kSoftmaxFwd,
  kSoftmaxBwd,
  kCrossEntropyFwd,
  kCrossEntropyBwd,
};
const char* rowwise_op_name(RowwiseOp op);  // "rmsnorm_fwd", ...

// How a row is spread over the GPU (for tuning). A call given none takes the
// tuning table's configuration for its GPU, op, dtype, N, row alignment and
// options (the tables shipped in the library, under the entries of the file
// $KESTREL_TUNING_TABLE names, written by `kestrel tune --save`; each file
// read once per process; "none" turns every table off), where the table has
// one and the call's rows fill the GPU with it; else the heuristic's.
// A CTA of `threads` threads holds threads / threads_per_row rows; a row is
// split over `cluster` CTAs (cross_entropy_bwd, which reduces nothing, splits
// over independent CTAs).
// Each thread then holds ceil(N / (cluster * threads_per_row * vec)) 16-byte
// vectors of the row (vec = 16 / element size), which must be at most 16.
// rmsnorm_bwd may instead split a row over a group of `cluster` ordinary CTAs
// that exchange through L2 (`l2_group`): its persistent grid then fills every
// SM, where clusters of 16 fit on 112 of an H100's 132.
struct RowwiseConfig {
  int threads = 256;          // 32 .. 1024, a power of two (rmsnorm_bwd: >= 128)
  int threads_per_row = 256;  // a power of two <= threads
  int cluster = 1;            // 1, 2, 4, 8 or 16; > 1 needs threads_per_row >= 32
  bool l2_group = false;      // rmsnorm_bwd, cluster > 1: a co-resident group, not a cluster
  // Rows each thread holds, all loaded before the first reduction, which
  // reduces them together: rmsnorm_fwd / softmax_fwd with cluster 1 and
  // threads_per_row <= 32 (1, 2, 4 or 8, at most threads_per_row); rmsnorm_bwd
  // (1, 2 or 4).
  int rows_per_thread = 1;

  // Rows one CTA (one cluster rank) covers: threads / threads_per_row per pass, each thread
  // holding rows_per_thread of them.
  int rows_per_cta() const { return threads / threads_per_row * rows_per_thread; }
  std::string describe() const;  // "t256 r64 c1"; "t1024 r1024 g16" (L2 group); "t64 r16 c1 x4"
};

// Every configuration that can run `op` on rows of n elements of `dtype`.
std::vector<RowwiseConfig> rowwise_config_space(RowwiseOp op, int64_t n, DType dtype);
// The heuristic pick for [m][n] rows that start 16-byte aligned (rmsnorm_fwd:
// without the fused residual) on a GPU with `sm_count` SMs.
RowwiseConfig rowwise_default_config(RowwiseOp op, int64_t m, int64_t n, DType dtype, int sm_count);

// Device scratch memory handed to a call. Without one (data == nullptr) the
// call allocates what it needs with cudaMallocAsync on its stream and frees it
// with cudaFreeAsync after its kernels: stream-ordered, so concurrent calls on
// different streams never share scratch, and CUDA-graph capturable. Pass one
// (16-byte aligned, at least the *_workspace_bytes size) to avoid the
// allocator, e.g. inside a graph that is replayed many times.
struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
};

// ---- RMSNorm ----
struct RmsNormOptions {
  float eps = 1e-6f;
  const RowwiseConfig* config = nullptr;  // nullptr: tuning table or heuristic
  Workspace workspace;                    // rmsnorm_bwd with a weight only
};

// y = x * rstd * weight, rstd = 1 / sqrt(mean_j(x_j^2) + eps).
//   x, y: [M][N]; weight: [N] (fp32/bf16/fp16, optional: ones);
//   rstd: [M] fp32, contiguous (optional; what rmsnorm_bwd takes).
Status rmsnorm_fwd(const TensorView& x, const TensorView& weight, const TensorView& y,
                   const TensorView& rstd, cudaStream_t stream, const RmsNormOptions& opt = {});

// The fused residual form of a pre-norm block: h = x + residual (rounded to
// the dtype), y = rmsnorm(h). h and residual: [M][N] like x. In-place use:
// h = residual and y = x.
Status rmsnorm_fwd_residual(const TensorView& x, const TensorView& residual,
                            const TensorView& weight, const TensorView& y, const TensorView& h,
                            const TensorView& rstd, cudaStream_t stream,
                            const RmsNormOptions& opt = {});

// From the forward's x, weight and rstd and the upstream dy:
//   dx = rstd * (g - xhat * mean_j(g_j xhat_j)), g = dy * weight, xhat = x * rstd;
//   dweight = sum over rows of dy * xhat, accumulated in fp32 in a fixed order
//   (dweight: [N], fp32/bf16/fp16; required exactly when weight is given).
Status rmsnorm_bwd(const TensorView& dy, const TensorView& x, const TensorView& weight,
                   const TensorView& rstd, const TensorView& dx, const TensorView& dweight,
                   cudaStream_t stream, const RmsNormOptions& opt = {});
// Scratch bytes rmsnorm_bwd needs for these shapes (0 without a weight).
Status rmsnorm_bwd_workspace_bytes(int64_t m, int64_t n, DType dtype, bool has_weight,
                                   size_t* bytes, const RowwiseConfig* config = nullptr);

// ---- Softmax ----
// y = softmax(x) along rows. A row of -inf gives NaN, as in PyTorch.
Status softmax_fwd(const TensorView& x, const TensorView& y, cudaStream_t stream,
                   const RowwiseConfig* config = nullptr);
// dx = y * (dy - sum_j dy_j y_j).
Status softmax_bwd(const TensorView& dy, const TensorView& y, const TensorView& dx,
                   cudaStream_t stream, const RowwiseConfig* config = nullptr);

// ---- Cross-entropy (torch.nn.functional.cross_entropy semantics) ----
enum class Reduction { kNone, kSum, kMean };

struct CrossEntropyOptions {
  int64_t ignore_index = -100;
  float label_smoothing = 0.0f;  // in [0, 1]
  Reduction reduction = Reduction::kMean;
  const RowwiseConfig* config = nullptr;
  Workspace workspace;  // reduction sum/mean only
  // Reduction mean, optional: [1] fp32, torch's total_weight, the number of
  // rows whose target is not ignore_index. The forward writes it; the
  // backward, given it, reads it instead of counting the targets again (a
  // kernel ahead of the gradient's: ~3 us at 32768 rows on H100).
  TensorView total_weight;
};

// logits: [M][V]; target: [M] int64, contiguous, each in [0, V) or
// ignore_index (any other value gives a NaN loss, where PyTorch raises);
// loss: fp32, [M] for kNone, [1] otherwise (mean over non-ignored rows: NaN if
// all are ignored); lse: [M] fp32, contiguous, log-sum-exp of every row (for
// the backward).
Status cross_entropy_fwd(const TensorView& logits, const TensorView& target, const TensorView& loss,
                         const TensorView& lse, cudaStream_t stream,
                         const CrossEntropyOptions& opt = {});
// dloss: fp32, [M] for kNone, [1] otherwise; dlogits: [M][V] like logits (may
// be the logits themselves). Ignored rows get zero gradients.
Status cross_entropy_bwd(const TensorView& dloss, const TensorView& logits,
                         const TensorView& target, const TensorView& lse, const TensorView& dlogits,
                         cudaStream_t stream, const CrossEntropyOptions& opt = {});
// Scratch bytes either cross-entropy call needs (0 for kNone).
size_t cross_entropy_workspace_bytes(int64_t m, Reduction reduction);

}  // namespace kestrel
