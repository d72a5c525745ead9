// The instantiation of each NVFP4 product kernel for a configuration: one
// definition shared by the launches and the NVRTC compile checks.
#pragma once
#include "kestrel/gemm.h"
#include "kestrel/gemv.h"
#include "runtime/kernel_spec.h"

namespace kestrel::ops {

// tokens: the rows of B the GEMV kernels take (wgmma 1..2, register 1..4).
rt::KernelSpec gemv_kernel_spec(DType out, const GemvConfig& cfg, bool a_blocked, bool b_blocked,
                                bool vec16, bool scale_pair, int tokens = 1);
rt::KernelSpec gemv_wgmma_kernel_spec(DType out, const GemvConfig& cfg, bool a_blocked,
                                      bool b_blocked, int tokens = 1);
// w_packed: the weights in the packed order of pack_gemm_weights; grouped:
// the grouped GEMM's (group table, split_k 1).
rt::KernelSpec gemm_kernel_spec(DType out, const GemmConfig& cfg, bool w_blocked, bool dual,
                                bool w_packed = false, bool grouped = false);
// blocked: the weights' scales in the blocked layout.
rt::KernelSpec weight_pack_kernel_spec(bool blocked);
// The GEMMs' activation pre-pass; vec16: A's rows are 16-byte aligned.
// lane_major: the register GEMV's B layout (kernels/nvfp4_act_prepass.cuh).
rt::KernelSpec act_prepass_kernel_spec(bool blocked, bool vec16, bool lane_major = false);

}  // namespace kestrel::ops
