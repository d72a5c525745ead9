// TMA maps over NVFP4 operand views: the byte rows of packed values or of
// linear scale codes, [L][rows][row bytes].
#pragma once
#include <cstdint>

#include "kestrel/tensor.h"
#include "runtime/tma.h"

namespace kestrel::ops {

// Boxes of box_cols x box_rows x 1 elements over a rank-2 or rank-3 view
// [L][rows][cols] of `dtype` elements.
rt::TmaMapSpec rows_spec(const TensorView& v, CUtensorMapDataType dtype, uint32_t box_cols,
                         uint32_t box_rows);
// Boxes of box_bytes x box_rows x 1 over a rank-2 or rank-3 byte view. A
// single batch takes rows x row stride as its batch stride, not the view's
// own (which may be anything when L = 1).
rt::TmaMapSpec byte_rows_spec(const TensorView& v, uint32_t box_bytes, uint32_t box_rows);

}  // namespace kestrel::ops
