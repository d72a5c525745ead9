#include "ops/kernel_catalog.h"

#include <string>

namespace kestrel::ops {

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
  specs.push_back({"bench_l2_flush.cuh", "kestrel::l2_flush_read_kernel", {}});
  return specs;
}

}  // namespace kestrel::ops
