// The pass rules themselves: bounds, NaN / inf handling, worst-element report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "compare.h"
#include "random.h"

namespace kestrel::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Compare, Fp16RuleBound) {
  const std::vector<double> ref = {1.0, 100.0};
  EXPECT_TRUE(compare_fp16({1.0019, 100.1009}, ref).pass);
  const auto r = compare_fp16({1.0021, 100.0}, ref);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.count_bad, 1);
  EXPECT_EQ(r.worst_index, 0);
  EXPECT_NEAR(r.worst_err, 0.0021, 1e-12);
  EXPECT_FALSE(compare_fp16({1.0, 100.1011}, ref).pass);
}

TEST(Compare, Bf16RuleBound) {
  const std::vector<double> ref = {256.0, 0.0};
  EXPECT_TRUE(compare_bf16({258.0, 1e-6}, ref).pass);   // 2^-7 * 256 = 2
  EXPECT_FALSE(compare_bf16({258.01, 0.0}, ref).pass);
  EXPECT_FALSE(compare_bf16({256.0, 2e-6}, ref).pass);
}

TEST(Compare, NaNNeverPassesUnlessBothAreNaN) {
  EXPECT_FALSE(compare_fp16({kNaN}, {1.0}).pass);
  EXPECT_FALSE(compare_fp16({1.0}, {kNaN}).pass);
  EXPECT_TRUE(compare_fp16({kNaN}, {kNaN}).pass);
  EXPECT_FALSE(compare_fp32({kNaN, 1.0}, {1.0, 1.0}).pass);
  EXPECT_FALSE(compare_bf16({kNaN}, {0.0}).pass);
}

TEST(Compare, InfinitiesMustMatchExactly) {
  EXPECT_TRUE(compare_fp16({kInf, -kInf}, {kInf, -kInf}).pass);
  EXPECT_FALSE(compare_fp16({-kInf}, {kInf}).pass);
  EXPECT_FALSE(compare_fp16({1e300}, {kInf}).pass);
  EXPECT_FALSE(compare_fp16({kInf}, {1e300}).pass);
  EXPECT_FALSE(compare_fp32({kInf}, {3.0e38}).pass);
}

TEST(Compare, WorstIsTheElementFurthestOutOfItsBound) {
  // Element 1 has the larger error, element 2 the larger error relative to its bound.
  const auto r = compare_fp16({1.0, 1010.0, 0.01}, {1.0, 1000.0, 0.0});
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.count_bad, 2);
  EXPECT_EQ(r.worst_index, 2);
  EXPECT_EQ(r.worst_out, 0.01);
  EXPECT_EQ(r.worst_ref, 0.0);
  EXPECT_NE(r.to_string().find("FAIL"), std::string::npos);
}

TEST(Compare, NaNIsTheWorstElement) {
  const auto r = compare_fp16({1.5, kNaN}, {1.0, 1.0});
  EXPECT_EQ(r.count_bad, 2);
  EXPECT_EQ(r.worst_index, 1);
}

TEST(Compare, Fp32UsesTheRowRmsAsAMagnitudeFloor) {
  // Row 0: a near-zero element is judged against the row's RMS (~0.7).
  EXPECT_TRUE(compare_fp32({1.0, 1e-9 + 1e-7}, {1.0, 1e-9}, 1e-5, 2).pass);
  // Without the floor the same error is 100x its own magnitude.
  EXPECT_FALSE(compare_close(std::vector<double>{1e-9 + 1e-7}.data(),
                             std::vector<double>{1e-9}.data(), 1, 0.0, 1e-5)
                   .pass);
  // Row 1's small values are not helped by row 0's scale.
  EXPECT_FALSE(compare_fp32({1.0, 1.0, 1e-6, 1.1e-6}, {1.0, 1.0, 1e-6, 1e-6}, 1e-5, 2).pass);
  // Whole tensor as one row (row_len 0): then they are.
  EXPECT_TRUE(compare_fp32({1.0, 1.0, 1e-6, 1.1e-6}, {1.0, 1.0, 1e-6, 1e-6}, 1e-5, 0).pass);
  EXPECT_FALSE(compare_fp32({1.0 + 2e-5}, {1.0}).pass);
}

// softmax_bwd's dx = y (dy - sum(dy y)) computed in fp32 on rows of five
// where one y is near 1: every dx of such a row cancels to ~(1 - y_max) of
// its terms, so fp32's rounding of the sum fails 1e-5 of the row's RMS of dx,
// and is within 1e-5 of the row's RMS of the terms y dy.
TEST(Compare, Fp32TermsFloorTakesSoftmaxGradientCancellation) {
  const int64_t m = 40000, n = 5;
  const std::vector<double> x = random_normal(m * n, 9, 3.0), g = random_normal(m * n, 10);
  std::vector<double> y(size_t(m * n)), dy(size_t(m * n)), ref(size_t(m * n)),
      out(size_t(m * n)), terms(size_t(m * n));
  for (int64_t r = 0; r < m; ++r) {
    const double* xr = &x[size_t(r * n)];
    const double mx = *std::max_element(xr, xr + n);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(xr[j] - mx);
    double s = 0;
    float s32 = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = size_t(r * n + j);
      y[i] = double(float(std::exp(xr[j] - mx) / sum));  // the stored fp32 inputs
      dy[i] = double(float(g[i]));
      s += y[i] * dy[i];
      s32 += float(y[i]) * float(dy[i]);
    }
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = size_t(r * n + j);
      ref[i] = y[i] * (dy[i] - s);
      out[i] = double(float(y[i]) * (float(dy[i]) - s32));
      terms[i] = y[i] * dy[i];
    }
  }
  EXPECT_FALSE(compare_fp32(out, ref, 1e-5, n).pass);
  const CompareReport r = compare_fp32_terms(out, ref, terms, n);
  EXPECT_TRUE(r.pass) << r.to_string();
  // The floor still catches an error of the terms' size.
  out[7] += 1e-4 * std::fabs(terms[5]) + 1e-4;
  EXPECT_FALSE(compare_fp32_terms(out, ref, terms, n).pass);
}

TEST(Compare, RelativeL2) {
  const auto r = compare_fp16({3.0, 4.0 + 0.005}, {3.0, 4.0});
  EXPECT_NEAR(r.rel_l2, 0.005 / 5.0, 1e-12);
}

TEST(Compare, SizeMismatchFails) {
  const auto r = compare_fp16({1.0}, {1.0, 2.0});
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.to_string().find("size mismatch"), std::string::npos);
  EXPECT_FALSE(compare_exact(std::vector<uint8_t>{1}, std::vector<uint8_t>{1, 2}).pass);
}

TEST(Compare, ExactReportsTheFirstMismatch) {
  const std::vector<uint16_t> ref = {1, 2, 3, 4}, out = {1, 0x2a2a, 3, 5};
  const auto r = compare_exact(out, ref);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.count_bad, 2);
  EXPECT_EQ(r.first_bad, 1);
  EXPECT_EQ(r.first_out, 0x2a2au);
  EXPECT_EQ(r.first_ref, 2u);
  EXPECT_NE(r.to_string().find("0x2a2a"), std::string::npos);
  EXPECT_TRUE(compare_exact(ref, ref).pass);
}

}  // namespace
}  // namespace kestrel::testing
