// TMA tensor maps built on the host through the driver entry point, so that
// nothing links against libcuda.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "kestrel/status.h"

namespace kestrel::rt {

// A 2-D (or 3-D with dims[2] > 1) tiled map over a row-major tensor.
// dims/box are innermost first; strides_bytes[i] is the stride of dim i+1.
struct TmaMapSpec {
  CUtensorMapDataType dtype = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  int rank = 2;
  uint64_t dims[3] = {1, 1, 1};
  uint64_t strides_bytes[2] = {0, 0};
  uint32_t box[3] = {1, 1, 1};
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
};

Status make_tma_map(const void* base, const TmaMapSpec& spec, CUtensorMap* out);

}  // namespace kestrel::rt
