// The kernels' scale-layout arithmetic (kernels/common/nvfp4_scale_layout.cuh)
// against the host API's blocked_scale_offset and the linear layout's
// strides, over ragged row and K counts and several batches.
#include <gtest/gtest.h>

#include "common/nvfp4_scale_layout.cuh"
#include "kestrel/nvfp4.h"

namespace kestrel {
namespace {

TEST(Nvfp4ScaleLayout, BlockedIndexMatchesTheHostApi) {
  for (long long rows : {1, 77, 128, 300})
    for (long long k : {16, 48, 64, 1040, 4096})
      for (int l = 0; l < 3; ++l)
        for (long long row = 0; row < rows; row += 13)
          for (long long kb = 0; kb < k / 16; ++kb)
            ASSERT_EQ(blocked_scale_index(l, row, kb, rows, k / 16),
                      blocked_scale_offset(l, row, kb, rows, k))
                << rows << "x" << k << " l" << l << " row " << row << " kb " << kb;
}

TEST(Nvfp4ScaleLayout, LinearOffsetUsesTheStrides) {
  EXPECT_EQ(scale_offset<false>(1000, 40, 2, 3, 5, 9, 10), 2 * 1000 + 3 * 40 + 5);
  EXPECT_EQ(scale_offset<true>(1000, 40, 2, 3, 5, 9, 10), blocked_scale_offset(2, 3, 5, 9, 160));
}

// What the GEMM's consumers rely on to read a row's scales from one base per
// row (kernels/nvfp4_gemm.cuh, load_scales): in both layouts the codes of
// blocks 8 kb + 2t and 8 kb + 2t + 1 are adjacent bytes at an even offset,
// and stage kb + 1's are 8 (linear, 4-byte aligned rows) or 1024 (blocked)
// bytes after stage kb's.
TEST(Nvfp4ScaleLayout, GemmScalePairsAreAdjacentAndStrideByStage) {
  for (long long rows : {1, 77, 128, 300})
    for (long long k : {64, 1088, 4096})
      for (int l = 0; l < 2; ++l)
        for (long long row = 0; row < rows; row += 7)
          for (long long t = 0; t < 4; ++t)
            for (long long kb = 0; 8 * kb + 2 * t < k / 16; ++kb) {
              const long long b0 = 8 * kb + 2 * t, kblocks = k / 16, stride = kblocks + 12;
              const long long blk = blocked_scale_index(l, row, b0, rows, kblocks);
              ASSERT_EQ(blk % 2, 0);
              ASSERT_EQ(blocked_scale_index(l, row, b0 + 1, rows, kblocks), blk + 1);
              ASSERT_EQ(blk, blocked_scale_index(l, row, 2 * t, rows, kblocks) + 1024 * kb);
              const long long lin = scale_offset<false>(stride * rows, stride, l, row, b0, rows, kblocks);
              ASSERT_EQ(lin, scale_offset<false>(stride * rows, stride, l, row, 2 * t, rows, kblocks) + 8 * kb);
              ASSERT_EQ(lin % 2, 0);
            }
}

}  // namespace
}  // namespace kestrel
