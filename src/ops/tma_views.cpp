#include "ops/tma_views.h"

#include <algorithm>

#include "ops/gemm_common.h"
#include "ops/validate.h"

namespace kestrel::ops {

rt::TmaMapSpec rows_spec(const TensorView& v, CUtensorMapDataType dtype, uint32_t box_cols,
                         uint32_t box_rows) {
  const Shape3 s = shape3(v);
  const int es = dtype_size(v.dtype);
  rt::TmaMapSpec spec;
  spec.dtype = dtype;
  spec.rank = 3;
  spec.dims[0] = uint64_t(s.cols);
  spec.dims[1] = uint64_t(s.rows);
  spec.dims[2] = uint64_t(s.batches);
  // TMA steps over neither a single row's stride nor a single batch's: any
  // multiple of 16 bytes serves.
  const int64_t row_bytes = s.rows == 1 ? ceil_div(s.cols * es, 16) * 16 : s.row_stride * es;
  spec.strides_bytes[0] = uint64_t(row_bytes);
  spec.strides_bytes[1] =
      uint64_t(s.batches > 1 ? s.batch_stride * es : row_bytes * std::max<int64_t>(s.rows, 1));
  spec.box[0] = box_cols;
  spec.box[1] = box_rows;
  spec.box[2] = 1;
  return spec;
}

rt::TmaMapSpec byte_rows_spec(const TensorView& v, uint32_t box_bytes, uint32_t box_rows) {
  return rows_spec(v, CU_TENSOR_MAP_DATA_TYPE_UINT8, box_bytes, box_rows);
}

}  // namespace kestrel::ops
