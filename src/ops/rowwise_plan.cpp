#include "ops/rowwise_plan.h"

#include "ops/rowwise_config.h"
#include "ops/tuning_table.h"
#include "ops/validate.h"
#include "runtime/device.h"

namespace kestrel::ops {

Status check_rows(const TensorView& t, const char* name) {
  KESTREL_RETURN_IF_ERROR(check_dtype(t, {DType::kF32, DType::kBF16, DType::kF16}, name));
  KESTREL_RETURN_IF_ERROR(check_rank(t, 2, 2, name));
  KESTREL_RETURN_IF_ERROR(check_row_major(t, name));
  KESTREL_RETURN_IF_ERROR(check_not_null(t, name));
  if (t.shape[1] < 1 || t.shape[1] > kRowwiseMaxN)
    return Status::InvalidArgument(arg(
        name,
        "row length N must be in [1, " + std::to_string(kRowwiseMaxN) + "], got " + t.describe()));
  return Status::Ok();
}

Status check_rows_like(const TensorView& ref, const char* ref_name, const TensorView& t,
                       const char* name) {
  KESTREL_RETURN_IF_ERROR(check_dtype(t, {ref.dtype}, name));
  KESTREL_RETURN_IF_ERROR(check_same_shape(ref, ref_name, t, name));
  KESTREL_RETURN_IF_ERROR(check_row_major(t, name));
  return check_not_null(t, name);
}

Status check_vector(const TensorView& t, const char* name, int64_t len, DType dtype) {
  KESTREL_RETURN_IF_ERROR(check_dtype(t, {dtype}, name));
  if (t.rank != 1 || t.shape[0] != len)
    return Status::InvalidArgument(
        arg(name, "shape must be [" + std::to_string(len) + "], got " + t.describe()));
  if (len > 1 && t.stride[0] != 1)
    return Status::InvalidArgument(arg(name, "must be contiguous, got " + t.describe()));
  return check_not_null(t, name);
}

RowAccess row_access(std::initializer_list<TensorView> ts, bool shifted_ok) {
  // Row r starts at data + r * stride: equal (data, row stride) mod 16 give
  // every row the same misalignment.
  const auto data_mod = [](const TensorView& v) {
    return reinterpret_cast<uintptr_t>(v.data) % 16;
  };
  const auto stride_mod = [](const TensorView& v) {
    return uint64_t(v.stride[0]) * uint64_t(dtype_size(v.dtype)) % 16;
  };
  bool aligned = true, same_shift = true;
  const TensorView* first = nullptr;
  for (const TensorView& t : ts) {
    if (!present(t)) continue;
    aligned = aligned && check_aligned(t, 16, "").ok();
    if (first == nullptr) {
      first = &t;
    } else {
      same_shift = same_shift && data_mod(t) == data_mod(*first) &&
                   (t.rank < 2 || t.shape[0] < 2 || stride_mod(t) == stride_mod(*first));
    }
  }
  if (aligned) return kRowVector;
  return shifted_ok && same_shift ? kRowShifted : kRowElementwise;
}

const char* cuda_type(DType t) {
  switch (t) {
    case DType::kBF16:
      return "__nv_bfloat16";
    case DType::kF16:
      return "__half";
    default:
      return "float";
  }
}

std::string RowPlan::template_args() const {
  return std::to_string(cfg.threads) + ", " + std::to_string(cfg.threads_per_row) + ", " +
         std::to_string(vpt) + ", " + std::to_string(cfg.cluster) + ", " +
         std::to_string(int(access));
}

rt::LaunchShape RowPlan::shape(int64_t groups, bool cluster_launch) const {
  rt::LaunchShape s;
  s.grid = dim3(unsigned(groups * cfg.cluster));
  s.block = dim3(unsigned(cfg.threads));
  if (cfg.l2_group) {
    s.cooperative = true;  // a group's CTAs wait for each other
  } else if (cluster_launch) {
    s.cluster = dim3(unsigned(cfg.cluster));
  }
  s.smem_bytes = smem_bytes;
  return s;
}

rt::KernelSpec rowwise_kernel_spec(RowwiseOp op, DType t, const RowPlan& plan,
                                   const RowVariant& v) {
  auto tf = [](bool b) { return b ? std::string("true") : std::string("false"); };
  const std::string args = std::string(cuda_type(t)) + ", ";
  const std::string w = std::string(cuda_type(v.weight ? v.weight_dtype : t)) + ", ";
  switch (op) {
    case RowwiseOp::kRmsNormFwd:
      return {"rmsnorm.cuh",
              "kestrel::rmsnorm_fwd_kernel<" + args + w + plan.template_args() + ", " +
                  tf(v.residual) + ", " + tf(v.weight) + ", " +
                  std::to_string(plan.cfg.rows_per_thread) + ">",
              {}};
    case RowwiseOp::kRmsNormBwd:
      if (rowwise_rereads(op, plan.cfg, plan.vpt, v.weight))
        return {"rmsnorm.cuh",
                "kestrel::rmsnorm_bwd_l2_kernel<" + args + plan.template_args() + ">",
                {}};
      return {"rmsnorm.cuh",
              "kestrel::rmsnorm_bwd_kernel<" + args + w + plan.template_args() + ", " +
                  tf(v.weight) + ", " + tf(plan.cfg.l2_group) + ", " +
                  std::to_string(plan.cfg.rows_per_thread) + ">",
              {}};
    case RowwiseOp::kSoftmaxFwd:
      return {"softmax.cuh",
              "kestrel::softmax_fwd_kernel<" + args + plan.template_args() + ", " +
                  std::to_string(plan.cfg.rows_per_thread) + ">",
              {}};
    case RowwiseOp::kSoftmaxBwd:
      if (rowwise_rereads(op, plan.cfg, plan.vpt, false))
        return {"softmax.cuh",
                "kestrel::softmax_bwd_l2_kernel<" + args + plan.template_args() + ">",
                {}};
      return {"softmax.cuh",
              "kestrel::softmax_bwd_kernel<" + args + plan.template_args() + ", " +
                  tf(softmax_bwd_y_in_registers(plan.cfg, plan.vpt)) + ">",
              {}};
    case RowwiseOp::kCrossEntropyFwd:
      return {
          "cross_entropy.cuh", "kestrel::xent_fwd_kernel<" + args + plan.template_args() + ">", {}};
    case RowwiseOp::kCrossEntropyBwd:
      return {
          "cross_entropy.cuh", "kestrel::xent_bwd_kernel<" + args + plan.template_args() + ">", {}};
  }
  return {};
}

std::string RowVariant::tuning_variant() const {
  std::string out;
  for (const auto& [on, name] : {std::pair<bool, const char*>{residual, "residual"},
                                 {weight, "weight"},
                                 {smoothing, "smoothing"}})
    if (on) out += (out.empty() ? "" : "+") + std::string(name);
  return out;
}

Status plan_rows(RowwiseOp op, int64_t m, int64_t n, DType dtype, const RowwiseConfig* user,
                 RowAccess access, RowPlan* out, const RowVariant& v) {
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  if (dev->cc_major < 9)
    return Status::Unsupported(std::string(rowwise_op_name(op)) +
                               " needs sm_90+ (clusters, st.async), this GPU is " + dev->arch());
  const size_t smem_limit = size_t(dev->max_smem_per_block_optin);
  const TuningTable* table = nullptr;
  if (!user) KESTREL_RETURN_IF_ERROR(active_tuning_table(&table));
  // The tuned configuration of these rows, else the heuristic's.
  auto pick = [&](RowAccess a) {
    if (!table->rowwise().empty()) {  // no key built where there is no table
      const RowwiseTuningKey key{dev->name, op, dtype, n, a, v.tuning_variant()};
      if (const RowwiseConfig* tuned = tuned_rowwise_config(*table, key, m, dev->sm_count))
        return *tuned;
    }
    return default_config(op, m, held_row_length(n, dtype, a), dtype, dev->sm_count, v.residual, a);
  };
  out->cfg = user ? *user : pick(access);
  out->access = access;
  if (access == kRowShifted &&
      !rowwise_config_error(op, out->cfg, held_row_length(n, dtype, access), dtype, smem_limit)
           .empty()) {
    out->access = kRowElementwise;
    if (!user) out->cfg = pick(out->access);
  }
  const int64_t n_cap = held_row_length(n, dtype, out->access);
  const std::string err = rowwise_config_error(op, out->cfg, n_cap, dtype, smem_limit);
  if (!err.empty()) return Status::InvalidArgument("config " + out->cfg.describe() + ": " + err);
  // The grid's x dimension carries (row groups) x (CTAs per row).
  const int64_t ctas = out->row_groups(m) * out->cfg.cluster;
  if (ctas > int64_t(0x7fffffff))
    return Status::InvalidArgument("M: " + std::to_string(m) + " rows need " +
                                   std::to_string(ctas) + " CTAs, over the grid limit 2^31-1");
  out->vpt = vectors_per_thread(out->cfg, n_cap, dtype);
  out->smem_bytes = rowwise_smem_bytes(op, out->cfg, out->vpt, dtype, v.weight);
  return Status::Ok();
}

}  // namespace kestrel::ops
