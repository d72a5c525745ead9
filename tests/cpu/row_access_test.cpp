// How the row-wise ops move rows (ops::row_access, no GPU needed): 16-byte
// vectors when every row is aligned, the shifted path when every tensor's
// rows are misaligned alike, element by element otherwise. The pointers are
// never dereferenced.
#include <gtest/gtest.h>

#include <cstdint>

#include "ops/rowwise_plan.h"

namespace kestrel::ops {
namespace {

// [m][n] rows of dtype t with row stride `stride`, `offset` bytes past a
// 256-byte aligned address.
TensorView rows(DType t, int64_t m, int64_t n, int64_t stride, uintptr_t offset) {
  return TensorView::strided(reinterpret_cast<void*>(uintptr_t(1) << 20 | offset), t, {m, n},
                             {stride, 1});
}

TEST(RowAccess, AlignedRowsMoveAsVectors) {
  EXPECT_EQ(
      row_access({rows(DType::kBF16, 4, 4096, 4096, 0), rows(DType::kBF16, 4, 4096, 4096, 256)},
                 true),
      kRowVector);
  // A padded stride keeps every row aligned.
  EXPECT_EQ(row_access({rows(DType::kF32, 4, 1001, 1004, 0)}, true), kRowVector);
}

TEST(RowAccess, EquallyMisalignedRowsAreShifted) {
  // Odd N in bf16: row r starts 2r bytes off a boundary, in both tensors.
  EXPECT_EQ(
      row_access({rows(DType::kBF16, 4, 50257, 50257, 0), rows(DType::kBF16, 4, 50257, 50257, 512)},
                 true),
      kRowShifted);
  // Views that start off a boundary by the same amount (row 0 included).
  EXPECT_EQ(row_access({rows(DType::kF32, 4, 1000, 1001, 12), rows(DType::kF32, 4, 1000, 1001, 28)},
                       true),
            kRowShifted);
  // Absent tensors (an optional output not given) do not count.
  EXPECT_EQ(row_access({rows(DType::kBF16, 4, 7, 7, 0), TensorView{}}, true), kRowShifted);
}

TEST(RowAccess, UnequallyMisalignedRowsMoveElementByElement) {
  // Different offsets.
  EXPECT_EQ(
      row_access({rows(DType::kBF16, 4, 1000, 1001, 6), rows(DType::kBF16, 4, 1000, 1001, 12)},
                 true),
      kRowElementwise);
  // Same offset, different strides: rows drift apart.
  EXPECT_EQ(row_access({rows(DType::kBF16, 4, 1000, 1001, 0), rows(DType::kBF16, 4, 1000, 1003, 0)},
                       true),
            kRowElementwise);
  // Ops whose columns are tied to the element index (RMSNorm) never shift.
  EXPECT_EQ(row_access({rows(DType::kBF16, 4, 50257, 50257, 0)}, false), kRowElementwise);
}

TEST(RowAccess, OneRowHasNoStrideToMatch) {
  EXPECT_EQ(row_access({rows(DType::kBF16, 1, 1000, 1001, 2), rows(DType::kBF16, 1, 1000, 1003, 2)},
                       true),
            kRowShifted);
}

}  // namespace
}  // namespace kestrel::ops
