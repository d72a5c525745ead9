// RMSNorm, softmax and cross-entropy references against the golden cases.
// Golden fp32 outputs are float64 results rounded to fp32, so the reference
// rounded to fp32 reproduces them bit for bit, except where the float64 value
// sits on an fp32 rounding midpoint to within its last bits: one such element
// (xent_2x70000_ls0.1 dlogits[96569], where p - eps/V cancels) differs by one
// fp32 ulp. So: every element within 2^-23 relative (one fp32 rounding step),
// and at most 1 in 10^4 elements not bit-identical (a definitional difference
// would change far more). float64 outputs (losses, lse) agree to 1e-12.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compare.h"
#include "golden_test.h"
#include "reference/reference.h"

namespace kestrel {
namespace {

using testing::GoldenCase;

std::vector<float> to_floats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// Reference (float64) vs a golden fp32 tensor, as described above.
void expect_fp32_bits(const std::vector<double>& ref, const GoldenCase& g, const std::string& key) {
  const auto golden = g.tensor(key).as<float>();
  const auto bits = testing::compare_exact(to_floats(ref), golden);
  EXPECT_LE(bits.count_bad, std::max<int64_t>(1, bits.count / 10000))
      << g.name() << "." << key << ": " << bits.to_string();
  const int64_t row = g.shape(key).back();
  const auto close = testing::compare_relative(std::vector<double>(golden.begin(), golden.end()),
                                               ref, std::ldexp(1.0, -23), row);
  EXPECT_TRUE(close.pass) << g.name() << "." << key << ": " << close.to_string();
}

void expect_f64(const std::vector<double>& ref, const GoldenCase& g, const std::string& key) {
  const auto r = testing::compare_relative(ref, g.doubles(key), 1e-12);
  EXPECT_TRUE(r.pass) << g.name() << "." << key << ": " << r.to_string();
}

class RmsNormGolden : public ::testing::TestWithParam<const char*> {};
TEST_P(RmsNormGolden, ForwardAndBackward) {
  KESTREL_REQUIRE_GOLDEN();
  const auto g = GoldenCase::load(GetParam());
  const auto shape = g.shape("x");
  const int64_t m = shape[0], n = shape[1];
  const auto x = g.doubles("x"), w = g.doubles("w"), dy = g.doubles("dy");
  const auto fwd = ref::rmsnorm_fwd(x.data(), w.data(), m, n, g.scalar("eps"));
  expect_fp32_bits(fwd.y, g, "y");
  const auto bwd = ref::rmsnorm_bwd(dy.data(), x.data(), w.data(), fwd.rstd.data(), m, n);
  expect_fp32_bits(bwd.dx, g, "dx");
  expect_fp32_bits(bwd.dweight, g, "dw");
}
INSTANTIATE_TEST_SUITE_P(Cases, RmsNormGolden,
                         ::testing::Values("rmsnorm_4x1000", "rmsnorm_2x70000"));

class SoftmaxGolden : public ::testing::TestWithParam<const char*> {};
TEST_P(SoftmaxGolden, ForwardAndBackward) {
  KESTREL_REQUIRE_GOLDEN();
  const auto g = GoldenCase::load(GetParam());
  const auto shape = g.shape("x");
  const int64_t m = shape[0], n = shape[1];
  const auto x = g.doubles("x"), dy = g.doubles("dy");
  const auto y = ref::softmax_fwd(x.data(), m, n);
  expect_fp32_bits(y, g, "y");
  // Backward from the float64 y, as the golden computes it.
  expect_fp32_bits(ref::softmax_bwd(dy.data(), y.data(), m, n), g, "dx");
}
INSTANTIATE_TEST_SUITE_P(Cases, SoftmaxGolden,
                         ::testing::Values("softmax_4x1000", "softmax_2x70000"));

class XentGolden : public ::testing::TestWithParam<const char*> {};
TEST_P(XentGolden, AllReductionsForwardAndBackward) {
  KESTREL_REQUIRE_GOLDEN();
  const auto g = GoldenCase::load(GetParam());
  const auto shape = g.shape("logits");
  const int64_t m = shape[0], v = shape[1];
  const auto logits = g.doubles("logits");
  const auto target = g.int64s("target");
  const int64_t ignore = g.integer("ignore_index");
  const double eps = g.scalar("label_smoothing");
  int64_t ignored_rows = 0;
  for (int64_t t : target) ignored_rows += t == ignore;
  EXPECT_GE(ignored_rows, 1) << "the case should exercise ignore_index";

  const struct {
    ref::Reduction red;
    const char* name;
  } reductions[] = {{ref::Reduction::kNone, "none"},
                    {ref::Reduction::kMean, "mean"},
                    {ref::Reduction::kSum, "sum"}};
  for (const auto& r : reductions) {
    SCOPED_TRACE(r.name);
    const auto fwd = ref::cross_entropy_fwd(logits.data(), target.data(), m, v, ignore, eps, r.red);
    expect_f64(fwd.lse, g, "lse");
    expect_f64(fwd.loss, g, std::string("loss_") + r.name);
    // Upstream gradient of ones, from the saved lse.
    const std::vector<double> ones(size_t(r.red == ref::Reduction::kNone ? m : 1), 1.0);
    const auto dx = ref::cross_entropy_bwd(ones.data(), logits.data(), target.data(),
                                           fwd.lse.data(), m, v, ignore, eps, r.red);
    expect_fp32_bits(dx, g, std::string("dlogits_") + r.name);
  }
}
INSTANTIATE_TEST_SUITE_P(Cases, XentGolden,
                         ::testing::Values("xent_4x1000_ls0.0", "xent_4x1000_ls0.1",
                                           "xent_2x70000_ls0.0", "xent_2x70000_ls0.1"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s) if (ch == '.') ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace kestrel
