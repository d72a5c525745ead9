// Host side of RMSNorm forward (plain and fused residual) and backward:
// validate, plan, launch kernels/rmsnorm.cuh.
#include <algorithm>
#include <cmath>
#include <string>

#include "kestrel/rowwise.h"
#include "ops/rowwise_config.h"
#include "ops/rowwise_plan.h"
#include "ops/scratch.h"
#include "ops/validate.h"
#include "runtime/cuda_check.h"
#include "runtime/launcher.h"
#include "runtime/scratch.h"

namespace kestrel {
namespace {

using ops::present;

struct RmsNormFwdParams {  // mirrors kernels/rmsnorm.cuh
  long long m;
  int n;
  float eps;
  const void* x;
  long long x_row;
  const void* w;
  void* y;
  long long y_row;
  float* rstd;
  const void* residual;
  long long residual_row;
  void* h;
  long long h_row;
};

struct RmsNormBwdParams {  // mirrors kernels/rmsnorm.cuh
  const void* dy;
  long long dy_row;
  const void* x;
  long long x_row;
  const void* w;
  const float* rstd;
  void* dx;
  long long dx_row;
  float* dw_partial;
  long long dw_stride;
  long long m;
  int n;
  float* group_slots;
  unsigned* group_counters;
};

long long row_stride(const TensorView& t) { return present(t) ? t.stride[0] : 0; }

Status check_weight(const TensorView& w, const char* name, int64_t n) {
  KESTREL_RETURN_IF_ERROR(ops::check_dtype(w, {DType::kF32, DType::kBF16, DType::kF16}, name));
  return ops::check_vector(w, name, n, w.dtype);
}

Status fwd(const TensorView& x, const TensorView& residual, const TensorView& weight,
           const TensorView& y, const TensorView& h, const TensorView& rstd, cudaStream_t stream,
           const RmsNormOptions& opt) {
  using namespace ops;
  KESTREL_RETURN_IF_ERROR(check_rows(x, "x"));
  const int64_t m = x.shape[0], n = x.shape[1];
  KESTREL_RETURN_IF_ERROR(check_rows_like(x, "x", y, "y"));
  if (present(residual)) {
    KESTREL_RETURN_IF_ERROR(check_rows_like(x, "x", residual, "residual"));
    KESTREL_RETURN_IF_ERROR(check_rows_like(x, "x", h, "h"));
  }
  if (present(weight)) KESTREL_RETURN_IF_ERROR(check_weight(weight, "weight", n));
  if (present(rstd)) KESTREL_RETURN_IF_ERROR(check_vector(rstd, "rstd", m, DType::kF32));
  if (!(opt.eps >= 0.0f) || std::isinf(opt.eps))
    return Status::InvalidArgument("opt.eps: must be finite and >= 0, got " +
                                   std::to_string(opt.eps));
  if (m == 0) return Status::Ok();

  const RowVariant variant{present(residual), present(weight), weight.dtype};
  // Rows misaligned alike may take the shifted path whatever the weight's
  // alignment: under a shift the kernel reads the weight element by element.
  RowAccess access = row_access({x, y, residual, h, weight}, false);
  if (access == kRowElementwise && row_access({x, y, residual, h}, true) == kRowShifted)
    access = kRowShifted;
  RowPlan plan;
  KESTREL_RETURN_IF_ERROR(
      plan_rows(RowwiseOp::kRmsNormFwd, m, n, x.dtype, opt.config, access, &plan, variant));
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(
      rowwise_kernel_spec(RowwiseOp::kRmsNormFwd, x.dtype, plan, variant), &kernel));
  const RmsNormFwdParams p{m,
                           int(n),
                           opt.eps,
                           x.data,
                           row_stride(x),
                           weight.data,
                           y.data,
                           row_stride(y),
                           static_cast<float*>(rstd.data),
                           residual.data,
                           row_stride(residual),
                           h.data,
                           row_stride(h)};
  return kernel(plan.shape(plan.row_groups(m)), stream, p);
}

// The bwd kernel, and how many clusters (or L2 groups) its persistent grid
// runs (all that fit on the GPU at once, at most one per row group).
struct BwdLaunch {
  ops::RowPlan plan;
  rt::Kernel kernel;
  int64_t clusters = 0;
  size_t workspace_bytes = 0;  // partial rows of dweight, one per cluster
  long long dw_stride = 0;
  size_t slots = 0;  // the L2 groups' exchange slots (kernels/common/reduce.cuh)
};

rt::KernelSpec bwd_spec(const ops::RowPlan& plan, DType t, const DType* w) {
  return ops::rowwise_kernel_spec(RowwiseOp::kRmsNormBwd, t, plan,
                                  {false, w != nullptr, w ? *w : t});
}

Status plan_bwd(int64_t m, int64_t n, DType t, const DType* w, RowAccess access,
                const RowwiseConfig* config, BwdLaunch* out) {
  KESTREL_RETURN_IF_ERROR(
      ops::plan_rows(RowwiseOp::kRmsNormBwd, m, n, t, config, access, &out->plan,
                     {false, w != nullptr}));
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(bwd_spec(out->plan, t, w), &out->kernel));
  const int64_t groups = out->plan.row_groups(m);
  const RowwiseConfig& cfg = out->plan.cfg;
  const std::string no_fit =
      "config " + cfg.describe() + ": a CTA group of this shape does not fit on the GPU";
  int fit = 0;
  if (w == nullptr && !cfg.l2_group) {
    // No workspace depends on the grid here. Rows split over a cluster, and
    // short rows, stay persistent: one cluster per row group, each exiting
    // after its row, ran bf16 8192 x 262144 at 67.6% of the copy bandwidth
    // (H100), the persistent grid at 84%. Rows of at least 256 vectors in
    // one CTA run faster as one CTA per row group (hardware-scheduled, no
    // staging of the next group behind the current one; H100, 32768 rows,
    // session 21, us: bf16 4096 278 -> 264, 16384 1090 -> 1034, fp32 1024
    // 134 -> 132, 4096 559 -> 530, 16384 2174 -> 2094; bf16 1024 (128
    // vectors) ties, N = 256 and clusters of 2 lose up to 2%).
    KESTREL_RETURN_IF_ERROR(out->kernel.max_active_clusters(out->plan.shape(1), &fit));
    if (fit < 1) return Status::Unsupported(no_fit);
    // The rereading kernel (rmsnorm_bwd_l2_kernel) takes one row group per
    // CTA (or cluster) by construction: it must get them all.
    const bool one_pass = (cfg.cluster == 1 && n >= 256 * ops::elements_per_vector(t)) ||
                          ops::rowwise_rereads(RowwiseOp::kRmsNormBwd, cfg, out->plan.vpt, false);
    out->clusters = one_pass ? groups : std::min<int64_t>(groups, fit);
    return Status::Ok();
  }
  // Size the workspace by the occupancy of one fixed variant (16-byte path,
  // weight of dtype t: the common case, so usually the kernel itself), so
  // that it depends on (m, n, dtype, config) only.
  ops::RowPlan aligned_plan = out->plan;
  aligned_plan.access = kRowVector;
  rt::Kernel probe;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(bwd_spec(aligned_plan, t, &t), &probe));
  // An L2 group is `cluster` CTAs of a cooperative grid (occupancy in CTAs).
  const int per_group = cfg.l2_group ? cfg.cluster : 1;
  KESTREL_RETURN_IF_ERROR(probe.max_active_clusters(aligned_plan.shape(1), &fit));
  const int64_t bound = std::min<int64_t>(groups, fit / per_group);
  if (bound < 1) return Status::Unsupported(no_fit);
  out->clusters = bound;
  if (cfg.l2_group) {  // every CTA must be resident: the kernel's own occupancy
    KESTREL_RETURN_IF_ERROR(out->kernel.max_active_clusters(out->plan.shape(1), &fit));
    out->clusters = std::min<int64_t>(bound, fit / per_group);
    if (out->clusters < 1) return Status::Unsupported(no_fit);
  }
  out->dw_stride = w ? (n + 3) / 4 * 4 : 0;
  out->workspace_bytes = size_t(bound) * size_t(out->dw_stride) * sizeof(float);
  if (cfg.l2_group)
    out->slots = size_t(out->clusters) * 2 * size_t(cfg.rows_per_cta()) * size_t(cfg.cluster);
  return Status::Ok();
}

}  // namespace

Status rmsnorm_fwd(const TensorView& x, const TensorView& weight, const TensorView& y,
                   const TensorView& rstd, cudaStream_t stream, const RmsNormOptions& opt) {
  return fwd(x, {}, weight, y, {}, rstd, stream, opt);
}

Status rmsnorm_fwd_residual(const TensorView& x, const TensorView& residual,
                            const TensorView& weight, const TensorView& y, const TensorView& h,
                            const TensorView& rstd, cudaStream_t stream,
                            const RmsNormOptions& opt) {
  if (!present(residual)) return Status::InvalidArgument("residual: is required");
  return fwd(x, residual, weight, y, h, rstd, stream, opt);
}

Status rmsnorm_bwd(const TensorView& dy, const TensorView& x, const TensorView& weight,
                   const TensorView& rstd, const TensorView& dx, const TensorView& dweight,
                   cudaStream_t stream, const RmsNormOptions& opt) {
  using namespace ops;
  KESTREL_RETURN_IF_ERROR(check_rows(dy, "dy"));
  const int64_t m = dy.shape[0], n = dy.shape[1];
  KESTREL_RETURN_IF_ERROR(check_rows_like(dy, "dy", x, "x"));
  KESTREL_RETURN_IF_ERROR(check_rows_like(dy, "dy", dx, "dx"));
  KESTREL_RETURN_IF_ERROR(check_vector(rstd, "rstd", m, DType::kF32));
  if (present(weight) != present(dweight))
    return Status::InvalidArgument(present(weight) ? "dweight: is required when weight is given"
                                                   : "dweight: must be omitted without weight");
  if (present(weight)) {
    KESTREL_RETURN_IF_ERROR(check_weight(weight, "weight", n));
    KESTREL_RETURN_IF_ERROR(check_weight(dweight, "dweight", n));
  }
  const DType* wt = present(weight) ? &weight.dtype : nullptr;
  BwdLaunch l;
  if (m == 0) {
    if (!wt) return Status::Ok();
    // dweight of no rows is zero.
    KESTREL_CUDA_RETURN(
        cudaMemsetAsync(dweight.data, 0, size_t(n * dtype_size(dweight.dtype)), stream));
    return Status::Ok();
  }
  KESTREL_RETURN_IF_ERROR(
      plan_bwd(m, n, dy.dtype, wt, row_access({dy, x, dx, weight}, false), opt.config, &l));
  Scratch scratch;
  KESTREL_RETURN_IF_ERROR(
      scratch.acquire(opt.workspace, l.workspace_bytes, stream, "opt.workspace"));
  // The L2 groups' counters (two per group), then their slots (16-byte
  // aligned: a tuple of up to 4 floats each): zero, and left zero.
  unsigned* counters = nullptr;
  const size_t counter_words = (size_t(l.clusters) * 2 + 3) / 4 * 4;
  if (l.slots) {
    void* zeroed = nullptr;
    KESTREL_RETURN_IF_ERROR(rt::stream_workspace(stream, (counter_words + l.slots) * 4, &zeroed,
                                                 rt::WorkspaceUse::kCounters));
    counters = static_cast<unsigned*>(zeroed);
  }
  const RmsNormBwdParams p{dy.data,
                           row_stride(dy),
                           x.data,
                           row_stride(x),
                           weight.data,
                           static_cast<const float*>(rstd.data),
                           dx.data,
                           row_stride(dx),
                           static_cast<float*>(scratch.get()),
                           l.dw_stride,
                           m,
                           int(n),
                           counters ? reinterpret_cast<float*>(counters + counter_words) : nullptr,
                           counters};
  KESTREL_RETURN_IF_ERROR(l.kernel(l.plan.shape(l.clusters), stream, p));
  if (!wt) return Status::Ok();

  rt::Kernel sum;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get({"rmsnorm.cuh",
                       std::string("kestrel::column_sum_kernel<") + cuda_type(dweight.dtype) + ">",
                       {}},
                      &sum));
  rt::LaunchShape shape;
  shape.grid = dim3(unsigned((n + 31) / 32));
  shape.block = dim3(32, 8);
  return sum(shape, stream, static_cast<const float*>(scratch.get()), l.dw_stride, int(l.clusters),
             int(n), dweight.data);
}

Status rmsnorm_bwd_workspace_bytes(int64_t m, int64_t n, DType dtype, bool has_weight,
                                   size_t* bytes, const RowwiseConfig* config) {
  *bytes = 0;
  if (!has_weight || m <= 0) return Status::Ok();
  if (n < 1 || n > kRowwiseMaxN)
    return Status::InvalidArgument("n: must be in [1, " + std::to_string(kRowwiseMaxN) + "], got " +
                                   std::to_string(n));
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16)
    return Status::InvalidArgument(std::string("dtype: must be fp32|bf16|fp16, got ") +
                                   dtype_name(dtype));
  BwdLaunch l;
  KESTREL_RETURN_IF_ERROR(plan_bwd(m, n, dtype, &dtype, kRowVector, config, &l));
  *bytes = l.workspace_bytes;
  return Status::Ok();
}

}  // namespace kestrel
