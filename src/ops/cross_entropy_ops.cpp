// Host side of cross-entropy forward and backward: validate, plan, launch
// kernels/cross_entropy.cuh (plus its fixed-order finishing kernel for the
// forward's sum/mean and its count of kept rows for the backward's mean).
#include <algorithm>
#include <string>

#include "kestrel/rowwise.h"
#include "ops/rowwise_plan.h"
#include "ops/scratch.h"
#include "ops/validate.h"
#include "runtime/launcher.h"

namespace kestrel {
namespace {

struct XentFwdParams {  // mirrors kernels/cross_entropy.cuh
  const void* logits;
  long long row_stride;
  const long long* target;
  long long ignore_index;
  float smoothing;
  float* lse;
  float* loss;
  long long m;
  int n;
};

struct XentBwdParams {  // mirrors kernels/cross_entropy.cuh
  const void* logits;
  long long logits_row;
  void* dlogits;
  long long dlogits_row;
  const long long* target;
  long long ignore_index;
  float smoothing;
  const float* lse;
  const float* grad;
  long long grad_stride;
  const float* kept;
  int kept_parts;
  long long m;
  int n;
};

// Checks shared by both directions; `scalar_name` is the tensor that is [M]
// for kNone and [1] otherwise (loss or dloss).
Status check_common(const TensorView& logits, const TensorView& target, const TensorView& lse,
                    const TensorView& scalar, const char* scalar_name,
                    const CrossEntropyOptions& opt) {
  using namespace ops;
  KESTREL_RETURN_IF_ERROR(check_rows(logits, "logits"));
  const int64_t m = logits.shape[0];
  KESTREL_RETURN_IF_ERROR(check_vector(target, "target", m, DType::kI64));
  KESTREL_RETURN_IF_ERROR(check_vector(lse, "lse", m, DType::kF32));
  KESTREL_RETURN_IF_ERROR(
      check_vector(scalar, scalar_name, opt.reduction == Reduction::kNone ? m : 1, DType::kF32));
  if (opt.total_weight.data != nullptr) {
    if (opt.reduction != Reduction::kMean)
      return Status::InvalidArgument("opt.total_weight: only reduction mean has one");
    KESTREL_RETURN_IF_ERROR(check_vector(opt.total_weight, "opt.total_weight", 1, DType::kF32));
  }
  if (!(opt.label_smoothing >= 0.0f && opt.label_smoothing <= 1.0f))
    return Status::InvalidArgument("opt.label_smoothing: must be in [0, 1], got " +
                                   std::to_string(opt.label_smoothing));
  return Status::Ok();
}

constexpr int kXentCountParts = 8;  // mirrors kernels/cross_entropy.cuh

// Forward sum/mean: xent_finish_kernel, the forward's programmatic dependent,
// sums the row losses (divided by the kept rows for mean) into loss[0].
Status finish_forward(const float* row_loss, const TensorView& target, int64_t m,
                      const CrossEntropyOptions& opt, float* out, cudaStream_t stream) {
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get({"cross_entropy.cuh", "kestrel::xent_finish_kernel", {}}, &kernel));
  rt::LaunchShape shape;
  shape.block = dim3(1024);
  shape.overlap_previous = true;
  return kernel(shape, stream, row_loss, static_cast<const long long*>(target.data),
                static_cast<long long>(m), static_cast<long long>(opt.ignore_index),
                opt.reduction == Reduction::kMean, out, static_cast<float*>(opt.total_weight.data));
}

// Backward mean: the kept rows counted in kXentCountParts parts.
Status count_kept(const TensorView& target, int64_t m, const CrossEntropyOptions& opt,
                  float* parts, cudaStream_t stream) {
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get({"cross_entropy.cuh", "kestrel::xent_count_kernel", {}}, &kernel));
  rt::LaunchShape shape;
  shape.grid = dim3(kXentCountParts);
  shape.block = dim3(1024);
  return kernel(shape, stream, static_cast<const long long*>(target.data),
                static_cast<long long>(m), static_cast<long long>(opt.ignore_index), parts);
}

// What a tuned configuration is keyed on besides the rows: the smoothed loss
// adds a sum of the logits.
ops::RowVariant tuning_variant(const CrossEntropyOptions& opt) {
  ops::RowVariant v;
  v.smoothing = opt.label_smoothing != 0.0f;
  return v;
}

}  // namespace

size_t cross_entropy_workspace_bytes(int64_t m, Reduction reduction) {
  // Forward: the row losses; backward mean: the count's parts.
  return reduction == Reduction::kNone
             ? 0
             : size_t(std::max<int64_t>(m, kXentCountParts)) * sizeof(float);
}

Status cross_entropy_fwd(const TensorView& logits, const TensorView& target, const TensorView& loss,
                         const TensorView& lse, cudaStream_t stream,
                         const CrossEntropyOptions& opt) {
  using namespace ops;
  KESTREL_RETURN_IF_ERROR(check_common(logits, target, lse, loss, "loss", opt));
  const int64_t m = logits.shape[0], v = logits.shape[1];
  const bool reduce = opt.reduction != Reduction::kNone;
  Scratch scratch;
  KESTREL_RETURN_IF_ERROR(scratch.acquire(
      opt.workspace, cross_entropy_workspace_bytes(m, opt.reduction), stream, "opt.workspace"));
  float* row_loss = reduce ? static_cast<float*>(scratch.get()) : static_cast<float*>(loss.data);
  if (m > 0) {
    RowPlan plan;
    KESTREL_RETURN_IF_ERROR(plan_rows(RowwiseOp::kCrossEntropyFwd, m, v, logits.dtype, opt.config,
                                      row_access({logits}, true), &plan, tuning_variant(opt)));
    rt::Kernel kernel;
    KESTREL_RETURN_IF_ERROR(rt::Kernel::get(
        rowwise_kernel_spec(RowwiseOp::kCrossEntropyFwd, logits.dtype, plan), &kernel));
    const XentFwdParams p{logits.data,
                          logits.stride[0],
                          static_cast<const long long*>(target.data),
                          static_cast<long long>(opt.ignore_index),
                          opt.label_smoothing,
                          static_cast<float*>(lse.data),
                          row_loss,
                          m,
                          int(v)};
    KESTREL_RETURN_IF_ERROR(kernel(plan.shape(plan.row_groups(m)), stream, p));
  }
  if (!reduce) return Status::Ok();
  return finish_forward(row_loss, target, m, opt, static_cast<float*>(loss.data), stream);
}

Status cross_entropy_bwd(const TensorView& dloss, const TensorView& logits,
                         const TensorView& target, const TensorView& lse, const TensorView& dlogits,
                         cudaStream_t stream, const CrossEntropyOptions& opt) {
  using namespace ops;
  KESTREL_RETURN_IF_ERROR(check_common(logits, target, lse, dloss, "dloss", opt));
  KESTREL_RETURN_IF_ERROR(check_rows_like(logits, "logits", dlogits, "dlogits"));
  const int64_t m = logits.shape[0], v = logits.shape[1];
  if (m == 0) return Status::Ok();
  RowPlan plan;
  KESTREL_RETURN_IF_ERROR(plan_rows(RowwiseOp::kCrossEntropyBwd, m, v, logits.dtype, opt.config,
                                    row_access({logits, dlogits}, true), &plan,
                                    tuning_variant(opt)));
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(
      rowwise_kernel_spec(RowwiseOp::kCrossEntropyBwd, logits.dtype, plan), &kernel));
  // Row i's gradient scale: dloss[i] (none), dloss[0] (sum), dloss[0] / kept
  // (mean: kept from the forward's total_weight, or counted here in parts).
  Scratch scratch;
  const float* kept = static_cast<const float*>(opt.total_weight.data);
  int kept_parts = 1;
  if (opt.reduction == Reduction::kMean && kept == nullptr) {
    KESTREL_RETURN_IF_ERROR(scratch.acquire(
        opt.workspace, cross_entropy_workspace_bytes(m, opt.reduction), stream, "opt.workspace"));
    float* parts = static_cast<float*>(scratch.get());
    KESTREL_RETURN_IF_ERROR(count_kept(target, m, opt, parts, stream));
    kept = parts;
    kept_parts = kXentCountParts;
  }
  const XentBwdParams p{logits.data,
                        logits.stride[0],
                        dlogits.data,
                        dlogits.stride[0],
                        static_cast<const long long*>(target.data),
                        static_cast<long long>(opt.ignore_index),
                        opt.label_smoothing,
                        static_cast<const float*>(lse.data),
                        static_cast<const float*>(dloss.data),
                        opt.reduction == Reduction::kNone ? 1 : 0,
                        kept,
                        kept_parts,
                        m,
                        int(v)};
  rt::LaunchShape shape = plan.shape(plan.row_groups(m), /*cluster_launch=*/false);
  shape.overlap_previous = kept_parts > 1;  // loads rows while the count runs
  return kernel(shape, stream, p);
}

}  // namespace kestrel
