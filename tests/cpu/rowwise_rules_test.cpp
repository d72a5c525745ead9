// Self-checks of the row-reduction references beyond the golden cases:
// backward passes against central finite differences of the forward passes,
// and the cross-entropy edge cases (all rows ignored, bad targets, no weight).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "random.h"
#include "reference/reference.h"

namespace kestrel {
namespace {

// d/dx_i of f at x, central difference with a step relative to |x_i|.
std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& f,
                                 std::vector<double> x) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i], h = 1e-6 * std::fmax(1.0, std::fabs(x0));
    x[i] = x0 + h;
    const double up = f(x);
    x[i] = x0 - h;
    const double down = f(x);
    x[i] = x0;
    g[i] = (up - down) / (2.0 * h);
  }
  return g;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << "element " << i;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

TEST(RmsNormRules, BackwardMatchesFiniteDifferences) {
  const int64_t m = 3, n = 17;
  const auto x = testing::random_normal(m * n, 1), w = testing::random_normal(n, 2),
             dy = testing::random_normal(m * n, 3);
  const double eps = 1e-5;
  for (const double* weight : {w.data(), static_cast<const double*>(nullptr)}) {
    const auto fwd = ref::rmsnorm_fwd(x.data(), weight, m, n, eps);
    const auto bwd = ref::rmsnorm_bwd(dy.data(), x.data(), weight, fwd.rstd.data(), m, n);
    // L = sum dy * y: dL/dx = dx, dL/dw = dweight.
    const auto gx = numeric_grad(
        [&](const std::vector<double>& xx) {
          return dot(dy, ref::rmsnorm_fwd(xx.data(), weight, m, n, eps).y);
        },
        x);
    expect_close(bwd.dx, gx, 1e-6);
    if (weight) {
      const auto gw = numeric_grad(
          [&](const std::vector<double>& ww) {
            return dot(dy, ref::rmsnorm_fwd(x.data(), ww.data(), m, n, eps).y);
          },
          w);
      expect_close(bwd.dweight, gw, 1e-6);
    } else {
      EXPECT_TRUE(bwd.dweight.empty());
    }
  }
}

TEST(SoftmaxRules, RowsSumToOneWithoutOverflow) {
  const std::vector<double> x = {1000.0, 999.0, -1000.0, 0.0};
  const auto y = ref::softmax_fwd(x.data(), 1, 4);
  EXPECT_NEAR(y[0] + y[1] + y[2] + y[3], 1.0, 1e-15);
  EXPECT_NEAR(y[0] / y[1], std::exp(1.0), 1e-12);
}

TEST(SoftmaxRules, BackwardMatchesFiniteDifferences) {
  const int64_t m = 2, n = 9;
  const auto x = testing::random_normal(m * n, 4, 3.0), dy = testing::random_normal(m * n, 5);
  const auto y = ref::softmax_fwd(x.data(), m, n);
  const auto g = numeric_grad(
      [&](const std::vector<double>& xx) { return dot(dy, ref::softmax_fwd(xx.data(), m, n)); }, x);
  expect_close(ref::softmax_bwd(dy.data(), y.data(), m, n), g, 1e-7);
}

TEST(CrossEntropyRules, BackwardMatchesFiniteDifferencesForEveryReduction) {
  const int64_t m = 4, v = 7, ignore = -100;
  const auto x = testing::random_normal(m * v, 6, 2.0);
  const std::vector<int64_t> t = {3, ignore, 0, 6};
  for (double eps : {0.0, 0.1}) {
    for (auto red : {ref::Reduction::kNone, ref::Reduction::kSum, ref::Reduction::kMean}) {
      const auto up = testing::random_normal(red == ref::Reduction::kNone ? m : 1, 7);
      const auto fwd = ref::cross_entropy_fwd(x.data(), t.data(), m, v, ignore, eps, red);
      const auto dx = ref::cross_entropy_bwd(up.data(), x.data(), t.data(), fwd.lse.data(), m, v,
                                             ignore, eps, red);
      const auto g = numeric_grad(
          [&](const std::vector<double>& xx) {
            return dot(up, ref::cross_entropy_fwd(xx.data(), t.data(), m, v, ignore, eps, red).loss);
          },
          x);
      expect_close(dx, g, 1e-7);
      for (int64_t j = 0; j < v; ++j) EXPECT_EQ(dx[size_t(1 * v + j)], 0.0) << "ignored row";
    }
  }
}

TEST(CrossEntropyRules, LabelSmoothingFormula) {
  // One row, V = 4: loss = (1 - eps)(lse - x_t) + eps (lse - mean x).
  const std::vector<double> x = {0.5, -1.0, 2.0, 0.0};
  const int64_t t = 2;
  const double eps = 0.2;
  const double lse = std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0) + 1.0);
  const double want = (1 - eps) * (lse - 2.0) + eps * (lse - 1.5 / 4);
  const auto fwd = ref::cross_entropy_fwd(x.data(), &t, 1, 4, -100, eps, ref::Reduction::kNone);
  EXPECT_NEAR(fwd.loss[0], want, 1e-15);
  EXPECT_NEAR(fwd.lse[0], lse, 1e-15);
}

TEST(CrossEntropyRules, AllIgnoredMeanIsNaNSumIsZeroGradsAreZero) {
  const int64_t m = 3, v = 5;
  const auto x = testing::random_normal(m * v, 8);
  const std::vector<int64_t> t(3, -1);
  const auto mean = ref::cross_entropy_fwd(x.data(), t.data(), m, v, -1, 0.1, ref::Reduction::kMean);
  ASSERT_EQ(mean.loss.size(), 1u);
  EXPECT_TRUE(std::isnan(mean.loss[0]));
  const auto sum = ref::cross_entropy_fwd(x.data(), t.data(), m, v, -1, 0.1, ref::Reduction::kSum);
  EXPECT_EQ(sum.loss[0], 0.0);
  const double one = 1.0;
  const auto dx = ref::cross_entropy_bwd(&one, x.data(), t.data(), mean.lse.data(), m, v, -1, 0.1,
                                         ref::Reduction::kMean);
  for (double d : dx) EXPECT_EQ(d, 0.0);
}

TEST(CrossEntropyRules, RejectsTargetsOutsideTheVocabulary) {
  const std::vector<double> x(8, 0.0);
  const std::vector<int64_t> t = {0, 4};
  EXPECT_THROW(ref::cross_entropy_fwd(x.data(), t.data(), 2, 4, -100, 0.0, ref::Reduction::kNone),
               std::invalid_argument);
}

}  // namespace
}  // namespace kestrel
