// The blocked ("128x4") scale layout: the offset formula is a bijection onto
// blocked_scale_bytes, and the reference layout conversion round-trips.
#include <gtest/gtest.h>

#include <vector>

#include "golden_test.h"
#include "random.h"
#include "reference/reference.h"

namespace kestrel {
namespace {

struct Dims {
  int64_t rows, k, batches;
};
const Dims kOddSizes[] = {{1, 16, 1},   {33, 48, 1},   {127, 80, 2},  {128, 64, 1},
                          {129, 1040, 3}, {200, 16, 2}, {257, 272, 1}};

TEST(ScaleLayout, BlockedOffsetsCoverEveryByteExactlyOnce) {
  for (const Dims& d : kOddSizes) {
    const int64_t bytes = blocked_scale_bytes(d.rows, d.k, d.batches);
    const int64_t kblocks = d.k / 16;
    const int64_t padded_rows = (d.rows + 127) / 128 * 128, padded_kb = (kblocks + 3) / 4 * 4;
    // Over the padded index space every byte is hit exactly once ...
    std::vector<int> hits(static_cast<size_t>(bytes), 0);
    for (int64_t b = 0; b < d.batches; ++b)
      for (int64_t r = 0; r < padded_rows; ++r)
        for (int64_t kb = 0; kb < padded_kb; ++kb) {
          const int64_t off = blocked_scale_offset(b, r, kb, d.rows, d.k);
          ASSERT_GE(off, 0);
          ASSERT_LT(off, bytes);
          ++hits[size_t(off)];
        }
    for (int64_t i = 0; i < bytes; ++i)
      ASSERT_EQ(hits[size_t(i)], 1) << "byte " << i << " rows " << d.rows << " k " << d.k;
    // ... so the real (row, kblock) entries land on distinct bytes.
  }
}

TEST(ScaleLayout, ConvertRoundTripsAndZeroFillsPadding) {
  uint64_t seed = 1;
  for (const Dims& d : kOddSizes) {
    const int64_t n = d.batches * d.rows * (d.k / 16);
    std::vector<uint8_t> lin(static_cast<size_t>(n));
    testing::Rng rng(seed++);
    for (uint8_t& s : lin) s = uint8_t(1 + rng.below(0x7e));  // nonzero, so padding stands out
    const auto blk = ref::convert_scales(lin, ScaleLayout::kLinear, ScaleLayout::kBlocked, d.rows,
                                         d.k, d.batches);
    ASSERT_EQ(int64_t(blk.size()), blocked_scale_bytes(d.rows, d.k, d.batches));
    int64_t nonzero = 0;
    for (uint8_t s : blk) nonzero += s != 0;
    EXPECT_EQ(nonzero, n) << "padding must be zero";
    for (int64_t b = 0; b < d.batches; ++b)
      for (int64_t r = 0; r < d.rows; ++r)
        for (int64_t kb = 0; kb < d.k / 16; ++kb)
          ASSERT_EQ(blk[size_t(blocked_scale_offset(b, r, kb, d.rows, d.k))],
                    lin[size_t((b * d.rows + r) * (d.k / 16) + kb)]);
    EXPECT_EQ(ref::convert_scales(blk, ScaleLayout::kBlocked, ScaleLayout::kLinear, d.rows, d.k,
                                  d.batches),
              lin);
    EXPECT_EQ(ref::convert_scales(lin, ScaleLayout::kLinear, ScaleLayout::kLinear, d.rows, d.k,
                                  d.batches),
              lin);
  }
}

TEST(ScaleLayout, ConvertRejectsWrongSize) {
  std::vector<uint8_t> lin(10);
  EXPECT_THROW(ref::convert_scales(lin, ScaleLayout::kLinear, ScaleLayout::kBlocked, 3, 64, 1),
               std::invalid_argument);
}

// The golden GEMM cases carry both layouts of the same scales.
TEST(ScaleLayout, ConvertMatchesGoldenBlockedScales) {
  KESTREL_REQUIRE_GOLDEN();
  for (const char* name : {"gemm_1x128x256", "gemm_77x200x512", "gemm_128x256x1024"}) {
    const auto c = testing::GoldenCase::load(name);
    for (const char* op : {"a", "b"}) {
      const std::string sf = std::string("sf") + op;
      const auto shape = c.shape(sf);
      const int64_t rows = shape[0], k = shape[1] * 16;
      const auto lin = c.bytes(sf), blk = c.bytes(sf + "_blocked");
      EXPECT_EQ(ref::convert_scales(lin, ScaleLayout::kLinear, ScaleLayout::kBlocked, rows, k, 1),
                blk) << name << " " << sf;
      EXPECT_EQ(ref::convert_scales(blk, ScaleLayout::kBlocked, ScaleLayout::kLinear, rows, k, 1),
                lin) << name << " " << sf;
    }
  }
}

}  // namespace
}  // namespace kestrel
