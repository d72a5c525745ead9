// An Nvfp4View as the kernels' parameter structs take it
// (kernels/common/nvfp4_operand.cuh).
#pragma once
#include "common/nvfp4_operand.cuh"
#include "kestrel/nvfp4.h"

namespace kestrel::ops {

// Values and scales with their byte strides; the scale strides are 0 for
// the blocked layout, whose offsets follow from the shape.
Nvfp4Operand nvfp4_operand(const Nvfp4View& v);

}  // namespace kestrel::ops
