// The TMA map shape of row views (src/ops/tma_views.h): extents and strides
// from the view, and a single batch's stride from its rows, not from
// whatever the view holds for dim 0.
#include "ops/tma_views.h"

#include <gtest/gtest.h>

namespace kestrel::ops {
namespace {

TEST(TmaViews, ByteRowsSpecFollowsTheView) {
  static uint8_t buf[1];
  // [3][77][520] bytes with a 544-byte row stride and a 50000-byte batch stride.
  const TensorView v3 = TensorView::strided(buf, DType::kE2M1x2, {3, 77, 520}, {50000, 544, 1});
  const rt::TmaMapSpec s3 = byte_rows_spec(v3, 256, 128);
  EXPECT_EQ(s3.dtype, CU_TENSOR_MAP_DATA_TYPE_UINT8);
  EXPECT_EQ(s3.rank, 3);
  EXPECT_EQ(s3.dims[0], 520u);
  EXPECT_EQ(s3.dims[1], 77u);
  EXPECT_EQ(s3.dims[2], 3u);
  EXPECT_EQ(s3.strides_bytes[0], 544u);
  EXPECT_EQ(s3.strides_bytes[1], 50000u);
  EXPECT_EQ(s3.box[0], 256u);
  EXPECT_EQ(s3.box[1], 128u);
  EXPECT_EQ(s3.box[2], 1u);

  // One batch: its stride is rows x row stride, whatever dim 0's stride says.
  const TensorView v1 = TensorView::strided(buf, DType::kE4M3, {1, 77, 32}, {0, 48, 1});
  const rt::TmaMapSpec s1 = byte_rows_spec(v1, 32, 128);
  EXPECT_EQ(s1.dims[2], 1u);
  EXPECT_EQ(s1.strides_bytes[0], 48u);
  EXPECT_EQ(s1.strides_bytes[1], 77u * 48u);

  const TensorView v2 = TensorView::dense(buf, DType::kE2M1x2, {7168, 8192});
  const rt::TmaMapSpec s2 = byte_rows_spec(v2, 256, 128);
  EXPECT_EQ(s2.dims[0], 8192u);
  EXPECT_EQ(s2.dims[1], 7168u);
  EXPECT_EQ(s2.dims[2], 1u);
  EXPECT_EQ(s2.strides_bytes[1], 7168u * 8192u);
}

// Element-typed rows (the FP8 GEMM's bf16 R and D): strides in bytes; a
// single row's stride, which TMA never steps over, rounded up to 16 bytes
// whatever the view holds (a dense [1][24] e4m3 row has a 24-byte stride).
TEST(TmaViews, RowsSpecCountsElementsAndFreesASingleRow) {
  static uint8_t buf[1];
  const TensorView d = TensorView::strided(buf, DType::kBF16, {2, 300, 104}, {40000, 112, 1});
  const rt::TmaMapSpec sd = rows_spec(d, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, 64);
  EXPECT_EQ(sd.dtype, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(sd.dims[0], 104u);
  EXPECT_EQ(sd.dims[1], 300u);
  EXPECT_EQ(sd.dims[2], 2u);
  EXPECT_EQ(sd.strides_bytes[0], 224u);
  EXPECT_EQ(sd.strides_bytes[1], 80000u);

  const TensorView row = TensorView::dense(buf, DType::kE4M3, {1, 24});
  const rt::TmaMapSpec sr = byte_rows_spec(row, 128, 128);
  EXPECT_EQ(sr.dims[1], 1u);
  EXPECT_EQ(sr.strides_bytes[0], 32u);
  EXPECT_EQ(sr.strides_bytes[1], 32u);
}

}  // namespace
}  // namespace kestrel::ops
