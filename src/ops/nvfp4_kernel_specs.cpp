#include "ops/nvfp4_kernel_specs.h"

#include <string>

namespace kestrel::ops {
namespace {

const char* flag(bool b) { return b ? "true" : "false"; }
const char* half_type(DType t) { return t == DType::kF16 ? "__half" : "__nv_bfloat16"; }

}  // namespace

rt::KernelSpec gemv_kernel_spec(DType out, const GemvConfig& cfg, bool a_blocked, bool vec16,
                                bool scale4) {
  return {"nvfp4_gemv.cuh",
          std::string("kestrel::nvfp4_gemv_kernel<") + half_type(out) + ", " +
              std::to_string(cfg.warps) + ", " + std::to_string(cfg.depth) + ", " +
              std::to_string(cfg.run) + ", " + flag(a_blocked) + ", " + flag(vec16) + ", " + flag(scale4) + ">",
          {}};
}

rt::KernelSpec gemv_prepass_spec(bool b_blocked) {
  return {"nvfp4_gemv.cuh",
          std::string("kestrel::nvfp4_gemv_b_prepass_kernel<") + flag(b_blocked) + ">",
          {}};
}

rt::KernelSpec gemm_kernel_spec(DType out, const GemmConfig& cfg, bool w_blocked, bool dual) {
  return {"nvfp4_gemm.cuh",
          std::string("kestrel::nvfp4_gemm_kernel<") + half_type(out) + ", " +
              std::to_string(cfg.block_n) + ", " + std::to_string(cfg.stages) + ", " +
              std::to_string(cfg.split_k) + ", " + flag(w_blocked) + ", " + flag(dual) + ">",
          {}};
}

}  // namespace kestrel::ops
