// The reference quantizer against the golden quantize_* cases, byte for byte.
//
// What the golden bytes pin down (beyond the recipe in their note):
//  - a negative value whose magnitude rounds to 0 is stored as code 0 (+0),
//    never as 8 (-0); the cases hold many such values;
//  - the blocks include an all-zero block (scale code 0) and a block whose
//    amax / 6 / global_scale is exactly 448 (scale 0x7e, its max element code 7);
//  - the golden global_scale (625/168) is not an fp32 value: the bytes are the
//    same with the fp32-rounded scale the library takes, but `dequantized` was
//    computed with the float64 scale, so it is checked exactly against that and
//    to within fp32 rounding against the fp32-scale reference.
#include <gtest/gtest.h>

#include <cmath>

#include "common/nvfp4_codec.cuh"
#include "compare.h"
#include "golden_test.h"
#include "reference/reference.h"

namespace kestrel {
namespace {

class QuantizeGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantizeGolden, MatchesBytesAndDequantizedValues) {
  KESTREL_REQUIRE_GOLDEN();
  const auto c = testing::GoldenCase::load(GetParam());
  const auto shape = c.shape("x");
  ASSERT_EQ(shape.size(), 2u);
  const int64_t rows = shape[0], k = shape[1];
  const auto x = c.doubles("x");
  const double g64 = c.scalar("global_scale");
  const float g = float(g64);

  const ref::HostNvfp4 lin = ref::quantize_nvfp4(x.data(), 1, rows, k, g, ScaleLayout::kLinear);
  const auto v = testing::compare_exact(lin.values, c.bytes("values"));
  EXPECT_TRUE(v.pass) << "values: " << v.to_string();
  const auto s = testing::compare_exact(lin.scales, c.bytes("scales"));
  EXPECT_TRUE(s.pass) << "linear scales: " << s.to_string();

  const ref::HostNvfp4 blk = ref::quantize_nvfp4(x.data(), 1, rows, k, g, ScaleLayout::kBlocked);
  EXPECT_EQ(blk.values, lin.values);
  const auto sb = testing::compare_exact(blk.scales, c.bytes("scales_blocked"));
  EXPECT_TRUE(sb.pass) << "blocked scales: " << sb.to_string();

  // Dequantized with the golden's float64 global scale: exact.
  const auto dq_golden = c.doubles("dequantized");
  std::vector<double> dq64(dq_golden.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t kk = 0; kk < k; ++kk) {
      const uint8_t byte = lin.values[size_t(r * (k / 2) + kk / 2)];
      const unsigned code = (kk & 1) ? byte >> 4 : byte & 15u;
      dq64[size_t(r * k + kk)] = double(e2m1_to_float(code)) *
                                 double(e4m3_to_float(lin.scale_code(0, r, kk / 16))) * g64;
    }
  const auto e = testing::compare_exact(dq64, dq_golden);
  EXPECT_TRUE(e.pass) << "dequantized (float64 global scale): " << e.to_string();
  // The library's fp32 global scale: within the rounding of 625/168 to fp32.
  for (const auto* t : {&lin, &blk}) {
    const auto r = testing::compare_relative(ref::dequantize_nvfp4(*t), dq_golden, 1e-7);
    EXPECT_TRUE(r.pass) << "dequantized (fp32 global scale): " << r.to_string();
  }
}

TEST_P(QuantizeGolden, NegativeValuesRoundingToZeroAreStoredAsPlusZero) {
  KESTREL_REQUIRE_GOLDEN();
  const auto c = testing::GoldenCase::load(GetParam());
  const auto x = c.doubles("x");
  const auto values = c.bytes("values");
  int64_t seen = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const unsigned code = (i & 1) ? values[i / 2] >> 4 : values[i / 2] & 15u;
    if (x[i] < 0.0 && (code & 7u) == 0) {
      ++seen;
      EXPECT_EQ(code, 0u) << "element " << i << " x = " << x[i];
    }
  }
  EXPECT_GT(seen, 0) << "the case no longer exercises negative values that round to zero";
}

INSTANTIATE_TEST_SUITE_P(Cases, QuantizeGolden,
                         ::testing::Values("quantize_4x64", "quantize_33x256"));

}  // namespace
}  // namespace kestrel
