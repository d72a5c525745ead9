// The packed weight order (kernels/common/nvfp4_weight_order.cuh): every
// value byte and scale code of the padded weights has its own place, and
// together they fill the packed buffer exactly; the API's byte count is the
// format's.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "common/nvfp4_weight_order.cuh"
#include "kestrel/gemm.h"

namespace kestrel {
namespace {

TEST(WeightOrder, ValuesAndScaleCodesTileTheBuffer) {
  for (auto [n, k, l] : {std::tuple<long long, long long, long long>{1, 64, 1},
                         {72, 64, 2},
                         {200, 4160, 1},
                         {256, 1024, 3}}) {
    const long long rows = packed_weight_blocks(n) * kPackedRows;
    const long long kp = packed_weight_stages(k) * 128;
    const long long bytes = l * packed_weight_batch_bytes(n, k);
    ASSERT_EQ(bytes, gemm_packed_weight_bytes(n, k, l));
    ASSERT_EQ(bytes, l * rows * (kp / 2 + kp / 16));
    std::vector<int> hits(size_t(bytes), 0);
    for (long long b = 0; b < l; ++b)
      for (long long r = 0; r < rows; ++r) {
        for (long long j = 0; j < kp / 2; ++j) ++hits[size_t(packed_weight_offset(n, k, b, r, j))];
        for (long long j = 0; j < kp / 16; ++j) ++hits[size_t(packed_scale_offset(n, k, b, r, j))];
      }
    for (size_t i = 0; i < hits.size(); ++i)
      ASSERT_EQ(hits[i], 1) << "N" << n << " K" << k << " L" << l << " byte " << i;
  }
}

// A stage of a 64-row block is its values, then its scale codes: one copy.
TEST(WeightOrder, AStageIsOneContiguousBlock) {
  const long long n = 200, k = 4160;
  const long long base = packed_weight_offset(n, k, 0, 64, 128);  // block 1, stage 2
  for (long long r = 64; r < 128; ++r) {
    for (long long j = 128; j < 192; ++j) {
      const long long off = packed_weight_offset(n, k, 0, r, j) - base;
      EXPECT_TRUE(off >= 0 && off < kPackedValueBytes) << r << " " << j;
    }
    for (long long b = 16; b < 24; ++b) {
      const long long off = packed_scale_offset(n, k, 0, r, b) - base;
      EXPECT_TRUE(off >= kPackedValueBytes && off < kPackedBlockStageBytes) << r << " " << b;
    }
  }
}

}  // namespace
}  // namespace kestrel
