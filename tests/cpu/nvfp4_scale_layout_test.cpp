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

}  // namespace
}  // namespace kestrel
