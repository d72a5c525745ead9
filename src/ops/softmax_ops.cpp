// Host side of softmax forward and backward: validate, plan, launch
// kernels/softmax.cuh.
#include "kestrel/rowwise.h"
#include "ops/rowwise_plan.h"
#include "runtime/launcher.h"

namespace kestrel {
namespace {

struct SoftmaxFwdParams {  // mirrors kernels/softmax.cuh
  const void* x;
  long long x_row;
  void* y;
  long long y_row;
  long long m;
  int n;
};

struct SoftmaxBwdParams {  // mirrors kernels/softmax.cuh
  const void* dy;
  long long dy_row;
  const void* y;
  long long y_row;
  void* dx;
  long long dx_row;
  long long m;
  int n;
};

}  // namespace

Status softmax_fwd(const TensorView& x, const TensorView& y, cudaStream_t stream,
                   const RowwiseConfig* config) {
  using namespace ops;
  KESTREL_RETURN_IF_ERROR(check_rows(x, "x"));
  KESTREL_RETURN_IF_ERROR(check_rows_like(x, "x", y, "y"));
  const int64_t m = x.shape[0], n = x.shape[1];
  if (m == 0) return Status::Ok();
  RowPlan plan;
  KESTREL_RETURN_IF_ERROR(
      plan_rows(RowwiseOp::kSoftmaxFwd, m, n, x.dtype, config, row_access({x, y}, true), &plan));
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get(rowwise_kernel_spec(RowwiseOp::kSoftmaxFwd, x.dtype, plan), &kernel));
  const SoftmaxFwdParams p{x.data, x.stride[0], y.data, y.stride[0], m, int(n)};
  return kernel(plan.shape(plan.row_groups(m)), stream, p);
}

Status softmax_bwd(const TensorView& dy, const TensorView& y, const TensorView& dx,
                   cudaStream_t stream, const RowwiseConfig* config) {
  using namespace ops;
  KESTREL_RETURN_IF_ERROR(check_rows(dy, "dy"));
  KESTREL_RETURN_IF_ERROR(check_rows_like(dy, "dy", y, "y"));
  KESTREL_RETURN_IF_ERROR(check_rows_like(dy, "dy", dx, "dx"));
  const int64_t m = dy.shape[0], n = dy.shape[1];
  if (m == 0) return Status::Ok();
  RowPlan plan;
  KESTREL_RETURN_IF_ERROR(plan_rows(RowwiseOp::kSoftmaxBwd, m, n, dy.dtype, config,
                                    row_access({dy, y, dx}, true), &plan));
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get(rowwise_kernel_spec(RowwiseOp::kSoftmaxBwd, dy.dtype, plan), &kernel));
  const SoftmaxBwdParams p{dy.data, dy.stride[0], y.data, y.stride[0],
                           dx.data, dx.stride[0], m,      int(n)};
  return kernel(plan.shape(plan.row_groups(m)), stream, p);
}

}  // namespace kestrel
