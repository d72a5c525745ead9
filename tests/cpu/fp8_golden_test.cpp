// FP8 GEMM + fused add reference against the golden case: acc (float64) and
// the bf16 output bits. Note: the golden acc_f64 is A B^T *before* alpha,
// while the reference's acc includes alpha (reference.h), hence the alpha below.
#include <gtest/gtest.h>

#include "compare.h"
#include "golden_test.h"
#include "host_float.h"
#include "random.h"
#include "reference/reference.h"

namespace kestrel {
namespace {

TEST(Fp8GemmAddGolden, MatchesAccAndOutputBits) {
  KESTREL_REQUIRE_GOLDEN();
  const auto g = testing::GoldenCase::load("fp8_gemm_add_64x128x256");
  const int64_t m = g.integer("M"), n = g.integer("N"), k = g.integer("K");
  const auto a = g.bytes("a"), b = g.bytes("b");
  const auto r = g.bits16("r");
  ASSERT_EQ(int64_t(a.size()), m * k);
  ASSERT_EQ(int64_t(b.size()), n * k);
  const double alpha = g.scalar("alpha");
  const auto out = ref::fp8_gemm_add(a.data(), b.data(), r.data(), m, n, k, alpha);
  std::vector<double> golden_acc = g.doubles("acc_f64");
  for (double& v : golden_acc) v *= alpha;
  const auto acc = testing::compare_relative(out.acc, golden_acc, 1e-12);
  EXPECT_TRUE(acc.pass) << "acc: " << acc.to_string();
  const auto golden_d = g.bits16("d_bf16");
  const auto d = testing::compare_exact(out.d_bf16, golden_d);
  EXPECT_TRUE(d.pass) << "d: " << d.to_string();
}

TEST(Fp8GemmAdd, AccIsExactForSmallIntegers) {
  // e4m3 codes of 1, 2, -1: the sums are small integers, checked by hand.
  const uint8_t one = 0x38, two = 0x40, minus_one = 0xB8;
  const std::vector<uint8_t> a = {one, two, minus_one, one};  // 2 x 2
  const std::vector<uint8_t> b = {two, two, one, minus_one};  // 2 x 2
  const std::vector<uint16_t> r = {testing::float_to_bf16_bits(0.5), 0, 0,
                                   testing::float_to_bf16_bits(-3.0)};
  const auto out = ref::fp8_gemm_add(a.data(), b.data(), r.data(), 2, 2, 2, 0.5);
  EXPECT_EQ(out.acc, (std::vector<double>{3.0, -0.5, 0.0, -1.0}));
  EXPECT_EQ(ref::bf16_value(out.d_bf16[0]), 3.5);
  EXPECT_EQ(ref::bf16_value(out.d_bf16[3]), -4.0);
}

}  // namespace
}  // namespace kestrel
