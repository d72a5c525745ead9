#include "ops/nvfp4_kernel_specs.h"

#include <string>

namespace kestrel::ops {
namespace {

const char* flag(bool b) { return b ? "true" : "false"; }
const char* half_type(DType t) { return t == DType::kF16 ? "__half" : "__nv_bfloat16"; }

}  // namespace

rt::KernelSpec gemv_kernel_spec(DType out, const GemvConfig& cfg, bool a_blocked, bool b_blocked,
                                bool vec16, bool scale_pair, int tokens) {
  return {"nvfp4_gemv.cuh",
          std::string("kestrel::nvfp4_gemv_kernel<") + half_type(out) + ", " +
              std::to_string(cfg.row_tiles) + ", " + std::to_string(cfg.warps) + ", " +
              std::to_string(cfg.cluster) + ", " + std::to_string(cfg.depth) + ", " +
              flag(a_blocked) + ", " + flag(b_blocked) + ", " + flag(vec16) + ", " +
              flag(scale_pair) + ", " + std::to_string(tokens) + ", " + flag(cfg.ring && vec16) +
              ">",
          {}};
}

rt::KernelSpec gemv_wgmma_kernel_spec(DType out, const GemvConfig& cfg, bool a_blocked,
                                      bool b_blocked, int tokens) {
  return {"nvfp4_gemv_wgmma.cuh",
          std::string("kestrel::nvfp4_gemv_wgmma_kernel<") + half_type(out) + ", " +
              std::to_string(cfg.stages) + ", " + std::to_string(cfg.ctas_per_sm) + ", " +
              flag(a_blocked) + ", " + flag(b_blocked) + ", " + std::to_string(tokens) + ">",
          {}};
}

rt::KernelSpec gemm_kernel_spec(DType out, const GemmConfig& cfg, bool w_blocked, bool dual,
                                bool w_packed, bool grouped) {
  return {"nvfp4_gemm.cuh",
          std::string("kestrel::nvfp4_gemm_kernel<") + half_type(out) + ", " +
              std::to_string(cfg.block_n) + ", " + std::to_string(cfg.stages) + ", " +
              std::to_string(cfg.split_k) + ", " + flag(w_blocked) + ", " + flag(dual) + ", " +
              flag(cfg.partials_through_l2()) + ", " + flag(w_packed) + ", " + flag(cfg.k_tail) +
              ", " + std::to_string(cfg.consumer_groups) + (grouped ? ", true" : "") + ">",
          {}};
}

rt::KernelSpec weight_pack_kernel_spec(bool blocked) {
  return {"nvfp4_weight_pack.cuh",
          std::string("kestrel::nvfp4_weight_pack_kernel<") + flag(blocked) + ">",
          {}};
}

rt::KernelSpec act_prepass_kernel_spec(bool blocked, bool vec16, bool lane_major) {
  return {"nvfp4_act_prepass.cuh",
          std::string("kestrel::nvfp4_act_prepass_kernel<") + flag(blocked) + ", " + flag(vec16) +
              ", " + flag(lane_major) + ">",
          {}};
}

}  // namespace kestrel::ops
