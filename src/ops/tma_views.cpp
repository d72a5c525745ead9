#include "ops/tma_views.h"

#include "ops/validate.h"

namespace kestrel::ops {

rt::TmaMapSpec byte_rows_spec(const TensorView& v, uint32_t box_bytes, uint32_t box_rows) {
  const Shape3 s = shape3(v);
  rt::TmaMapSpec spec;
  spec.dtype = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  spec.rank = 3;
  spec.dims[0] = uint64_t(s.cols);
  spec.dims[1] = uint64_t(s.rows);
  spec.dims[2] = uint64_t(s.batches);
  spec.strides_bytes[0] = uint64_t(s.row_stride);
  spec.strides_bytes[1] = uint64_t(s.batches > 1 ? s.batch_stride : s.row_stride * s.rows);
  spec.box[0] = box_bytes;
  spec.box[1] = box_rows;
  spec.box[2] = 1;
  return spec;
}

}  // namespace kestrel::ops
