// The default instantiations of every kernel, so that a machine without a GPU
// (CI) can compile them all with NVRTC and catch kernel compile errors.
#pragma once
#include <vector>

#include "runtime/kernel_spec.h"

namespace kestrel::ops {

std::vector<rt::KernelSpec> default_kernel_specs();
// Every configuration of the tunable kernels (GEMV, GEMM, dual GEMM), so that
// no point `kestrel tune` may pick fails to compile.
std::vector<rt::KernelSpec> configuration_space_specs();

}  // namespace kestrel::ops
