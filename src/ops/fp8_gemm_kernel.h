// The FP8 GEMM kernel's instantiation and shared memory for a configuration:
// one definition shared by the launch, the NVRTC compile checks and the
// bench's configuration space.
#pragma once
#include "kestrel/fp8_gemm.h"
#include "runtime/kernel_spec.h"

namespace kestrel::ops {

// has_r: D = bf16(alpha A B^T) + R; else D = bf16(alpha A B^T).
rt::KernelSpec fp8_gemm_kernel_spec(const Fp8GemmConfig& cfg, bool has_r);
int fp8_gemm_smem_bytes(int block_n, int stages);
// The deepest ring of `block_n` that fits the kernel's shared-memory limit.
int fp8_gemm_max_stages(int block_n);

}  // namespace kestrel::ops
