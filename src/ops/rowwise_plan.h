// Host-side pieces shared by the row-wise ops (src/ops/{rmsnorm,softmax,
// cross_entropy}_ops.cpp): argument checks for row tensors, and the plan of a
// launch (configuration, vectors per thread, kernel template arguments, grid).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "common/row_access.cuh"
#include "kestrel/rowwise.h"
#include "runtime/launcher.h"

namespace kestrel::ops {

// A default-constructed view means "not given".
inline bool present(const TensorView& t) { return t.data != nullptr || t.rank != 0; }

// x-like tensors: fp32/bf16/fp16, rank 2 [M][N], innermost stride 1, rows that
// do not overlap, not null, 1 <= N <= kRowwiseMaxN.
Status check_rows(const TensorView& t, const char* name);
// Same dtype and shape as `ref` (itself checked by check_rows).
Status check_rows_like(const TensorView& ref, const char* ref_name, const TensorView& t,
                       const char* name);
// A contiguous vector of `len` elements of dtype `dtype`, not null.
Status check_vector(const TensorView& t, const char* name, int64_t len, DType dtype);
// How the rows of `ts` (row tensors of one dtype; absent ones skipped) can
// move: kRowVector when every data pointer and row stride is 16-byte aligned;
// else kRowShifted when `shifted_ok` and every row starts equally misaligned in
// all of them; else kRowElementwise.
RowAccess row_access(std::initializer_list<TensorView> ts, bool shifted_ok);

const char* cuda_type(DType t);  // "float", "__nv_bfloat16", "__half"

// One launch of a row-wise kernel over [m][n] rows.
struct RowPlan {
  RowwiseConfig cfg;
  int vpt = 1;  // 16-byte vectors per thread
  RowAccess access = kRowVector;
  size_t smem_bytes = 0;  // dynamic shared memory

  int64_t row_groups(int64_t m) const { return (m + cfg.rows_per_cta() - 1) / cfg.rows_per_cta(); }
  // "THREADS, TPR, VPT, CLUSTER, ACCESS": the kernels' shared template arguments.
  std::string template_args() const;
  // One CTA per (row group, slice); `cluster_launch` false splits rows over
  // independent CTAs. `groups` limits the row groups launched (persistent grids).
  rt::LaunchShape shape(int64_t groups, bool cluster_launch = true) const;
};

// The optional parts of a row-wise call: RMSNorm's kernel instantiation, and
// what else a tuned configuration is keyed on.
struct RowVariant {
  bool residual = false;  // rmsnorm_fwd only
  bool weight = false;    // rmsnorm
  DType weight_dtype = DType::kF32;  // when weight
  bool smoothing = false;  // cross-entropy: label smoothing (the tuning key only)

  // The tuning key's variant: "residual", "weight", "smoothing" joined by '+'.
  std::string tuning_variant() const;
};

// The kernel of `op` for element type t under `plan` (the finishing kernels of
// rmsnorm_bwd and the cross-entropy reductions are not row kernels).
rt::KernelSpec rowwise_kernel_spec(RowwiseOp op, DType t, const RowPlan& plan,
                                   const RowVariant& v = {});

// Checks the configuration (the caller's; when `user` is null, the tuning
// table's for this GPU, op, row shape and variant, else the heuristic's)
// against n, dtype and the device, and fills the plan (`v`: the call's
// variant; the heuristic minds the forward's residual, the backward's shared
// memory its weight). kRowShifted rows span one vector more; where the
// configuration has no room for it, the plan falls back to kRowElementwise.
Status plan_rows(RowwiseOp op, int64_t m, int64_t n, DType dtype, const RowwiseConfig* user,
                 RowAccess access, RowPlan* out, const RowVariant& v = {});

}  // namespace kestrel::ops
