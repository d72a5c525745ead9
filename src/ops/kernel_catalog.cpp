#include "ops/kernel_catalog.h"

#include <string>

#include "ops/rowwise_config.h"
#include "ops/rowwise_plan.h"

namespace kestrel::ops {

namespace {

// Row-wise kernels: the heuristic's configurations for a short row (several
// rows per CTA) and the longest (a 16-CTA cluster) in every dtype, a one-row
// CTA in bf16, the misaligned (scalar) path, and the finishing kernels.
void append_rowwise_specs(std::vector<rt::KernelSpec>* specs) {
  const RowwiseOp ops[] = {RowwiseOp::kRmsNormFwd,      RowwiseOp::kRmsNormBwd,
                           RowwiseOp::kSoftmaxFwd,      RowwiseOp::kSoftmaxBwd,
                           RowwiseOp::kCrossEntropyFwd, RowwiseOp::kCrossEntropyBwd};
  auto add = [&](RowwiseOp op, DType t, int64_t n, bool aligned, const RmsNormVariant& v) {
    RowPlan plan;
    plan.cfg = rowwise_default_config(op, 32768, n, t, 132);
    plan.vpt = vectors_per_thread(plan.cfg, n, t);
    plan.aligned = aligned;
    specs->push_back(rowwise_kernel_spec(op, t, plan, v));
  };
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (RowwiseOp op : ops) {
      const RmsNormVariant v{op == RowwiseOp::kRmsNormFwd, true, t};
      add(op, t, 1000, true, v);
      add(op, t, 262144, true, v);
      if (t == DType::kBF16) {
        add(op, t, 16384, true, v);
        add(op, t, 1001, false, {false, false, t});
      }
    }
    specs->push_back(
        {"rmsnorm.cuh", std::string("kestrel::column_sum_kernel<") + cuda_type(t) + ">", {}});
  }
  add(RowwiseOp::kRmsNormFwd, DType::kBF16, 4096, true, {true, true, DType::kF32});
  specs->push_back({"cross_entropy.cuh", "kestrel::xent_finish_kernel", {}});
}

}  // namespace

std::vector<rt::KernelSpec> default_kernel_specs() {
  std::vector<rt::KernelSpec> specs;
  for (const char* t : {"float", "__half", "__nv_bfloat16"}) {
    for (const char* blocked : {"false", "true"}) {
      const std::string args = std::string(t) + ", 4096, " + blocked + ">";
      specs.push_back({"nvfp4_quantize.cuh", "kestrel::quantize_kernel<" + args, {}});
      specs.push_back({"nvfp4_quantize.cuh", "kestrel::dequantize_kernel<" + args, {}});
    }
  }
  specs.push_back({"nvfp4_quantize.cuh", "kestrel::convert_scales_kernel<true>", {}});
  specs.push_back({"nvfp4_quantize.cuh", "kestrel::convert_scales_kernel<false>", {}});
  // GEMV: every output type and scale-layout pair at the heuristic's usual
  // shapes of the configuration space, plus the unaligned-row path.
  for (const char* out : {"__half", "__nv_bfloat16"})
    for (const char* a_blk : {"false", "true"})
      for (const char* b_blk : {"false", "true"})
        for (const char* cfg : {"2, 8, 1, 2", "2, 8, 2, 2", "2, 8, 8, 2"})
          specs.push_back({"nvfp4_gemv.cuh",
                           std::string("kestrel::nvfp4_gemv_kernel<") + out + ", " + cfg + ", " +
                               a_blk + ", " + b_blk + ", true, true>",
                           {}});
  specs.push_back(
      {"nvfp4_gemv.cuh", "kestrel::nvfp4_gemv_kernel<__half, 1, 4, 1, 1, false, false, false, false>", {}});
  // GEMM: the activation pre-pass and the heuristic's tile sizes.
  for (const char* blk : {"false", "true"})
    specs.push_back(
        {"nvfp4_act_prepass.cuh", std::string("kestrel::nvfp4_act_prepass_kernel<") + blk + ">", {}});
  for (const char* cfg : {"__half, 8, 8, 4, false, false", "__half, 16, 8, 4, true, false",
                          "__half, 128, 4, 2, false, false", "__nv_bfloat16, 256, 3, 1, true, false",
                          "__half, 64, 6, 1, false, false", "__half, 128, 4, 1, false, true",
                          "__nv_bfloat16, 256, 3, 2, true, true"})
    specs.push_back({"nvfp4_gemm.cuh", std::string("kestrel::nvfp4_gemm_kernel<") + cfg + ">", {}});
  append_rowwise_specs(&specs);
  specs.push_back({"bench_l2_flush.cuh", "kestrel::l2_flush_read_kernel", {}});
  return specs;
}

}  // namespace kestrel::ops
