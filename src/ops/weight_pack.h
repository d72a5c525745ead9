// The GEMM's optional packed weights (kernels/nvfp4_weight_pack.cuh) on the
// host side.
#pragma once
#include "kestrel/gemm.h"
#include "kestrel/nvfp4.h"

namespace kestrel::ops {

// Packed weights as an Nvfp4View of their logical [L][N][K/2] shape, dense:
// validate_gemm reads its shape, scales and alignment, the launch its data
// pointer (the packed buffer, never read row-major).
Nvfp4View packed_weight_view(const GemmPackedWeights& w);

}  // namespace kestrel::ops
