// Host side of the NVFP4 grouped GEMM (mixture-of-experts): validate, pick
// a configuration, then the shared GEMM launch with the group table's
// device ends (kernels/nvfp4_gemm.cuh counts each group's tiles itself).
#include <algorithm>
#include <string>

#include "kestrel/gemm.h"
#include "ops/gemm_common.h"
#include "ops/weight_pack.h"
#include "runtime/device.h"

namespace kestrel {

GemmConfig grouped_gemm_default_config(int64_t m, int64_t groups) {
  GemmConfig c;
  c.block_n = ops::gemm_block_n_holding(std::min<int64_t>(ops::ceil_div(m, groups), 128));
  c.stages = ops::gemm_default_stages(c.block_n, false, false);
  return c;
}

namespace {

Status check_grouped_config(const GemmConfig& cfg, const ops::GemmShape& shape, bool dual,
                            bool w_packed, const rt::DeviceInfo* dev) {
  KESTREL_RETURN_IF_ERROR(ops::check_gemm_config(cfg, dual, dev, w_packed));
  if (cfg.split_k != 1 || cfg.k_tail || cfg.consumer_groups != 2)
    return Status::InvalidArgument(
        "config: a grouped GEMM runs split_k 1 without k_tail and with consumer_groups 2, got " +
        cfg.describe());
  const int smem = ops::grouped_gemm_smem_bytes(cfg.block_n, cfg.stages, w_packed,
                                                cfg.consumer_groups, shape.groups);
  if (smem > dev->max_smem_per_block_optin)
    return Status::InvalidArgument(
        "config: with the table of " + std::to_string(shape.groups) + " groups needs " +
        std::to_string(smem) + " bytes of shared memory, the GPU allows " +
        std::to_string(dev->max_smem_per_block_optin) + ": take fewer stages");
  return Status::Ok();
}

// b2: the dual GEMM's second weight, else null.
Status run_grouped(const Nvfp4View& a, const Nvfp4View& b, const Nvfp4View* b2, bool w_packed,
                   const GemmGroups& groups, const TensorView& c, cudaStream_t stream,
                   const GemmConfig* config) {
  const bool dual = b2 != nullptr;
  const char* op = dual ? "grouped_dual_gemm_nvfp4" : "grouped_gemm_nvfp4";
  ops::GemmShape shape;
  KESTREL_RETURN_IF_ERROR(
      ops::validate_grouped_gemm(a, b, groups.ends, groups.count, c, "c", &shape));
  if (dual) {
    ops::GemmShape shape2;
    KESTREL_RETURN_IF_ERROR(
        ops::validate_grouped_gemm(a, *b2, groups.ends, groups.count, c, "c", &shape2));
    KESTREL_RETURN_IF_ERROR(ops::check_second_weight(b, *b2));
  }
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  if (!dev->is_hopper())
    return Status::Unsupported(std::string(op) + " needs an sm_90 GPU (wgmma), this GPU is " +
                               dev->arch());
  if (shape.m == 0 || shape.n == 0) return Status::Ok();
  GemmConfig cfg = config ? *config : grouped_gemm_default_config(shape.m, shape.groups);
  if (!config && w_packed) cfg.stages = ops::gemm_default_stages(cfg.block_n, false, true);
  KESTREL_RETURN_IF_ERROR(check_grouped_config(cfg, shape, dual, w_packed, dev));
  KESTREL_RETURN_IF_ERROR(rt::check_device_readable(groups.ends, *dev, "groups.ends"));
  return ops::launch_nvfp4_gemm(a, b, b2, w_packed, c, shape, cfg, stream);
}

}  // namespace

Status grouped_gemm_nvfp4(const Nvfp4View& a, const Nvfp4View& b, const GemmGroups& groups,
                          const TensorView& c, cudaStream_t stream, const GemmConfig* config) {
  return run_grouped(a, b, nullptr, false, groups, c, stream, config);
}

Status grouped_gemm_nvfp4(const Nvfp4View& a, const GemmPackedWeights& b, const GemmGroups& groups,
                          const TensorView& c, cudaStream_t stream, const GemmConfig* config) {
  return run_grouped(a, ops::packed_weight_view(b), nullptr, true, groups, c, stream, config);
}

Status grouped_dual_gemm_nvfp4(const Nvfp4View& a, const Nvfp4View& b1, const Nvfp4View& b2,
                               const GemmGroups& groups, const TensorView& c, cudaStream_t stream,
                               const GemmConfig* config) {
  return run_grouped(a, b1, &b2, false, groups, c, stream, config);
}

Status grouped_dual_gemm_nvfp4(const Nvfp4View& a, const GemmPackedWeights& b1,
                               const GemmPackedWeights& b2, const GemmGroups& groups,
                               const TensorView& c, cudaStream_t stream, const GemmConfig* config) {
  const Nvfp4View w2 = ops::packed_weight_view(b2);
  return run_grouped(a, ops::packed_weight_view(b1), &w2, true, groups, c, stream, config);
}

}  // namespace kestrel
