// NVFP4 GEMV / GEMM / dual GEMM / grouped GEMM references against the golden
// cases: the float64 results agree to ~1e-12 (both are near exact), the fp16
// rounding of the reference equals the golden fp16 output bit for bit, and
// the golden fp16 output passes the fp16 rule against the reference.
//
// The golden fp16 outputs are PyTorch's float64 -> fp16 conversion, which goes
// through fp32 (two roundings): dual_77x200x512 element 4836 is
// -284.62500488..., fp32 -284.625 (an fp16 tie), fp16 -284.5, where a single
// rounding gives -284.75. A kernel rounding its fp32 accumulator behaves the
// same way, so the bits are compared through fp32 here.
#include <gtest/gtest.h>

#include "compare.h"
#include "golden_nvfp4.h"
#include "golden_test.h"
#include "host_float.h"
#include "reference/reference.h"

namespace kestrel {
namespace {

using testing::GoldenCase;

void expect_matches_golden(const std::vector<double>& c, const GoldenCase& g,
                           const std::string& f64, const std::string& f16 = "") {
  const auto r = testing::compare_relative(c, g.doubles(f64), 1e-12);
  EXPECT_TRUE(r.pass) << g.name() << "." << f64 << ": " << r.to_string();
  if (f16.empty()) return;
  const auto golden16 = g.bits16(f16);
  std::vector<uint16_t> via_fp32(c.size());
  for (size_t i = 0; i < c.size(); ++i) via_fp32[i] = testing::float_to_fp16_bits(float(c[i]));
  const auto bits = testing::compare_exact(via_fp32, golden16);
  EXPECT_TRUE(bits.pass) << g.name() << "." << f16 << " bits: " << bits.to_string();
  const auto rule = testing::compare_fp16(testing::fp16_to_doubles(golden16), c);
  EXPECT_TRUE(rule.pass) << g.name() << "." << f16 << ": " << rule.to_string();
}

class GemvGolden : public ::testing::TestWithParam<const char*> {};
TEST_P(GemvGolden, MatchesGolden) {
  KESTREL_REQUIRE_GOLDEN();
  const auto g = GoldenCase::load(GetParam());
  const auto a = testing::golden_nvfp4(g, "a", "sfa");
  const auto b = testing::golden_nvfp4(g, "b", "sfb");
  ASSERT_EQ(a.batches, g.integer("L"));
  ASSERT_EQ(a.rows, g.integer("M"));
  ASSERT_EQ(a.k, g.integer("K"));
  expect_matches_golden(ref::gemv_nvfp4(a, b), g, "c_f64", "c_f16");
}
INSTANTIATE_TEST_SUITE_P(Cases, GemvGolden, ::testing::Values("gemv_64x256x3", "gemv_200x1024x1"));

class GemmGolden : public ::testing::TestWithParam<const char*> {};
TEST_P(GemmGolden, MatchesGoldenWithLinearAndBlockedScales) {
  KESTREL_REQUIRE_GOLDEN();
  const auto g = GoldenCase::load(GetParam());
  const float ga = float(g.scalar("global_scale_a")), gb = float(g.scalar("global_scale_b"));
  ASSERT_EQ(double(ga), g.scalar("global_scale_a")) << "global scale is not an fp32 value";
  ASSERT_EQ(double(gb), g.scalar("global_scale_b")) << "global scale is not an fp32 value";
  for (ScaleLayout layout : {ScaleLayout::kLinear, ScaleLayout::kBlocked}) {
    const bool blocked = layout == ScaleLayout::kBlocked;
    const auto a = testing::golden_nvfp4(g, "a", blocked ? "sfa_blocked" : "sfa", layout, ga);
    const auto b = testing::golden_nvfp4(g, "b", blocked ? "sfb_blocked" : "sfb", layout, gb);
    ASSERT_EQ(a.rows, g.integer("M"));
    ASSERT_EQ(b.rows, g.integer("N"));
    ASSERT_EQ(a.k, g.integer("K"));
    SCOPED_TRACE(blocked ? "blocked scales" : "linear scales");
    expect_matches_golden(ref::gemm_nvfp4(a, b), g, "c_f64", "c_f16");
  }
}
INSTANTIATE_TEST_SUITE_P(Cases, GemmGolden,
                         ::testing::Values("gemm_1x128x256", "gemm_77x200x512",
                                           "gemm_128x256x1024"));

class DualGolden : public ::testing::TestWithParam<const char*> {};
TEST_P(DualGolden, MatchesGolden) {
  KESTREL_REQUIRE_GOLDEN();
  const auto g = GoldenCase::load(GetParam());
  const auto a = testing::golden_nvfp4(g, "a", "sfa");
  const auto b1 = testing::golden_nvfp4(g, "b1", "sfb1");
  const auto b2 = testing::golden_nvfp4(g, "b2", "sfb2");
  ASSERT_EQ(b1.rows, g.integer("N"));
  expect_matches_golden(ref::dual_gemm_nvfp4(a, b1, b2), g, "c_f64", "c_f16");
}
INSTANTIATE_TEST_SUITE_P(Cases, DualGolden,
                         ::testing::Values("dual_1x128x256", "dual_77x200x512"));

TEST(GroupedGolden, MatchesGoldenIncludingAnEmptyGroup) {
  KESTREL_REQUIRE_GOLDEN();
  const auto g = GoldenCase::load("grouped");
  const int64_t groups = g.integer("G");
  const auto ms = g.integers("M");
  ASSERT_EQ(int64_t(ms.size()), groups);
  std::vector<ref::HostNvfp4> a, b;
  for (int64_t i = 0; i < groups; ++i) {
    const std::string s = std::to_string(i);
    a.push_back(testing::golden_nvfp4(g, "a" + s, "sfa" + s));
    b.push_back(testing::golden_nvfp4(g, "b" + s, "sfb" + s));
    ASSERT_EQ(a.back().rows, ms[size_t(i)]);
  }
  const auto c = ref::grouped_gemm_nvfp4(a, b);
  ASSERT_EQ(int64_t(c.size()), groups);
  for (int64_t i = 0; i < groups; ++i) {
    EXPECT_EQ(int64_t(c[size_t(i)].size()), ms[size_t(i)] * g.integer("N"));
    expect_matches_golden(c[size_t(i)], g, "c" + std::to_string(i) + "_f64");
  }
}

}  // namespace
}  // namespace kestrel
