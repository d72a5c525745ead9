// The C ABI (include/kestrel/c_api.h) forwards to the C++ API: every op, run
// both ways on the same inputs into poisoned outputs, gives the same bytes
// (the C++ API is checked against the float64 references in
// rowwise_gpu_test.cpp, and its results are deterministic).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "device_buffer.h"
#include "gpu_test.h"
#include "kestrel/c_api.h"
#include "kestrel/rowwise.h"
#include "random.h"

namespace kestrel {
namespace {

using testing::DeviceBuffer;

constexpr int64_t kM = 37, kN = 1000;  // N not a multiple of any vector width

struct Typed {
  DType t;
  int code;
};

DeviceBuffer random_rows(DType t, int64_t count, uint64_t seed) {
  if (t == DType::kBF16) return DeviceBuffer::from(testing::random_bf16(count, seed));
  const auto d = testing::random_normal(count, seed);
  return DeviceBuffer::from(std::vector<float>(d.begin(), d.end()));
}

DeviceBuffer poisoned(size_t bytes) {
  DeviceBuffer b(bytes);
  b.poison();
  return b;
}

void expect_same_bytes(const DeviceBuffer& a, const DeviceBuffer& b, const char* what) {
  const auto x = a.download<uint8_t>(), y = b.download<uint8_t>();
  ASSERT_EQ(x.size(), y.size()) << what;
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size()), 0) << what << ": C and C++ results differ";
}

TensorView rows(const DeviceBuffer& b, DType t) { return TensorView::dense(b.get(), t, {kM, kN}); }
TensorView vec(const DeviceBuffer& b, DType t, int64_t n) {
  return TensorView::dense(b.get(), t, {n});
}

class CApiGpu : public ::testing::TestWithParam<Typed> {
 protected:
  DType t() const { return GetParam().t; }
  int code() const { return GetParam().code; }
  size_t row_bytes() const { return size_t(kM * kN * dtype_size(t())); }
  void expect_ok(int rc) { ASSERT_EQ(rc, 0) << kestrel_last_error(); }
};

TEST_P(CApiGpu, Softmax) {
  KESTREL_REQUIRE_GPU();
  const DeviceBuffer x = random_rows(t(), kM * kN, 1), dy = random_rows(t(), kM * kN, 2);
  DeviceBuffer y_c = poisoned(row_bytes()), y_cpp = poisoned(row_bytes());
  expect_ok(kestrel_softmax_fwd(x.get(), y_c.get(), kM, kN, code(), nullptr));
  ASSERT_TRUE(softmax_fwd(rows(x, t()), rows(y_cpp, t()), nullptr).ok());
  expect_same_bytes(y_c, y_cpp, "softmax_fwd y");

  DeviceBuffer dx_c = poisoned(row_bytes()), dx_cpp = poisoned(row_bytes());
  expect_ok(kestrel_softmax_bwd(dy.get(), y_cpp.get(), dx_c.get(), kM, kN, code(), nullptr));
  ASSERT_TRUE(softmax_bwd(rows(dy, t()), rows(y_cpp, t()), rows(dx_cpp, t()), nullptr).ok());
  expect_same_bytes(dx_c, dx_cpp, "softmax_bwd dx");
}

TEST_P(CApiGpu, RmsNorm) {
  KESTREL_REQUIRE_GPU();
  const DeviceBuffer x = random_rows(t(), kM * kN, 3), res = random_rows(t(), kM * kN, 4),
                     w = random_rows(t(), kN, 5), dy = random_rows(t(), kM * kN, 6);
  DeviceBuffer y_c = poisoned(row_bytes()), y_cpp = poisoned(row_bytes());
  DeviceBuffer h_c = poisoned(row_bytes()), h_cpp = poisoned(row_bytes());
  DeviceBuffer r_c = poisoned(kM * 4), r_cpp = poisoned(kM * 4);
  RmsNormOptions opt;
  opt.eps = 1e-5f;
  expect_ok(kestrel_rmsnorm_fwd(x.get(), res.get(), w.get(), code(), y_c.get(), h_c.get(),
                                static_cast<float*>(r_c.get()), kM, kN, code(), opt.eps, nullptr));
  ASSERT_TRUE(rmsnorm_fwd_residual(rows(x, t()), rows(res, t()), vec(w, t(), kN), rows(y_cpp, t()),
                                   rows(h_cpp, t()), vec(r_cpp, DType::kF32, kM), nullptr, opt)
                  .ok());
  expect_same_bytes(y_c, y_cpp, "rmsnorm_fwd_residual y");
  expect_same_bytes(h_c, h_cpp, "rmsnorm_fwd_residual h");
  expect_same_bytes(r_c, r_cpp, "rmsnorm_fwd_residual rstd");

  // Without residual and weight, y only.
  DeviceBuffer y2_c = poisoned(row_bytes()), y2_cpp = poisoned(row_bytes());
  expect_ok(kestrel_rmsnorm_fwd(x.get(), nullptr, nullptr, 0, y2_c.get(), nullptr, nullptr, kM, kN,
                                code(), opt.eps, nullptr));
  ASSERT_TRUE(rmsnorm_fwd(rows(x, t()), {}, rows(y2_cpp, t()), {}, nullptr, opt).ok());
  expect_same_bytes(y2_c, y2_cpp, "rmsnorm_fwd y");

  DeviceBuffer dx_c = poisoned(row_bytes()), dx_cpp = poisoned(row_bytes());
  DeviceBuffer dw_c = poisoned(kN * 4), dw_cpp = poisoned(kN * 4);
  expect_ok(kestrel_rmsnorm_bwd(dy.get(), h_cpp.get(), w.get(), code(),
                                static_cast<const float*>(r_cpp.get()), dx_c.get(), dw_c.get(),
                                KESTREL_F32, kM, kN, code(), nullptr));
  ASSERT_TRUE(rmsnorm_bwd(rows(dy, t()), rows(h_cpp, t()), vec(w, t(), kN),
                          vec(r_cpp, DType::kF32, kM), rows(dx_cpp, t()),
                          vec(dw_cpp, DType::kF32, kN), nullptr)
                  .ok());
  expect_same_bytes(dx_c, dx_cpp, "rmsnorm_bwd dx");
  expect_same_bytes(dw_c, dw_cpp, "rmsnorm_bwd dweight");
}

TEST_P(CApiGpu, CrossEntropyMean) {
  KESTREL_REQUIRE_GPU();
  const DeviceBuffer logits = random_rows(t(), kM * kN, 7);
  const DeviceBuffer target = DeviceBuffer::from(testing::random_targets(kM, kN, 8, -100, 5));
  const DeviceBuffer dloss = DeviceBuffer::from(std::vector<float>{0.75f});
  DeviceBuffer loss_c = poisoned(4), loss_cpp = poisoned(4), lse_c = poisoned(kM * 4),
               lse_cpp = poisoned(kM * 4), tw_c = poisoned(4), tw_cpp = poisoned(4);
  CrossEntropyOptions opt;
  opt.label_smoothing = 0.1f;
  opt.total_weight = vec(tw_cpp, DType::kF32, 1);
  const auto* tgt = static_cast<const int64_t*>(target.get());
  expect_ok(kestrel_cross_entropy_fwd(logits.get(), tgt, static_cast<float*>(loss_c.get()),
                                      static_cast<float*>(lse_c.get()),
                                      static_cast<float*>(tw_c.get()), kM, kN, code(), -100, 0.1f,
                                      KESTREL_REDUCTION_MEAN, nullptr));
  ASSERT_TRUE(cross_entropy_fwd(rows(logits, t()), vec(target, DType::kI64, kM),
                                vec(loss_cpp, DType::kF32, 1), vec(lse_cpp, DType::kF32, kM),
                                nullptr, opt)
                  .ok());
  expect_same_bytes(loss_c, loss_cpp, "cross_entropy_fwd loss");
  expect_same_bytes(lse_c, lse_cpp, "cross_entropy_fwd lse");
  expect_same_bytes(tw_c, tw_cpp, "cross_entropy_fwd total_weight");

  DeviceBuffer dl_c = poisoned(row_bytes()), dl_cpp = poisoned(row_bytes());
  expect_ok(kestrel_cross_entropy_bwd(
      static_cast<const float*>(dloss.get()), logits.get(), tgt,
      static_cast<const float*>(lse_cpp.get()), static_cast<const float*>(tw_cpp.get()),
      dl_c.get(), kM, kN, code(), -100, 0.1f, KESTREL_REDUCTION_MEAN, nullptr));
  ASSERT_TRUE(cross_entropy_bwd(vec(dloss, DType::kF32, 1), rows(logits, t()),
                                vec(target, DType::kI64, kM), vec(lse_cpp, DType::kF32, kM),
                                rows(dl_cpp, t()), nullptr, opt)
                  .ok());
  expect_same_bytes(dl_c, dl_cpp, "cross_entropy_bwd dlogits");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CApiGpu,
                         ::testing::Values(Typed{DType::kF32, KESTREL_F32},
                                           Typed{DType::kBF16, KESTREL_BF16}),
                         [](const ::testing::TestParamInfo<Typed>& i) {
                           return std::string(dtype_name(i.param.t));
                         });

}  // namespace
}  // namespace kestrel
