// include/kestrel/c_api.h, the row-wise ops: each call builds dense views and
// forwards to the C++ API.
#include <string>

#include "c_api/c_api_common.h"
#include "kestrel/c_api.h"
#include "kestrel/rowwise.h"

namespace kestrel {
namespace {

using namespace c_api;

static_assert(int(Reduction::kNone) == KESTREL_REDUCTION_NONE &&
              int(Reduction::kSum) == KESTREL_REDUCTION_SUM &&
              int(Reduction::kMean) == KESTREL_REDUCTION_MEAN);

Status reduction_of(int code, Reduction* out) {
  if (code < KESTREL_REDUCTION_NONE || code > KESTREL_REDUCTION_MEAN)
    return Status::InvalidArgument(
        "reduction: must be KESTREL_REDUCTION_NONE, _SUM or _MEAN, got " + std::to_string(code));
  *out = Reduction(code);
  return Status::Ok();
}

Status rmsnorm_fwd_c(const void* x, const void* residual, const void* weight, int weight_dtype,
                     void* y, void* h, float* rstd, int64_t m, int64_t n, int dtype, float eps,
                     void* stream) {
  DType t, wt = DType::kF32;
  KESTREL_RETURN_IF_ERROR(dtype_of(dtype, "dtype", &t));
  if (weight) KESTREL_RETURN_IF_ERROR(dtype_of(weight_dtype, "weight_dtype", &wt));
  RmsNormOptions opt;
  opt.eps = eps;
  const TensorView w = view(weight, wt, {n}), r = view(rstd, DType::kF32, {m});
  if (residual)
    return rmsnorm_fwd_residual(view(x, t, {m, n}), view(residual, t, {m, n}), w,
                                view(y, t, {m, n}), view(h, t, {m, n}), r, stream_of(stream), opt);
  if (h) return Status::InvalidArgument("h: given without a residual");
  return rmsnorm_fwd(view(x, t, {m, n}), w, view(y, t, {m, n}), r, stream_of(stream), opt);
}

Status rmsnorm_bwd_c(const void* dy, const void* x, const void* weight, int weight_dtype,
                     const float* rstd, void* dx, void* dweight, int dweight_dtype, int64_t m,
                     int64_t n, int dtype, void* stream) {
  DType t, wt = DType::kF32, dwt = DType::kF32;
  KESTREL_RETURN_IF_ERROR(dtype_of(dtype, "dtype", &t));
  if (weight) KESTREL_RETURN_IF_ERROR(dtype_of(weight_dtype, "weight_dtype", &wt));
  if (dweight) KESTREL_RETURN_IF_ERROR(dtype_of(dweight_dtype, "dweight_dtype", &dwt));
  return rmsnorm_bwd(view(dy, t, {m, n}), view(x, t, {m, n}), view(weight, wt, {n}),
                     view(rstd, DType::kF32, {m}), view(dx, t, {m, n}), view(dweight, dwt, {n}),
                     stream_of(stream));
}

CrossEntropyOptions xent_options(int64_t ignore_index, float smoothing, Reduction reduction,
                                 const float* total_weight) {
  CrossEntropyOptions opt;
  opt.ignore_index = ignore_index;
  opt.label_smoothing = smoothing;
  opt.reduction = reduction;
  opt.total_weight = view(total_weight, DType::kF32, {1});
  return opt;
}

}  // namespace
}  // namespace kestrel

using namespace kestrel;

extern "C" {

int kestrel_rmsnorm_fwd(const void* x, const void* residual, const void* weight, int weight_dtype,
                        void* y, void* h, float* rstd, int64_t m, int64_t n, int dtype, float eps,
                        void* stream) {
  return report(
      rmsnorm_fwd_c(x, residual, weight, weight_dtype, y, h, rstd, m, n, dtype, eps, stream));
}

int kestrel_rmsnorm_bwd(const void* dy, const void* x, const void* weight, int weight_dtype,
                        const float* rstd, void* dx, void* dweight, int dweight_dtype, int64_t m,
                        int64_t n, int dtype, void* stream) {
  return report(rmsnorm_bwd_c(dy, x, weight, weight_dtype, rstd, dx, dweight, dweight_dtype, m, n,
                              dtype, stream));
}

int kestrel_softmax_fwd(const void* x, void* y, int64_t m, int64_t n, int dtype, void* stream) {
  DType t;
  Status s = dtype_of(dtype, "dtype", &t);
  if (s.ok()) s = softmax_fwd(view(x, t, {m, n}), view(y, t, {m, n}), stream_of(stream));
  return report(s);
}

int kestrel_softmax_bwd(const void* dy, const void* y, void* dx, int64_t m, int64_t n, int dtype,
                        void* stream) {
  DType t;
  Status s = dtype_of(dtype, "dtype", &t);
  if (s.ok())
    s = softmax_bwd(view(dy, t, {m, n}), view(y, t, {m, n}), view(dx, t, {m, n}),
                    stream_of(stream));
  return report(s);
}

int kestrel_cross_entropy_fwd(const void* logits, const int64_t* target, float* loss, float* lse,
                              float* total_weight, int64_t m, int64_t v, int dtype,
                              int64_t ignore_index, float label_smoothing, int reduction,
                              void* stream) {
  DType t;
  Reduction red;
  Status s = dtype_of(dtype, "dtype", &t);
  if (s.ok()) s = reduction_of(reduction, &red);
  if (s.ok())
    s = cross_entropy_fwd(view(logits, t, {m, v}), view(target, DType::kI64, {m}),
                          view(loss, DType::kF32, {red == Reduction::kNone ? m : 1}),
                          view(lse, DType::kF32, {m}), stream_of(stream),
                          xent_options(ignore_index, label_smoothing, red, total_weight));
  return report(s);
}

int kestrel_cross_entropy_bwd(const float* dloss, const void* logits, const int64_t* target,
                              const float* lse, const float* total_weight, void* dlogits, int64_t m,
                              int64_t v, int dtype, int64_t ignore_index, float label_smoothing,
                              int reduction, void* stream) {
  DType t;
  Reduction red;
  Status s = dtype_of(dtype, "dtype", &t);
  if (s.ok()) s = reduction_of(reduction, &red);
  if (s.ok())
    s = cross_entropy_bwd(view(dloss, DType::kF32, {red == Reduction::kNone ? m : 1}),
                          view(logits, t, {m, v}), view(target, DType::kI64, {m}),
                          view(lse, DType::kF32, {m}), view(dlogits, t, {m, v}), stream_of(stream),
                          xent_options(ignore_index, label_smoothing, red, total_weight));
  return report(s);
}

}  // extern "C"
