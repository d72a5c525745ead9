// One NVFP4 matrix [L][rows][K] as a kernel reads it: the values and their
// e4m3 block scales, with batch and row strides in bytes. Shared by the
// kernels' parameter structs and their host mirrors (src/ops: nvfp4_operand()
// fills it from an Nvfp4View), so the six fields are written once.
#pragma once
#if defined(__CUDACC_RTC__)
#include <cuda/std/cstdint>
#else
#include <cstdint>
#endif

namespace kestrel {

struct Nvfp4Operand {
  const uint8_t* values;  // [L][rows][K/2]
  long long values_batch, values_row;
  const uint8_t* scales;  // linear [L][rows][K/16] (the strides below) or blocked (strides 0)
  long long scales_batch, scales_row;
};

}  // namespace kestrel
