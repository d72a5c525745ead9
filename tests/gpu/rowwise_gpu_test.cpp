// GPU RMSNorm, softmax and cross-entropy, forward and backward, against the
// float64 references (fresh random data, odd N, strided rows, forced
// configurations including clusters), the golden vectors, extreme inputs,
// in-place use, determinism, and argument errors.
//
// Suites named RowwiseSmall* / RowwiseArgs / RowwiseGolden use small shapes:
// the subset to run under compute-sanitizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "golden_test.h"
#include "gpu_test.h"
#include "kestrel/rowwise.h"
#include "random.h"
#include "reference/reference.h"
#include "rowwise_data.h"

namespace kestrel {
namespace {

using testing::compare_as;
using testing::DeviceBuffer;
using testing::DeviceRows;
using testing::Rows;

constexpr double kInf = std::numeric_limits<double>::infinity();

#define ASSERT_OK(expr)                                        \
  do {                                                         \
    const ::kestrel::Status st_ = (expr);                      \
    ASSERT_TRUE(st_.ok()) << #expr << ": " << st_.to_string(); \
  } while (0)
#define EXPECT_PASS(report, what)                             \
  do {                                                        \
    const auto r_ = (report);                                 \
    EXPECT_TRUE(r_.pass) << (what) << ": " << r_.to_string(); \
  } while (0)

TensorView vec_view(const DeviceBuffer& b, DType t, int64_t len) {
  return TensorView::dense(b.get(), t, {len});
}
TensorView vec_view(const DeviceRows& d) {
  return TensorView::dense(d.buf.get(), d.view.dtype, {d.view.shape[1]});
}

ref::Reduction to_ref(Reduction r) {
  return r == Reduction::kNone  ? ref::Reduction::kNone
         : r == Reduction::kSum ? ref::Reduction::kSum
                                : ref::Reduction::kMean;
}
const char* name_of(Reduction r) {
  return r == Reduction::kNone ? "none" : r == Reduction::kSum ? "sum" : "mean";
}
constexpr Reduction kReductions[] = {Reduction::kNone, Reduction::kSum, Reduction::kMean};

struct Case {
  DType t;
  int64_t m, n, pad;                    // pad: extra elements per row (strided rows)
  std::optional<RowwiseConfig> config;  // none: the heuristic
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string s =
      std::string(dtype_name(c.t)) + "_" + std::to_string(c.m) + "x" + std::to_string(c.n);
  if (c.pad) s += "_pad" + std::to_string(c.pad);
  if (c.config)
    s += "_t" + std::to_string(c.config->threads) + "r" +
         std::to_string(c.config->threads_per_row) + "c" + std::to_string(c.config->cluster);
  return s;
}

const RowwiseConfig* config_of(const Case& c) { return c.config ? &*c.config : nullptr; }

Rows random_rows(const Case& c, uint64_t seed, double scale = 1.0) {
  return Rows(c.t, c.m, c.n, c.pad, testing::random_normal(c.m * c.n, seed, scale));
}
Rows random_weight(const Case& c, uint64_t seed) {
  return Rows(c.t, 1, c.n, 0, testing::random_normal(c.n, seed, 0.5));
}

// The backwards' dx cancel where a row is dominated by one element, and an
// fp32 kernel's error is relative to the terms, not to the small result:
// RMSNorm's dx = rstd (g - xhat mean(g xhat)) ~ 0 for a row of one element
// (xhat = +-1 up to eps), the terms rstd g; softmax's dx = y (dy - sum(dy y))
// when one y is near 1, the terms y dy (an fp32 emulation of that formula on
// 40000 rows of 5, x ~ N(0, 9): 1205 rows fail 1e-5 of the row's RMS of dx,
// none with the terms' RMS as the floor; session 20, and the CPU test
// Compare.Fp32TermsFloorTakesSoftmaxGradientCancellation). So fp32 dx is
// judged with the row's RMS of `terms` as a further floor.
testing::CompareReport compare_with_terms(DType t, const std::vector<double>& out,
                                          const std::vector<double>& ref,
                                          const std::vector<double>& terms, int64_t n) {
  if (t != DType::kF32) return compare_as(t, out, ref, n);
  return testing::compare_fp32_terms(out, ref, terms, n);
}

testing::CompareReport compare_dx(DType t, const std::vector<double>& out,
                                  const std::vector<double>& ref, const Rows& dy, const Rows* w,
                                  const std::vector<double>& rstd) {
  std::vector<double> g(ref.size());
  for (int64_t r = 0; r < dy.m; ++r)
    for (int64_t j = 0; j < dy.n; ++j)
      g[size_t(r * dy.n + j)] = rstd[size_t(r)] * dy.values[size_t(r * dy.n + j)] *
                                (w ? w->values[size_t(j)] : 1.0);
  return compare_with_terms(t, out, ref, g, dy.n);
}

class RowwiseGpu : public ::testing::TestWithParam<Case> {};

void check_rmsnorm_fwd(const Case& c) {
  const Rows x = random_rows(c, 1), w = random_weight(c, 2);
  const float eps = 1e-5f;
  const auto want = ref::rmsnorm_fwd(x.values.data(), w.values.data(), c.m, c.n, eps);
  const DeviceRows dx = DeviceRows::input(x), dw = DeviceRows::input(w),
                   y = DeviceRows::poisoned_like(x);
  const DeviceBuffer rstd = testing::poisoned_f32(size_t(c.m));
  RmsNormOptions opt;
  opt.eps = eps;
  opt.config = config_of(c);
  ASSERT_OK(
      rmsnorm_fwd(dx.view, vec_view(dw), y.view, vec_view(rstd, DType::kF32, c.m), nullptr, opt));
  EXPECT_PASS(compare_as(c.t, y.read(), want.y, c.n), "y");
  EXPECT_PASS(testing::compare_fp32(testing::read_f32(rstd), want.rstd, 1e-5, c.m), "rstd");
}

void check_rmsnorm_fwd_residual(const Case& c) {
  const Rows x = random_rows(c, 3), res = random_rows(c, 4);
  std::vector<double> h(x.values.size());
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = testing::stored_value(c.t, x.values[i] + res.values[i]);
  const auto want = ref::rmsnorm_fwd(h.data(), nullptr, c.m, c.n, 1e-6);
  const DeviceRows dx = DeviceRows::input(x), dres = DeviceRows::input(res),
                   y = DeviceRows::poisoned_like(x), dh = DeviceRows::poisoned_like(x);
  RmsNormOptions opt;
  opt.config = config_of(c);
  ASSERT_OK(rmsnorm_fwd_residual(dx.view, dres.view, {}, y.view, dh.view, {}, nullptr, opt));
  EXPECT_PASS(compare_as(c.t, dh.read(), h, c.n), "h");
  EXPECT_PASS(compare_as(c.t, y.read(), want.y, c.n), "y");
}

TEST_P(RowwiseGpu, RmsNormForward) {
  KESTREL_REQUIRE_GPU();
  check_rmsnorm_fwd(GetParam());
}

TEST_P(RowwiseGpu, RmsNormForwardResidual) {
  KESTREL_REQUIRE_GPU();
  check_rmsnorm_fwd_residual(GetParam());
}

void check_rmsnorm_bwd(const Case& c) {
  const Rows x = random_rows(c, 5), dy = random_rows(c, 6), w = random_weight(c, 7);
  const auto rstd =
      testing::round_f32(ref::rmsnorm_fwd(x.values.data(), w.values.data(), c.m, c.n, 1e-6).rstd);
  const auto want =
      ref::rmsnorm_bwd(dy.values.data(), x.values.data(), w.values.data(), rstd.data(), c.m, c.n);
  const DeviceRows ddy = DeviceRows::input(dy), dx_in = DeviceRows::input(x),
                   dw = DeviceRows::input(w), dx = DeviceRows::poisoned_like(x);
  const DeviceBuffer drstd = testing::upload_f32(rstd),
                     dweight = testing::poisoned_f32(size_t(c.n));
  RmsNormOptions opt;
  opt.config = config_of(c);
  ASSERT_OK(rmsnorm_bwd(ddy.view, dx_in.view, vec_view(dw), vec_view(drstd, DType::kF32, c.m),
                        dx.view, vec_view(dweight, DType::kF32, c.n), nullptr, opt));
  EXPECT_PASS(compare_dx(c.t, dx.read(), want.dx, dy, &w, rstd), "dx");
  EXPECT_PASS(testing::compare_fp32(testing::read_f32(dweight), want.dweight, 1e-5, c.n),
              "dweight");
}

void check_rmsnorm_bwd_no_weight(const Case& c) {
  const Rows x = random_rows(c, 5), dy = random_rows(c, 6);
  const auto rstd =
      testing::round_f32(ref::rmsnorm_fwd(x.values.data(), nullptr, c.m, c.n, 1e-6).rstd);
  const auto want =
      ref::rmsnorm_bwd(dy.values.data(), x.values.data(), nullptr, rstd.data(), c.m, c.n);
  const DeviceRows ddy = DeviceRows::input(dy), dxin = DeviceRows::input(x),
                   dx = DeviceRows::poisoned_like(x);
  const DeviceBuffer drstd = testing::upload_f32(rstd);
  RmsNormOptions opt;
  opt.config = config_of(c);
  ASSERT_OK(rmsnorm_bwd(ddy.view, dxin.view, {}, vec_view(drstd, DType::kF32, c.m), dx.view, {},
                        nullptr, opt));
  EXPECT_PASS(compare_dx(c.t, dx.read(), want.dx, dy, nullptr, rstd), "dx without weight");
}

TEST_P(RowwiseGpu, RmsNormBackward) {
  KESTREL_REQUIRE_GPU();
  if (GetParam().config && GetParam().config->threads < 128)
    GTEST_SKIP() << "rmsnorm_bwd has no CTAs under 128 threads (RowwiseConfig rules)";
  check_rmsnorm_bwd(GetParam());
  check_rmsnorm_bwd_no_weight(GetParam());
}

void check_softmax_fwd(const Case& c) {
  const Rows x = random_rows(c, 8, 3.0);
  const auto want = ref::softmax_fwd(x.values.data(), c.m, c.n);
  const DeviceRows dx = DeviceRows::input(x), y = DeviceRows::poisoned_like(x);
  ASSERT_OK(softmax_fwd(dx.view, y.view, nullptr, config_of(c)));
  EXPECT_PASS(compare_as(c.t, y.read(), want, c.n), "y");
}

TEST_P(RowwiseGpu, SoftmaxForward) {
  KESTREL_REQUIRE_GPU();
  check_softmax_fwd(GetParam());
}

void check_softmax_bwd(const Case& c) {
  const Rows x = random_rows(c, 9, 3.0), dy = random_rows(c, 10);
  const Rows y(c.t, c.m, c.n, c.pad, ref::softmax_fwd(x.values.data(), c.m, c.n));
  const auto want = ref::softmax_bwd(dy.values.data(), y.values.data(), c.m, c.n);
  const DeviceRows ddy = DeviceRows::input(dy), dyv = DeviceRows::input(y),
                   dx = DeviceRows::poisoned_like(x);
  ASSERT_OK(softmax_bwd(ddy.view, dyv.view, dx.view, nullptr, config_of(c)));
  std::vector<double> terms(want.size());
  for (size_t i = 0; i < terms.size(); ++i) terms[i] = y.values[i] * dy.values[i];
  EXPECT_PASS(compare_with_terms(c.t, dx.read(), want, terms, c.n), "dx");
}

TEST_P(RowwiseGpu, SoftmaxBackward) {
  KESTREL_REQUIRE_GPU();
  check_softmax_bwd(GetParam());
}

void check_xent_fwd(const Case& c) {
  const Rows logits = random_rows(c, 11, 2.0);
  const auto target = testing::random_targets(c.m, c.n, 12, -100, 5);
  const DeviceRows dl = DeviceRows::input(logits);
  const DeviceBuffer dt = DeviceBuffer::from(target);
  for (double eps : {0.0, 0.1})
    for (Reduction red : kReductions) {
      SCOPED_TRACE(std::string(name_of(red)) + " smoothing " + std::to_string(eps));
      const auto want = ref::cross_entropy_fwd(logits.values.data(), target.data(), c.m, c.n, -100,
                                               eps, to_ref(red));
      const int64_t loss_len = red == Reduction::kNone ? c.m : 1;
      const DeviceBuffer loss = testing::poisoned_f32(size_t(loss_len)),
                         lse = testing::poisoned_f32(size_t(c.m));
      CrossEntropyOptions opt;
      opt.label_smoothing = float(eps);
      opt.reduction = red;
      opt.config = config_of(c);
      ASSERT_OK(cross_entropy_fwd(dl.view, vec_view(dt, DType::kI64, c.m),
                                  vec_view(loss, DType::kF32, loss_len),
                                  vec_view(lse, DType::kF32, c.m), nullptr, opt));
      EXPECT_PASS(testing::compare_fp32(testing::read_f32(lse), want.lse, 1e-5, c.m), "lse");
      EXPECT_PASS(testing::compare_fp32(testing::read_f32(loss), want.loss, 1e-5, loss_len),
                  "loss");
    }
}

void check_xent_bwd(const Case& c) {
  const Rows logits = random_rows(c, 13, 2.0);
  const auto target = testing::random_targets(c.m, c.n, 14, -100, 5);
  const auto lse =
      testing::round_f32(ref::cross_entropy_fwd(logits.values.data(), target.data(), c.m, c.n, -100,
                                                0.0, ref::Reduction::kNone)
                             .lse);
  const DeviceRows dl = DeviceRows::input(logits);
  const DeviceBuffer dt = DeviceBuffer::from(target), dlse = testing::upload_f32(lse);
  for (double eps : {0.0, 0.1})
    for (Reduction red : kReductions) {
      SCOPED_TRACE(std::string(name_of(red)) + " smoothing " + std::to_string(eps));
      const auto dloss = testing::round_f32(
          red == Reduction::kNone ? testing::random_normal(c.m, 15) : std::vector<double>{0.75});
      const auto want = ref::cross_entropy_bwd(dloss.data(), logits.values.data(), target.data(),
                                               lse.data(), c.m, c.n, -100, eps, to_ref(red));
      const DeviceBuffer ddloss = testing::upload_f32(dloss);
      const DeviceRows dx = DeviceRows::poisoned_like(logits);
      CrossEntropyOptions opt;
      opt.label_smoothing = float(eps);
      opt.reduction = red;
      opt.config = config_of(c);
      ASSERT_OK(cross_entropy_bwd(vec_view(ddloss, DType::kF32, int64_t(dloss.size())), dl.view,
                                  vec_view(dt, DType::kI64, c.m), vec_view(dlse, DType::kF32, c.m),
                                  dx.view, nullptr, opt));
      EXPECT_PASS(compare_as(c.t, dx.read(), want, c.n), "dlogits");
    }
}

TEST_P(RowwiseGpu, CrossEntropyForwardEveryReduction) {
  KESTREL_REQUIRE_GPU();
  check_xent_fwd(GetParam());
}

TEST_P(RowwiseGpu, CrossEntropyBackwardEveryReduction) {
  KESTREL_REQUIRE_GPU();
  check_xent_bwd(GetParam());
}

// More rows than cross-entropy's finishing CTA loads in one round (16384):
// its count and sum loops. Five classes: p near 1 at the target in many rows.
TEST(RowwiseManyRows, CrossEntropy) {
  KESTREL_REQUIRE_GPU();
  const Case c{DType::kF32, 40000, 5, 0, std::nullopt};
  check_xent_fwd(c);
  check_xent_bwd(c);
}

// Many rows of five: one probability near 1 in hundreds of them, where
// softmax's dx cancels (judged against its terms, compare_with_terms).
TEST(RowwiseManyRows, SoftmaxBackward) {
  KESTREL_REQUIRE_GPU();
  check_softmax_bwd({DType::kF32, 40000, 5, 0, std::nullopt});
}

// Odd N (tails, misaligned rows through padding), several rows per CTA, and
// forced configurations that split small rows over clusters (DSMEM exchange,
// cluster of 16, several rows per clustered CTA) on data small enough for
// compute-sanitizer.
std::vector<Case> small_cases() {
  std::vector<Case> out;
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    out.push_back({t, 5, 1, 0, std::nullopt});
    out.push_back({t, 9, 7, 1, std::nullopt});
    out.push_back({t, 17, 1000, 8, std::nullopt});
    // Rows of 16 threads in the heuristic's CTAs (rmsnorm_fwd: one warp, two
    // rows a thread), whole and with a tail, M not a multiple of 4.
    out.push_back({t, 11, 248, 0, std::nullopt});
    out.push_back({t, 7, 250, 0, std::nullopt});
    out.push_back({t, 6, 1000, 0, RowwiseConfig{128, 32, 4}});
    // CTAs of one and two warps: a partial last CTA, a row over two warps.
    out.push_back({t, 13, 256, 0, RowwiseConfig{32, 8, 1}});
    out.push_back({t, 9, 1000, 3, RowwiseConfig{64, 64, 1}});
    if (t != DType::kF16) {
      out.push_back({t, 10, 3000, 0, RowwiseConfig{256, 64, 2}});
      out.push_back({t, 3, 2048, 0, RowwiseConfig{128, 128, 16}});
    }
    if (t == DType::kF32) {  // softmax_bwd holds y in registers at this size
      out.push_back({t, 3, 16384, 0, RowwiseConfig{1024, 1024, 1}});
      out.push_back({t, 3, 16383, 1, RowwiseConfig{1024, 1024, 1}});
    }
  }
  return out;
}
INSTANTIATE_TEST_SUITE_P(RowwiseSmall, RowwiseGpu, ::testing::ValuesIn(small_cases()), case_name);

// The odd N and the suite's row lengths (fewer rows, so that the
// float64 references stay fast).
std::vector<Case> large_cases() {
  return {{DType::kBF16, 3, 50257, 0, std::nullopt},
          {DType::kBF16, 2, 131073, 3, std::nullopt},  // misaligned rows: shifted path
          {DType::kBF16, 2, 262144, 0, std::nullopt},
          {DType::kF32, 3, 151936, 0, std::nullopt},
          {DType::kF32, 2, 262144, 0, std::nullopt},
          {DType::kF16, 2, 131073, 0, std::nullopt},
          {DType::kBF16, 64, 4096, 0, std::nullopt},
          {DType::kF32, 8, 32768, 0, std::nullopt}};
}
INSTANTIATE_TEST_SUITE_P(RowwiseLarge, RowwiseGpu, ::testing::ValuesIn(large_cases()), case_name);

// ---- In place: y = x, h = residual, dx = dy, dlogits = logits ----
TEST(RowwiseSmallInPlace, EveryOpThatAllowsIt) {
  KESTREL_REQUIRE_GPU();
  const Case c{DType::kBF16, 37, 1000, 0, std::nullopt};
  {
    const Rows x = random_rows(c, 20);
    const auto want = ref::softmax_fwd(x.values.data(), c.m, c.n);
    const DeviceRows d = DeviceRows::input(x);
    ASSERT_OK(softmax_fwd(d.view, d.view, nullptr));
    EXPECT_PASS(compare_as(c.t, d.read(), want, c.n), "softmax y = x");
  }
  {
    const Rows x = random_rows(c, 21), res = random_rows(c, 22);
    std::vector<double> h(x.values.size());
    for (size_t i = 0; i < h.size(); ++i)
      h[i] = testing::stored_value(c.t, x.values[i] + res.values[i]);
    const auto want = ref::rmsnorm_fwd(h.data(), nullptr, c.m, c.n, 1e-6);
    const DeviceRows dx = DeviceRows::input(x), dres = DeviceRows::input(res);
    ASSERT_OK(rmsnorm_fwd_residual(dx.view, dres.view, {}, dx.view, dres.view, {}, nullptr));
    EXPECT_PASS(compare_as(c.t, dres.read(), h, c.n), "h = residual");
    EXPECT_PASS(compare_as(c.t, dx.read(), want.y, c.n), "y = x");
  }
  {
    const Rows y(c.t, c.m, c.n, 0, ref::softmax_fwd(random_rows(c, 23).values.data(), c.m, c.n));
    const Rows dy = random_rows(c, 24);
    const auto want = ref::softmax_bwd(dy.values.data(), y.values.data(), c.m, c.n);
    const DeviceRows ddy = DeviceRows::input(dy), dyv = DeviceRows::input(y);
    ASSERT_OK(softmax_bwd(ddy.view, dyv.view, ddy.view, nullptr));
    EXPECT_PASS(compare_as(c.t, ddy.read(), want, c.n), "softmax dx = dy");
  }
  {
    const Rows logits = random_rows(c, 25);
    const auto target = testing::random_targets(c.m, c.n, 26, -100, 4);
    const auto lse =
        testing::round_f32(ref::cross_entropy_fwd(logits.values.data(), target.data(), c.m, c.n,
                                                  -100, 0.0, ref::Reduction::kMean)
                               .lse);
    const double one = 1.0;
    const auto want = ref::cross_entropy_bwd(&one, logits.values.data(), target.data(), lse.data(),
                                             c.m, c.n, -100, 0.0, ref::Reduction::kMean);
    const DeviceRows dl = DeviceRows::input(logits);
    const DeviceBuffer dt = DeviceBuffer::from(target), dlse = testing::upload_f32(lse),
                       dloss = testing::upload_f32({1.0});
    ASSERT_OK(cross_entropy_bwd(vec_view(dloss, DType::kF32, 1), dl.view,
                                vec_view(dt, DType::kI64, c.m), vec_view(dlse, DType::kF32, c.m),
                                dl.view, nullptr));
    EXPECT_PASS(compare_as(c.t, dl.read(), want, c.n), "dlogits = logits");
  }
}

// ---- Optional parts: no weight, low-precision dweight, a caller workspace ----
TEST(RowwiseSmallVariants, RmsNormWithoutWeightAndBf16Dweight) {
  KESTREL_REQUIRE_GPU();
  const Case c{DType::kBF16, 40, 777, 0, std::nullopt};
  const Rows x = random_rows(c, 30), dy = random_rows(c, 31), w = random_weight(c, 32);
  const DeviceRows dx_in = DeviceRows::input(x), ddy = DeviceRows::input(dy),
                   dw = DeviceRows::input(w);
  // Forward without a weight, rstd kept.
  const auto fwd = ref::rmsnorm_fwd(x.values.data(), nullptr, c.m, c.n, 1e-6);
  const DeviceRows y = DeviceRows::poisoned_like(x);
  const DeviceBuffer rstd = testing::poisoned_f32(size_t(c.m));
  ASSERT_OK(rmsnorm_fwd(dx_in.view, {}, y.view, vec_view(rstd, DType::kF32, c.m), nullptr));
  EXPECT_PASS(compare_as(c.t, y.read(), fwd.y, c.n), "y");
  const auto rstd_f32 = testing::read_f32(rstd);
  EXPECT_PASS(testing::compare_fp32(rstd_f32, fwd.rstd, 1e-5, c.m), "rstd");
  // Backward without a weight.
  const auto want =
      ref::rmsnorm_bwd(dy.values.data(), x.values.data(), nullptr, rstd_f32.data(), c.m, c.n);
  const DeviceRows dx = DeviceRows::poisoned_like(x);
  ASSERT_OK(rmsnorm_bwd(ddy.view, dx_in.view, {}, vec_view(rstd, DType::kF32, c.m), dx.view, {},
                        nullptr));
  EXPECT_PASS(compare_as(c.t, dx.read(), want.dx, c.n), "dx without weight");
  // With a weight, dweight in bf16, through a caller-provided workspace.
  const auto want_w = ref::rmsnorm_bwd(dy.values.data(), x.values.data(), w.values.data(),
                                       rstd_f32.data(), c.m, c.n);
  size_t bytes = 0;
  ASSERT_OK(rmsnorm_bwd_workspace_bytes(c.m, c.n, c.t, true, &bytes));
  ASSERT_GT(bytes, 0u);
  DeviceBuffer ws(bytes), dweight(size_t(c.n) * 2);
  dweight.poison();
  RmsNormOptions opt;
  opt.workspace = {ws.get(), bytes - 4};
  Status st = rmsnorm_bwd(ddy.view, dx_in.view, vec_view(dw), vec_view(rstd, DType::kF32, c.m),
                          dx.view, vec_view(dweight, DType::kBF16, c.n), nullptr, opt);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("opt.workspace"), std::string::npos) << st.message();
  opt.workspace = {ws.get(), bytes};
  ASSERT_OK(rmsnorm_bwd(ddy.view, dx_in.view, vec_view(dw), vec_view(rstd, DType::kF32, c.m),
                        dx.view, vec_view(dweight, DType::kBF16, c.n), nullptr, opt));
  EXPECT_PASS(compare_as(c.t, dx.read(), want_w.dx, c.n), "dx");
  EXPECT_PASS(
      testing::compare_bf16(testing::bf16_to_doubles(dweight.download<uint16_t>()), want_w.dweight),
      "dweight bf16");
}

// Cross-entropy mean through a caller workspace of exactly the bytes asked
// for, at M below the backward's count parts (parts with no rows); then the
// forward's total_weight handed to the backward instead of a count.
TEST(RowwiseSmallVariants, CrossEntropyMeanWorkspaceAndTotalWeight) {
  KESTREL_REQUIRE_GPU();
  const Case c{DType::kF32, 3, 7, 0, std::nullopt};
  const Rows logits = random_rows(c, 33, 2.0);
  const std::vector<int64_t> target = {2, -100, 6};
  const auto fwd = ref::cross_entropy_fwd(logits.values.data(), target.data(), c.m, c.n, -100,
                                          0.0, ref::Reduction::kMean);
  const auto lse = testing::round_f32(ref::cross_entropy_fwd(logits.values.data(), target.data(),
                                                             c.m, c.n, -100, 0.0,
                                                             ref::Reduction::kNone)
                                          .lse);
  const std::vector<double> dloss = {0.75};
  const auto want = ref::cross_entropy_bwd(dloss.data(), logits.values.data(), target.data(),
                                           lse.data(), c.m, c.n, -100, 0.0, ref::Reduction::kMean);
  const DeviceRows dl = DeviceRows::input(logits), dx = DeviceRows::poisoned_like(logits);
  const DeviceBuffer dt = DeviceBuffer::from(target), dlse = testing::upload_f32(lse),
                     ddloss = testing::upload_f32(dloss), loss = testing::poisoned_f32(1),
                     lse_out = testing::poisoned_f32(size_t(c.m));
  const size_t bytes = cross_entropy_workspace_bytes(c.m, Reduction::kMean);
  DeviceBuffer ws(bytes);
  ws.poison();
  CrossEntropyOptions opt;
  opt.reduction = Reduction::kMean;
  opt.workspace = {ws.get(), bytes - 4};
  Status st = cross_entropy_bwd(vec_view(ddloss, DType::kF32, 1), dl.view,
                                vec_view(dt, DType::kI64, c.m), vec_view(dlse, DType::kF32, c.m),
                                dx.view, nullptr, opt);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("opt.workspace"), std::string::npos) << st.message();
  opt.workspace = {ws.get(), bytes};
  ASSERT_OK(cross_entropy_bwd(vec_view(ddloss, DType::kF32, 1), dl.view,
                              vec_view(dt, DType::kI64, c.m), vec_view(dlse, DType::kF32, c.m),
                              dx.view, nullptr, opt));
  EXPECT_PASS(compare_as(c.t, dx.read(), want, c.n), "dlogits");
  ASSERT_OK(cross_entropy_fwd(dl.view, vec_view(dt, DType::kI64, c.m),
                              vec_view(loss, DType::kF32, 1),
                              vec_view(lse_out, DType::kF32, c.m), nullptr, opt));
  EXPECT_PASS(testing::compare_fp32(testing::read_f32(loss), fwd.loss, 1e-5, 1), "loss");

  const DeviceBuffer total_weight = testing::poisoned_f32(1);
  opt.workspace = {};
  opt.total_weight = vec_view(total_weight, DType::kF32, 1);
  ASSERT_OK(cross_entropy_fwd(dl.view, vec_view(dt, DType::kI64, c.m),
                              vec_view(loss, DType::kF32, 1),
                              vec_view(lse_out, DType::kF32, c.m), nullptr, opt));
  EXPECT_EQ(testing::read_f32(total_weight)[0], 2.0) << "rows not ignored";
  const DeviceRows dx2 = DeviceRows::poisoned_like(logits);
  ASSERT_OK(cross_entropy_bwd(vec_view(ddloss, DType::kF32, 1), dl.view,
                              vec_view(dt, DType::kI64, c.m), vec_view(dlse, DType::kF32, c.m),
                              dx2.view, nullptr, opt));
  EXPECT_PASS(compare_as(c.t, dx2.read(), want, c.n), "dlogits from total_weight");
  // Only the mean has a total weight.
  opt.reduction = Reduction::kSum;
  st = cross_entropy_bwd(vec_view(ddloss, DType::kF32, 1), dl.view,
                         vec_view(dt, DType::kI64, c.m), vec_view(dlse, DType::kF32, c.m),
                         dx2.view, nullptr, opt);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("opt.total_weight"), std::string::npos) << st.message();
}

// Several rows per thread (forward ops): a partial last CTA (rows past M in
// the later passes), strided rows, rows shorter than a thread's vectors.
TEST(RowwiseSmallVariants, ForwardRowsPerThread) {
  KESTREL_REQUIRE_GPU();
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16})
    for (const Case& c : {Case{t, 37, 256, 0, RowwiseConfig{64, 16, 1, false, 4}},
                          Case{t, 21, 1000, 8, RowwiseConfig{32, 32, 1, false, 8}},
                          Case{t, 9, 7, 1, RowwiseConfig{32, 8, 1, false, 2}}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(c.m) + "x" +
                   std::to_string(c.n) + " " + c.config->describe());
      check_rmsnorm_fwd(c);
      check_rmsnorm_fwd_residual(c);
      check_softmax_fwd(c);
    }
}

// More row groups than clusters fit on the GPU (one CTA per SM), so each
// cluster walks several rows, loading the next while it finishes the current
// one; with two rows per CTA the last group is partial, and 32760 leaves the
// last vector of a thread past the row end.
TEST(RowwiseSmallVariants, RmsNormBackwardWalksSeveralRowsPerCluster) {
  KESTREL_REQUIRE_GPU();
  for (const Case& c : {Case{DType::kF32, 301, 16384, 0, RowwiseConfig{512, 256, 2}},
                        Case{DType::kBF16, 300, 32760, 0, RowwiseConfig{1024, 1024, 2}}}) {
    SCOPED_TRACE(std::string(dtype_name(c.t)) + " " + c.config->describe());
    check_rmsnorm_bwd(c);
  }
}

// Several rows per thread in the backward (one reduction of a tuple of sums,
// shared dweight columns): clusters and L2 groups walking several row
// groups, a partial last group (rows past M), rows shorter than the slice,
// misaligned rows (element-wise), no weight.
TEST(RowwiseSmallVariants, RmsNormBackwardRowsPerThread) {
  KESTREL_REQUIRE_GPU();
  for (const Case& c : {Case{DType::kBF16, 301, 32760, 0, RowwiseConfig{1024, 1024, 2, false, 2}},
                        Case{DType::kF32, 37, 4096, 0, RowwiseConfig{256, 128, 2, false, 4}},
                        Case{DType::kBF16, 41, 65536, 0, RowwiseConfig{1024, 1024, 4, true, 2}},
                        Case{DType::kF16, 23, 1000, 0, RowwiseConfig{128, 32, 1, false, 4}},
                        Case{DType::kBF16, 19, 3001, 1, RowwiseConfig{256, 64, 2, false, 2}}}) {
    SCOPED_TRACE(std::string(dtype_name(c.t)) + " " + std::to_string(c.m) + "x" +
                 std::to_string(c.n) + " " + c.config->describe());
    for (int call = 0; call < 2; ++call) check_rmsnorm_bwd(c);
  }
  check_rmsnorm_bwd_no_weight({DType::kBF16, 77, 5000, 0, RowwiseConfig{256, 128, 2, false, 2}});
}

// Without weight at one vector a thread the backward reads dy and x twice
// (the second time from L2): whole rows, a tail, misaligned rows (element by
// element), rows past M in the last CTA, a cluster.
TEST(RowwiseSmallVariants, RmsNormBackwardRereadsWithoutWeight) {
  KESTREL_REQUIRE_GPU();
  for (const Case& c : {Case{DType::kBF16, 7, 4096, 0, RowwiseConfig{512, 512, 1}},
                        Case{DType::kF32, 9, 1000, 3, RowwiseConfig{512, 256, 1}},
                        Case{DType::kF16, 5, 250, 0, RowwiseConfig{128, 32, 1}},
                        Case{DType::kBF16, 3, 8000, 0, RowwiseConfig{512, 512, 2}}}) {
    SCOPED_TRACE(std::string(dtype_name(c.t)) + " " + std::to_string(c.m) + "x" +
                 std::to_string(c.n) + " " + c.config->describe());
    check_rmsnorm_bwd_no_weight(c);
  }
}

// The row's CTAs as a co-resident group exchanging through L2 instead of a
// cluster: groups walking several rows (more row groups than fit), a group
// of 16 over the longest row, one vector per CTA, no weight. Each case runs
// twice: the second call finds the counters the first one left, which must
// be zero again.
TEST(RowwiseSmallVariants, RmsNormBackwardL2Groups) {
  KESTREL_REQUIRE_GPU();
  for (const Case& c : {Case{DType::kF32, 301, 16384, 0, RowwiseConfig{512, 256, 2, true}},
                        Case{DType::kBF16, 300, 32760, 0, RowwiseConfig{1024, 1024, 2, true}},
                        Case{DType::kBF16, 41, 65536, 0, RowwiseConfig{1024, 1024, 4, true}},
                        Case{DType::kF32, 5, 262144, 0, RowwiseConfig{1024, 1024, 16, true}},
                        Case{DType::kF16, 3, 2000, 0, RowwiseConfig{128, 128, 16, true}}}) {
    SCOPED_TRACE(std::string(dtype_name(c.t)) + " " + std::to_string(c.m) + "x" +
                 std::to_string(c.n) + " " + c.config->describe());
    for (int call = 0; call < 2; ++call) check_rmsnorm_bwd(c);
  }
  check_rmsnorm_bwd_no_weight({DType::kBF16, 7, 3000, 0, RowwiseConfig{256, 64, 4, true}});
}

// Per-row cross-entropy losses and lse of `dx` (the device copy of x) with
// `target` and label smoothing eps, against the float64 reference.
void check_xent_fwd_per_row(const Rows& x, const DeviceRows& dx, const std::vector<int64_t>& target,
                            double eps) {
  const int64_t m = x.m, n = x.n;
  const auto want = ref::cross_entropy_fwd(x.values.data(), target.data(), m, n, -100, eps,
                                           ref::Reduction::kNone);
  const DeviceBuffer dt = DeviceBuffer::from(target), loss = testing::poisoned_f32(size_t(m)),
                     lse = testing::poisoned_f32(size_t(m));
  CrossEntropyOptions opt;
  opt.label_smoothing = float(eps);
  opt.reduction = Reduction::kNone;
  ASSERT_OK(cross_entropy_fwd(dx.view, vec_view(dt, DType::kI64, m), vec_view(loss, DType::kF32, m),
                              vec_view(lse, DType::kF32, m), nullptr, opt));
  EXPECT_PASS(testing::compare_fp32(testing::read_f32(lse), want.lse, 1e-5, m), "lse");
  EXPECT_PASS(testing::compare_fp32(testing::read_f32(loss), want.loss, 1e-5, m), "loss");
}

// Rows that start misaligned, the first one too: equally in every tensor
// (16-byte accesses from the boundary before each row), and unequally
// (element by element).
TEST(RowwiseSmallVariants, MisalignedRowStarts) {
  KESTREL_REQUIRE_GPU();
  const int64_t m = 9, n = 1000, pad = 1, in_lead = 3;
  for (DType t : {DType::kBF16, DType::kF32}) {
    for (int64_t out_lead : {int64_t(3), int64_t(6)}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " output lead " + std::to_string(out_lead));
      const Rows out_layout(t, m, n, pad, std::vector<double>(size_t(m * n)), out_lead);
      const Rows x(t, m, n, pad, testing::random_normal(m * n, 50, 3.0), in_lead);
      const DeviceRows dx = DeviceRows::input(x), y = DeviceRows::poisoned_like(out_layout);
      ASSERT_OK(softmax_fwd(dx.view, y.view, nullptr));
      EXPECT_PASS(compare_as(t, y.read(), ref::softmax_fwd(x.values.data(), m, n), n), "softmax y");

      // RMSNorm takes the shifted path too, its weight read under each row's
      // shift (output lead 3; 6 runs element by element).
      const Rows w(t, 1, n, 0, testing::random_normal(n, 54, 0.5));
      const DeviceRows dw = DeviceRows::input(w), yn = DeviceRows::poisoned_like(out_layout);
      ASSERT_OK(rmsnorm_fwd(dx.view, vec_view(dw), yn.view, {}, nullptr));
      EXPECT_PASS(compare_as(t, yn.read(),
                             ref::rmsnorm_fwd(x.values.data(), w.values.data(), m, n, 1e-6).y, n),
                  "rmsnorm y");

      const Rows yv(t, m, n, pad, ref::softmax_fwd(x.values.data(), m, n), in_lead);
      const Rows dy(t, m, n, pad, testing::random_normal(m * n, 51), in_lead);
      const DeviceRows dyv = DeviceRows::input(yv), ddy = DeviceRows::input(dy),
                       grad = DeviceRows::poisoned_like(out_layout);
      ASSERT_OK(softmax_bwd(ddy.view, dyv.view, grad.view, nullptr));
      EXPECT_PASS(
          compare_as(t, grad.read(), ref::softmax_bwd(dy.values.data(), yv.values.data(), m, n), n),
          "softmax dx");

      const auto target = testing::random_targets(m, n, 52, -100, 4);
      check_xent_fwd_per_row(x, dx, target, 0.1);

      const DeviceBuffer dt = DeviceBuffer::from(target);
      CrossEntropyOptions opt;
      opt.label_smoothing = 0.1f;
      opt.reduction = Reduction::kNone;
      const auto lse_f32 =
          testing::round_f32(ref::cross_entropy_fwd(x.values.data(), target.data(), m, n, -100, 0.1,
                                                    ref::Reduction::kNone)
                                 .lse);
      const auto dloss = testing::round_f32(testing::random_normal(m, 53));
      const DeviceBuffer dlse = testing::upload_f32(lse_f32), ddloss = testing::upload_f32(dloss);
      const DeviceRows dlogits = DeviceRows::poisoned_like(out_layout);
      ASSERT_OK(cross_entropy_bwd(vec_view(ddloss, DType::kF32, m), dx.view,
                                  vec_view(dt, DType::kI64, m), vec_view(dlse, DType::kF32, m),
                                  dlogits.view, nullptr, opt));
      EXPECT_PASS(
          compare_as(t, dlogits.read(),
                     ref::cross_entropy_bwd(dloss.data(), x.values.data(), target.data(),
                                            lse_f32.data(), m, n, -100, 0.1, ref::Reduction::kNone),
                     n),
          "dlogits");
    }
  }
}

// ---- Extreme inputs ----
// Rows of +-1e4, -inf entries, a row of -inf, a row with one finite value.
std::vector<double> extreme_rows(int64_t m, int64_t n) {
  auto x = testing::random_normal(m * n, 40, 1.0);
  for (int64_t j = 0; j < n; ++j) {
    x[size_t(0 * n + j)] = j % 2 ? 1e4 : -1e4;
    x[size_t(1 * n + j)] = j % 3 == 0 ? -kInf : x[size_t(1 * n + j)];
    x[size_t(2 * n + j)] = -kInf;
    x[size_t(3 * n + j)] = j == n / 2 ? 5.0 : -kInf;
    x[size_t(4 * n + j)] *= 1e4;
  }
  return x;
}

TEST(RowwiseSmallExtreme, SoftmaxAndCrossEntropy) {
  KESTREL_REQUIRE_GPU();
  for (DType t : {DType::kF32, DType::kBF16}) {
    for (int64_t n : {int64_t(300), int64_t(5000)}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
      const int64_t m = 6;
      const Rows x(t, m, n, 0, extreme_rows(m, n));
      const DeviceRows dx = DeviceRows::input(x), y = DeviceRows::poisoned_like(x);
      ASSERT_OK(softmax_fwd(dx.view, y.view, nullptr));
      const auto got = y.read();
      EXPECT_PASS(compare_as(t, got, ref::softmax_fwd(x.values.data(), m, n), n), "softmax");
      EXPECT_TRUE(std::isnan(got[size_t(2 * n)])) << "a row of -inf gives NaN, as torch";
      EXPECT_EQ(got[size_t(3 * n + n / 2)], 1.0) << "a single finite value gets probability 1";

      // Cross-entropy on the finite-lse rows (targets on finite logits).
      std::vector<int64_t> target = {1, 1, -100, n / 2, 3, 7};
      for (double eps : {0.0, 0.1}) {
        SCOPED_TRACE("smoothing " + std::to_string(eps));
        check_xent_fwd_per_row(x, dx, target, eps);
      }
    }
  }
}

TEST(RowwiseSmallExtreme, RmsNormLargeValues) {
  KESTREL_REQUIRE_GPU();
  for (DType t : {DType::kF32, DType::kBF16}) {
    const int64_t m = 4, n = 3000;
    auto data = testing::random_normal(m * n, 41, 1e4);
    for (int64_t j = 0; j < n; ++j) data[size_t(j)] = j % 2 ? 1e4 : -1e4;
    const Rows x(t, m, n, 0, data);
    const auto want = ref::rmsnorm_fwd(x.values.data(), nullptr, m, n, 1e-6);
    const DeviceRows dx = DeviceRows::input(x), y = DeviceRows::poisoned_like(x);
    ASSERT_OK(rmsnorm_fwd(dx.view, {}, y.view, {}, nullptr));
    EXPECT_PASS(compare_as(t, y.read(), want.y, n), dtype_name(t));
  }
}

TEST(RowwiseSmallExtreme, IgnoredTargetsAndAllIgnoredBatch) {
  KESTREL_REQUIRE_GPU();
  const int64_t m = 8, n = 100;
  const Rows x(DType::kF32, m, n, 0, testing::random_normal(m * n, 42));
  const DeviceRows dx = DeviceRows::input(x);
  const std::vector<int64_t> all_ignored(size_t(m), 7);
  const DeviceBuffer dt = DeviceBuffer::from(all_ignored), lse = testing::poisoned_f32(size_t(m));
  for (Reduction red : {Reduction::kMean, Reduction::kSum}) {
    const DeviceBuffer loss = testing::poisoned_f32(1);
    CrossEntropyOptions opt;
    opt.ignore_index = 7;
    opt.label_smoothing = 0.1f;
    opt.reduction = red;
    ASSERT_OK(cross_entropy_fwd(dx.view, vec_view(dt, DType::kI64, m),
                                vec_view(loss, DType::kF32, 1), vec_view(lse, DType::kF32, m),
                                nullptr, opt));
    const double got = testing::read_f32(loss)[0];
    if (red == Reduction::kMean) {
      EXPECT_TRUE(std::isnan(got)) << "mean over no rows is NaN, as torch; got " << got;
    } else {
      EXPECT_EQ(got, 0.0);
    }
    const DeviceBuffer one = testing::upload_f32({1.0});
    const DeviceRows grad = DeviceRows::poisoned_like(x);
    ASSERT_OK(cross_entropy_bwd(vec_view(one, DType::kF32, 1), dx.view,
                                vec_view(dt, DType::kI64, m), vec_view(lse, DType::kF32, m),
                                grad.view, nullptr, opt));
    for (double g : grad.read()) ASSERT_EQ(g, 0.0) << "ignored rows get zero gradients";
  }
  // A target outside [0, V) that is not ignore_index: NaN loss (torch raises).
  const std::vector<int64_t> bad = {0, 1, 2, n, 4, 5, 6, 7};
  const DeviceBuffer dbad = DeviceBuffer::from(bad), loss = testing::poisoned_f32(size_t(m));
  CrossEntropyOptions opt;
  opt.reduction = Reduction::kNone;
  ASSERT_OK(cross_entropy_fwd(dx.view, vec_view(dbad, DType::kI64, m),
                              vec_view(loss, DType::kF32, m), vec_view(lse, DType::kF32, m),
                              nullptr, opt));
  const auto got = testing::read_f32(loss);
  EXPECT_TRUE(std::isnan(got[3]));
  EXPECT_FALSE(std::isnan(got[2]));
}

TEST(RowwiseSmallExtreme, EmptyBatch) {
  KESTREL_REQUIRE_GPU();
  const int64_t n = 64;
  DeviceBuffer dweight = testing::poisoned_f32(size_t(n)), loss = testing::poisoned_f32(1),
               w = testing::upload_f32(std::vector<double>(size_t(n), 1.0));
  const TensorView rows = TensorView::dense(nullptr, DType::kF32, {0, n});
  const TensorView empty = TensorView::dense(nullptr, DType::kF32, {0});
  ASSERT_OK(rmsnorm_bwd(rows, rows, vec_view(w, DType::kF32, n), empty, rows,
                        vec_view(dweight, DType::kF32, n), nullptr));
  for (double d : testing::read_f32(dweight)) EXPECT_EQ(d, 0.0) << "dweight of no rows";
  ASSERT_OK(cross_entropy_fwd(rows, TensorView::dense(nullptr, DType::kI64, {0}),
                              vec_view(loss, DType::kF32, 1), empty, nullptr));
  EXPECT_TRUE(std::isnan(testing::read_f32(loss)[0])) << "mean of no rows";
}

// ---- Determinism: persistent clusters over many rows, twice, bitwise ----
TEST(RowwiseSmallDeterminism, RepeatedCallsAreBitwiseEqual) {
  KESTREL_REQUIRE_GPU();
  const Case c{DType::kBF16, 2000, 1024, 0, RowwiseConfig{128, 32, 4}};
  const Rows x = random_rows(c, 50), dy = random_rows(c, 51), w = random_weight(c, 52);
  const auto rstd =
      testing::round_f32(ref::rmsnorm_fwd(x.values.data(), w.values.data(), c.m, c.n, 1e-6).rstd);
  const auto want =
      ref::rmsnorm_bwd(dy.values.data(), x.values.data(), w.values.data(), rstd.data(), c.m, c.n);
  const DeviceRows dx_in = DeviceRows::input(x), ddy = DeviceRows::input(dy),
                   dw = DeviceRows::input(w);
  const DeviceBuffer drstd = testing::upload_f32(rstd);
  std::vector<float> first_dw, first_loss;
  std::vector<uint16_t> first_dx;
  const auto target = testing::random_targets(c.m, c.n, 53, -100, 3);
  const DeviceBuffer dt = DeviceBuffer::from(target);
  for (int run = 0; run < 2; ++run) {
    const DeviceRows dx = DeviceRows::poisoned_like(x);
    const DeviceBuffer dweight = testing::poisoned_f32(size_t(c.n)),
                       loss = testing::poisoned_f32(1), lse = testing::poisoned_f32(size_t(c.m));
    RmsNormOptions opt;
    opt.config = config_of(c);
    ASSERT_OK(rmsnorm_bwd(ddy.view, dx_in.view, vec_view(dw), vec_view(drstd, DType::kF32, c.m),
                          dx.view, vec_view(dweight, DType::kF32, c.n), nullptr, opt));
    CrossEntropyOptions xopt;
    xopt.label_smoothing = 0.05f;
    ASSERT_OK(cross_entropy_fwd(dx_in.view, vec_view(dt, DType::kI64, c.m),
                                vec_view(loss, DType::kF32, 1), vec_view(lse, DType::kF32, c.m),
                                nullptr, xopt));
    if (run == 0) {
      EXPECT_PASS(compare_as(c.t, dx.read(), want.dx, c.n), "dx");
      EXPECT_PASS(testing::compare_fp32(testing::read_f32(dweight), want.dweight, 1e-5, c.n),
                  "dweight");
      first_dw = dweight.download<float>();
      first_dx = dx.buf.download<uint16_t>();
      first_loss = loss.download<float>();
    } else {
      EXPECT_TRUE(testing::compare_exact(dweight.download<float>(), first_dw).pass) << "dweight";
      EXPECT_TRUE(testing::compare_exact(dx.buf.download<uint16_t>(), first_dx).pass) << "dx";
      EXPECT_TRUE(testing::compare_exact(loss.download<float>(), first_loss).pass) << "loss";
    }
  }
}

TEST(RowwiseSmallConfig, InvalidConfigurationsNameTheRule) {
  KESTREL_REQUIRE_GPU();
  const Rows x(DType::kF32, 2, 4096, 0, testing::random_normal(2 * 4096, 60));
  const DeviceRows dx = DeviceRows::input(x), y = DeviceRows::poisoned_like(x);
  RowwiseConfig bad{256, 256, 3};
  Status st = softmax_fwd(dx.view, y.view, nullptr, &bad);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("cluster must be"), std::string::npos) << st.message();
  bad = {128, 1, 1};  // 1024 vectors per thread
  st = softmax_fwd(dx.view, y.view, nullptr, &bad);
  EXPECT_NE(st.message().find("vectors per thread"), std::string::npos) << st.message();
  // Every configuration of the space runs and agrees with the reference.
  const auto want = ref::softmax_fwd(x.values.data(), x.m, x.n);
  int ran = 0;
  for (const RowwiseConfig& c : rowwise_config_space(RowwiseOp::kSoftmaxFwd, x.n, x.t)) {
    if (c.cluster > 8 || c.threads > 256) continue;  // keep the compile count small
    SCOPED_TRACE(c.describe());
    ASSERT_OK(softmax_fwd(dx.view, y.view, nullptr, &c));
    EXPECT_PASS(compare_as(x.t, y.read(), want, x.n), "y");
    ++ran;
  }
  EXPECT_GT(ran, 5);
}

// ---- Golden vectors (fp32, computed independently in float64) ----
TEST(RowwiseGolden, RmsNorm) {
  KESTREL_REQUIRE_GPU();
  KESTREL_REQUIRE_GOLDEN();
  for (const char* name : {"rmsnorm_4x1000", "rmsnorm_2x70000"}) {
    SCOPED_TRACE(name);
    const auto g = testing::GoldenCase::load(name);
    const int64_t m = g.shape("x")[0], n = g.shape("x")[1];
    const Rows x(DType::kF32, m, n, 0, g.doubles("x")), dy(DType::kF32, m, n, 0, g.doubles("dy")),
        w(DType::kF32, 1, n, 0, g.doubles("w"));
    const DeviceRows dx_in = DeviceRows::input(x), ddy = DeviceRows::input(dy),
                     dw = DeviceRows::input(w), y = DeviceRows::poisoned_like(x),
                     dx = DeviceRows::poisoned_like(x);
    const DeviceBuffer rstd = testing::poisoned_f32(size_t(m)),
                       dweight = testing::poisoned_f32(size_t(n));
    RmsNormOptions opt;
    opt.eps = float(g.scalar("eps"));
    ASSERT_OK(rmsnorm_fwd(dx_in.view, vec_view(dw), y.view, vec_view(rstd, DType::kF32, m), nullptr,
                          opt));
    EXPECT_PASS(testing::compare_fp32(y.read(), g.doubles("y"), 1e-5, n), "y");
    ASSERT_OK(rmsnorm_bwd(ddy.view, dx_in.view, vec_view(dw), vec_view(rstd, DType::kF32, m),
                          dx.view, vec_view(dweight, DType::kF32, n), nullptr, opt));
    EXPECT_PASS(testing::compare_fp32(dx.read(), g.doubles("dx"), 1e-5, n), "dx");
    EXPECT_PASS(testing::compare_fp32(testing::read_f32(dweight), g.doubles("dw"), 1e-5, n), "dw");
  }
}

TEST(RowwiseGolden, Softmax) {
  KESTREL_REQUIRE_GPU();
  KESTREL_REQUIRE_GOLDEN();
  for (const char* name : {"softmax_4x1000", "softmax_2x70000"}) {
    SCOPED_TRACE(name);
    const auto g = testing::GoldenCase::load(name);
    const int64_t m = g.shape("x")[0], n = g.shape("x")[1];
    const Rows x(DType::kF32, m, n, 0, g.doubles("x")), dy(DType::kF32, m, n, 0, g.doubles("dy"));
    const DeviceRows dx_in = DeviceRows::input(x), ddy = DeviceRows::input(dy),
                     y = DeviceRows::poisoned_like(x), dx = DeviceRows::poisoned_like(x);
    ASSERT_OK(softmax_fwd(dx_in.view, y.view, nullptr));
    EXPECT_PASS(testing::compare_fp32(y.read(), g.doubles("y"), 1e-5, n), "y");
    // The golden dx comes from the float64 y; the GPU's comes from its fp32 y.
    ASSERT_OK(softmax_bwd(ddy.view, y.view, dx.view, nullptr));
    EXPECT_PASS(testing::compare_fp32(dx.read(), g.doubles("dx"), 1e-5, n), "dx");
  }
}

TEST(RowwiseGolden, CrossEntropy) {
  KESTREL_REQUIRE_GPU();
  KESTREL_REQUIRE_GOLDEN();
  for (const char* name :
       {"xent_4x1000_ls0.0", "xent_4x1000_ls0.1", "xent_2x70000_ls0.0", "xent_2x70000_ls0.1"}) {
    SCOPED_TRACE(name);
    const auto g = testing::GoldenCase::load(name);
    const int64_t m = g.shape("logits")[0], n = g.shape("logits")[1];
    const Rows logits(DType::kF32, m, n, 0, g.doubles("logits"));
    const DeviceRows dl = DeviceRows::input(logits);
    const DeviceBuffer dt = DeviceBuffer::from(g.int64s("target")),
                       lse = testing::poisoned_f32(size_t(m));
    for (Reduction red : kReductions) {
      SCOPED_TRACE(name_of(red));
      const int64_t len = red == Reduction::kNone ? m : 1;
      const DeviceBuffer loss = testing::poisoned_f32(size_t(len)),
                         ones = testing::upload_f32(std::vector<double>(size_t(len), 1.0));
      const DeviceRows dx = DeviceRows::poisoned_like(logits);
      CrossEntropyOptions opt;
      opt.ignore_index = g.integer("ignore_index");
      opt.label_smoothing = float(g.scalar("label_smoothing"));
      opt.reduction = red;
      ASSERT_OK(cross_entropy_fwd(dl.view, vec_view(dt, DType::kI64, m),
                                  vec_view(loss, DType::kF32, len), vec_view(lse, DType::kF32, m),
                                  nullptr, opt));
      EXPECT_PASS(testing::compare_fp32(testing::read_f32(lse), g.doubles("lse"), 1e-5, m), "lse");
      EXPECT_PASS(testing::compare_fp32(testing::read_f32(loss),
                                        g.doubles(std::string("loss_") + name_of(red)), 1e-5, len),
                  "loss");
      ASSERT_OK(cross_entropy_bwd(vec_view(ones, DType::kF32, len), dl.view,
                                  vec_view(dt, DType::kI64, m), vec_view(lse, DType::kF32, m),
                                  dx.view, nullptr, opt));
      EXPECT_PASS(testing::compare_fp32(dx.read(),
                                        g.doubles(std::string("dlogits_") + name_of(red)), 1e-5, n),
                  "dlogits");
    }
  }
}

// ---- Argument errors (checked before any CUDA call: no GPU needed) ----
TEST(RowwiseArgs, BadArgumentsNameTheArgumentAndRule) {
  char dummy[256];
  const TensorView x = TensorView::dense(dummy, DType::kBF16, {4, 8});
  const TensorView rstd = TensorView::dense(dummy, DType::kF32, {4});
  auto expect = [](const Status& st, const char* needle) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  expect(softmax_fwd(TensorView::dense(dummy, DType::kI32, {4, 8}), x, nullptr), "x: dtype");
  expect(softmax_fwd(TensorView::dense(dummy, DType::kBF16, {32}), x, nullptr), "x: rank");
  expect(softmax_fwd(x, TensorView::dense(dummy, DType::kF32, {4, 8}), nullptr), "y: dtype");
  expect(softmax_fwd(x, TensorView::dense(dummy, DType::kBF16, {4, 9}), nullptr), "y: shape");
  expect(softmax_fwd(TensorView::dense(dummy, DType::kBF16, {4, 0}), x, nullptr), "row length N");
  expect(softmax_fwd(TensorView::dense(dummy, DType::kBF16, {2, kRowwiseMaxN + 1}),
                     TensorView::dense(dummy, DType::kBF16, {2, kRowwiseMaxN + 1}), nullptr),
         "row length N");
  expect(softmax_fwd(TensorView::strided(dummy, DType::kBF16, {4, 8}, {4, 1}), x, nullptr),
         "overlaps");
  expect(softmax_fwd(TensorView::dense(nullptr, DType::kBF16, {4, 8}), x, nullptr), "null");
  expect(softmax_bwd(x, x, TensorView::dense(dummy, DType::kF16, {4, 8}), nullptr), "dx: dtype");

  expect(rmsnorm_fwd(x, TensorView::dense(dummy, DType::kBF16, {9}), x, rstd, nullptr), "weight");
  expect(rmsnorm_fwd(x, {}, x, TensorView::dense(dummy, DType::kBF16, {4}), nullptr),
         "rstd: dtype");
  expect(rmsnorm_fwd(x, {}, x, TensorView::dense(dummy, DType::kF32, {5}), nullptr), "rstd: shape");
  RmsNormOptions neg;
  neg.eps = -1.0f;
  expect(rmsnorm_fwd(x, {}, x, rstd, nullptr, neg), "opt.eps");
  expect(rmsnorm_fwd_residual(x, {}, {}, x, x, rstd, nullptr), "residual");
  expect(rmsnorm_fwd_residual(x, x, {}, x, TensorView::dense(dummy, DType::kBF16, {4, 7}), rstd,
                              nullptr),
         "h: shape");
  expect(rmsnorm_bwd(x, x, {}, {}, x, {}, nullptr), "rstd");
  expect(rmsnorm_bwd(x, x, TensorView::dense(dummy, DType::kBF16, {8}), rstd, x, {}, nullptr),
         "dweight: is required");
  expect(rmsnorm_bwd(x, x, {}, rstd, x, TensorView::dense(dummy, DType::kF32, {8}), nullptr),
         "dweight: must be omitted");

  const TensorView target = TensorView::dense(dummy, DType::kI64, {4});
  const TensorView loss1 = TensorView::dense(dummy, DType::kF32, {1});
  expect(cross_entropy_fwd(x, TensorView::dense(dummy, DType::kI32, {4}), loss1, rstd, nullptr),
         "target: dtype");
  expect(cross_entropy_fwd(x, target, rstd, rstd, nullptr), "loss: shape");  // mean wants [1]
  CrossEntropyOptions none;
  none.reduction = Reduction::kNone;
  expect(cross_entropy_fwd(x, target, loss1, rstd, nullptr, none), "loss: shape");
  CrossEntropyOptions smooth;
  smooth.label_smoothing = 1.5f;
  expect(cross_entropy_fwd(x, target, loss1, rstd, nullptr, smooth), "opt.label_smoothing");
  expect(cross_entropy_bwd(loss1, x, target, rstd, TensorView::dense(dummy, DType::kBF16, {4, 9}),
                           nullptr),
         "dlogits: shape");
  expect(cross_entropy_bwd(rstd, x, target, rstd, x, nullptr), "dloss: shape");
}

}  // namespace
}  // namespace kestrel
