// The C ABI (include/kestrel/c_api.h) forwards to the C++ API: every op, run
// both ways on the same inputs into poisoned outputs, gives the same bytes
// (the C++ API is checked against the float64 references in
// rowwise_gpu_test.cpp, gemm_gpu_test.cpp and nvfp4_codec_gpu_test.cpp, and
// its results are deterministic).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "device_nvfp4.h"
#include "gpu_test.h"
#include "kestrel/c_api.h"
#include "kestrel/fp8_gemm.h"
#include "kestrel/gemm.h"
#include "kestrel/rowwise.h"
#include "random.h"

namespace kestrel {
namespace {

using testing::DeviceBuffer;
using testing::DeviceNvfp4;

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
  expect_ok(kestrel_cross_entropy_bwd(static_cast<const float*>(dloss.get()), logits.get(), tgt,
                                      static_cast<const float*>(lse_cpp.get()),
                                      static_cast<const float*>(tw_cpp.get()), dl_c.get(), kM, kN,
                                      code(), -100, 0.1f, KESTREL_REDUCTION_MEAN, nullptr));
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

// ---- NVFP4: quantize, dequantize, pack and the GEMMs ----

// Two batches, M and N off the tiles, the smallest K of several stages.
constexpr int64_t kL = 2, kGemmM = 77, kGemmN = 200, kK = 512;

kestrel_nvfp4 c_tensor(void* values, void* scales, int64_t rows, ScaleLayout layout, float gs) {
  return {values, scales, kL, rows, kK, int(layout), gs};
}
kestrel_nvfp4 c_tensor(const DeviceNvfp4& t) {
  return c_tensor(t.values.get(), t.scales.get(), t.view.rows(), t.view.layout,
                  t.view.global_scale);
}

DeviceNvfp4 operand(int64_t rows, ScaleLayout layout, uint64_t seed, float global_scale) {
  auto h = testing::with_layout(testing::realistic_nvfp4(kL, rows, kK, seed), layout);
  h.global_scale = global_scale;
  return DeviceNvfp4(h);
}

TensorView c_view(const DeviceBuffer& b, int64_t n) {
  return TensorView::dense(b.get(), DType::kBF16, {kL, kGemmM, n});
}

class CApiNvfp4Gpu : public ::testing::TestWithParam<ScaleLayout> {
 protected:
  ScaleLayout layout() const { return GetParam(); }
  void expect_ok(int rc) { ASSERT_EQ(rc, 0) << kestrel_last_error(); }
};

TEST_P(CApiNvfp4Gpu, QuantizeAndDequantize) {
  KESTREL_REQUIRE_GPU();
  const int64_t count = kL * kGemmM * kK;
  const DeviceBuffer x = DeviceBuffer::from(testing::random_bf16(count, 5));
  const size_t scale_bytes = layout() == ScaleLayout::kBlocked
                                 ? size_t(blocked_scale_bytes(kGemmM, kK, kL))
                                 : size_t(kL * kGemmM * kK / 16);
  DeviceBuffer v1 = poisoned(count / 2), s1 = poisoned(scale_bytes);
  DeviceBuffer v2 = poisoned(count / 2), s2 = poisoned(scale_bytes);
  const kestrel_nvfp4 t1 = c_tensor(v1.get(), s1.get(), kGemmM, layout(), 0.25f);
  expect_ok(kestrel_quantize_nvfp4(x.get(), KESTREL_BF16, &t1, nullptr));
  Nvfp4View t2;
  t2.values = TensorView::dense(v2.get(), DType::kE2M1x2, {kL, kGemmM, kK / 2});
  t2.scales = layout() == ScaleLayout::kBlocked
                  ? TensorView::dense(s2.get(), DType::kE4M3, {int64_t(scale_bytes)})
                  : TensorView::dense(s2.get(), DType::kE4M3, {kL, kGemmM, kK / 16});
  t2.layout = layout();
  t2.global_scale = 0.25f;
  ASSERT_TRUE(
      quantize_nvfp4(TensorView::dense(x.get(), DType::kBF16, {kL, kGemmM, kK}), t2, nullptr).ok());
  expect_same_bytes(v1, v2, "values");
  expect_same_bytes(s1, s2, "scales");

  DeviceBuffer y1 = poisoned(count * 4), y2 = poisoned(count * 4);
  expect_ok(kestrel_dequantize_nvfp4(&t1, y1.get(), KESTREL_F32, nullptr));
  ASSERT_TRUE(
      dequantize_nvfp4(t2, TensorView::dense(y2.get(), DType::kF32, {kL, kGemmM, kK}), nullptr)
          .ok());
  expect_same_bytes(y1, y2, "dequantized");
}

TEST_P(CApiNvfp4Gpu, GemmAndDualGemm) {
  KESTREL_REQUIRE_GPU();
  const DeviceNvfp4 a = operand(kGemmM, layout(), 1, 0.5f), b1 = operand(kGemmN, layout(), 2, 2.0f),
                    b2 = operand(kGemmN, layout(), 3, 1.5f);
  const kestrel_nvfp4 ca = c_tensor(a), cb1 = c_tensor(b1), cb2 = c_tensor(b2);
  const size_t c_bytes = size_t(kL * kGemmM * kGemmN * 2);
  DeviceBuffer c1 = poisoned(c_bytes), c2 = poisoned(c_bytes);
  expect_ok(kestrel_gemm_nvfp4(&ca, &cb1, c1.get(), KESTREL_BF16, nullptr));
  ASSERT_TRUE(gemm_nvfp4(a.view, b1.view, c_view(c2, kGemmN), nullptr).ok());
  expect_same_bytes(c1, c2, "gemm");

  DeviceBuffer d1 = poisoned(c_bytes), d2 = poisoned(c_bytes);
  expect_ok(kestrel_dual_gemm_nvfp4(&ca, &cb1, &cb2, d1.get(), KESTREL_BF16, nullptr));
  ASSERT_TRUE(dual_gemm_nvfp4(a.view, b1.view, b2.view, c_view(d2, kGemmN), nullptr).ok());
  expect_same_bytes(d1, d2, "dual_gemm");
}

TEST_P(CApiNvfp4Gpu, PackedWeights) {
  KESTREL_REQUIRE_GPU();
  const DeviceNvfp4 a = operand(kGemmM, ScaleLayout::kLinear, 4, 0.5f),
                    b1 = operand(kGemmN, layout(), 5, 2.0f),
                    b2 = operand(kGemmN, layout(), 6, 1.5f);
  const kestrel_nvfp4 ca = c_tensor(a), cb1 = c_tensor(b1), cb2 = c_tensor(b2);
  const int64_t bytes = kestrel_gemm_packed_weight_bytes(kGemmN, kK, kL);
  ASSERT_EQ(bytes, gemm_packed_weight_bytes(kGemmN, kK, kL));
  DeviceBuffer p1 = poisoned(size_t(bytes)), p2 = poisoned(size_t(bytes)),
               q1 = poisoned(size_t(bytes));
  expect_ok(kestrel_pack_gemm_weights(&cb1, p1.get(), bytes, nullptr));
  expect_ok(kestrel_pack_gemm_weights(&cb2, q1.get(), bytes, nullptr));
  GemmPackedWeights w1, w2;
  ASSERT_TRUE(pack_gemm_weights(b1.view, p2.get(), bytes, nullptr, &w1).ok());
  expect_same_bytes(p1, p2, "packed weights");
  DeviceBuffer q2 = poisoned(size_t(bytes));
  ASSERT_TRUE(pack_gemm_weights(b2.view, q2.get(), bytes, nullptr, &w2).ok());
  expect_same_bytes(q1, q2, "packed weights 2");

  const size_t c_bytes = size_t(kL * kGemmM * kGemmN * 2);
  DeviceBuffer c1 = poisoned(c_bytes), c2 = poisoned(c_bytes);
  expect_ok(
      kestrel_gemm_nvfp4_packed(&ca, p1.get(), 2.0f, kGemmN, c1.get(), KESTREL_BF16, nullptr));
  ASSERT_TRUE(gemm_nvfp4(a.view, w1, c_view(c2, kGemmN), nullptr).ok());
  expect_same_bytes(c1, c2, "gemm on packed weights");

  DeviceBuffer d1 = poisoned(c_bytes), d2 = poisoned(c_bytes);
  expect_ok(kestrel_dual_gemm_nvfp4_packed(&ca, p1.get(), 2.0f, q1.get(), 1.5f, kGemmN, d1.get(),
                                           KESTREL_BF16, nullptr));
  ASSERT_TRUE(dual_gemm_nvfp4(a.view, w1, w2, c_view(d2, kGemmN), nullptr).ok());
  expect_same_bytes(d1, d2, "dual_gemm on packed weights");
}

// Groups of A's kL x kGemmM rows (one empty), one weight each: the C calls
// against the C++ ones, plain and dual, row-major and packed.
TEST_P(CApiNvfp4Gpu, GroupedGemm) {
  KESTREL_REQUIRE_GPU();
  const DeviceNvfp4 a = operand(kGemmM, ScaleLayout::kLinear, 7, 0.5f),
                    b1 = operand(kGemmN, layout(), 8, 2.0f),
                    b2 = operand(kGemmN, layout(), 9, 1.5f);
  const int64_t rows = kL * kGemmM;  // the batches of `a` as one matrix
  kestrel_nvfp4 ca = c_tensor(a);
  ca.batches = 1;
  ca.rows = rows;
  Nvfp4View av = a.view;
  av.values = TensorView::dense(a.values.get(), DType::kE2M1x2, {rows, kK / 2});
  av.scales = TensorView::dense(a.scales.get(), DType::kE4M3, {rows, kK / 16});
  const kestrel_nvfp4 cb1 = c_tensor(b1), cb2 = c_tensor(b2);
  const DeviceBuffer ends = DeviceBuffer::from(std::vector<int32_t>{0, int32_t(rows)});
  const auto* e = static_cast<const int32_t*>(ends.get());
  const GemmGroups groups{e, kL};
  const size_t c_bytes = size_t(rows * kGemmN * 2);
  auto cv = [&](const DeviceBuffer& b) {
    return TensorView::dense(b.get(), DType::kBF16, {rows, kGemmN});
  };
  DeviceBuffer c1 = poisoned(c_bytes), c2 = poisoned(c_bytes);
  expect_ok(kestrel_grouped_gemm_nvfp4(&ca, &cb1, nullptr, e, kL, c1.get(), KESTREL_BF16, nullptr));
  ASSERT_TRUE(grouped_gemm_nvfp4(av, b1.view, groups, cv(c2), nullptr).ok());
  expect_same_bytes(c1, c2, "grouped_gemm");
  DeviceBuffer d1 = poisoned(c_bytes), d2 = poisoned(c_bytes);
  expect_ok(kestrel_grouped_gemm_nvfp4(&ca, &cb1, &cb2, e, kL, d1.get(), KESTREL_BF16, nullptr));
  ASSERT_TRUE(grouped_dual_gemm_nvfp4(av, b1.view, b2.view, groups, cv(d2), nullptr).ok());
  expect_same_bytes(d1, d2, "grouped dual_gemm");

  const int64_t bytes = kestrel_gemm_packed_weight_bytes(kGemmN, kK, kL);
  DeviceBuffer p1 = poisoned(size_t(bytes)), p2 = poisoned(size_t(bytes));
  GemmPackedWeights w1, w2;
  ASSERT_TRUE(pack_gemm_weights(b1.view, p1.get(), bytes, nullptr, &w1).ok());
  ASSERT_TRUE(pack_gemm_weights(b2.view, p2.get(), bytes, nullptr, &w2).ok());
  DeviceBuffer f1 = poisoned(c_bytes), f2 = poisoned(c_bytes);
  expect_ok(kestrel_grouped_gemm_nvfp4_packed(&ca, p1.get(), 2.0f, p2.get(), 1.5f, kGemmN, e, kL,
                                              f1.get(), KESTREL_BF16, nullptr));
  ASSERT_TRUE(grouped_dual_gemm_nvfp4(av, w1, w2, groups, cv(f2), nullptr).ok());
  expect_same_bytes(f1, f2, "grouped dual_gemm on packed weights");
  expect_same_bytes(d1, f1, "grouped dual_gemm, packed against row-major");
}

// ---- FP8 GEMM + add ----

TEST(CApiFp8Gpu, GemmAdd) {
  KESTREL_REQUIRE_GPU();
  constexpr int64_t kFp8N = 200;  // the C ABI's dense rows: N a multiple of 8
  const DeviceBuffer a = DeviceBuffer::from(testing::random_e4m3(kL * kGemmM * kK, 31));
  const DeviceBuffer b = DeviceBuffer::from(testing::random_e4m3(kL * kFp8N * kK, 32));
  const DeviceBuffer r = DeviceBuffer::from(testing::random_bf16(kL * kGemmM * kFp8N, 33));
  const size_t d_bytes = size_t(kL * kGemmM * kFp8N * 2);
  auto v = [&](const DeviceBuffer& buf, DType t, int64_t rows, int64_t cols) {
    return TensorView::dense(buf.get(), t, {kL, rows, cols});
  };
  const TensorView rv = v(r, DType::kBF16, kGemmM, kFp8N);
  for (bool add : {true, false}) {
    DeviceBuffer d1 = poisoned(d_bytes), d2 = poisoned(d_bytes);
    ASSERT_EQ(kestrel_fp8_gemm_add(a.get(), b.get(), 0.37f, add ? r.get() : nullptr, d1.get(), kL,
                                   kGemmM, kFp8N, kK, nullptr),
              0)
        << kestrel_last_error();
    ASSERT_TRUE(fp8_gemm_add(v(a, DType::kE4M3, kGemmM, kK), v(b, DType::kE4M3, kFp8N, kK), 0.37f,
                             add ? &rv : nullptr, v(d2, DType::kBF16, kGemmM, kFp8N), nullptr)
                    .ok());
    expect_same_bytes(d1, d2, add ? "fp8_gemm_add" : "fp8_gemm_add without r");
    // Device scales whose product is the alpha above (0.5 * 0.74 = 0.37 in fp32).
    const DeviceBuffer scales = DeviceBuffer::from(std::vector<float>{0.5f, 0.74f});
    const auto* s = static_cast<const float*>(scales.get());
    DeviceBuffer d3 = poisoned(d_bytes);
    ASSERT_EQ(kestrel_fp8_gemm_add_scaled(a.get(), b.get(), s, s + 1, add ? r.get() : nullptr,
                                          d3.get(), kL, kGemmM, kFp8N, kK, nullptr),
              0)
        << kestrel_last_error();
    expect_same_bytes(d1, d3, add ? "fp8_gemm_add_scaled" : "fp8_gemm_add_scaled without r");
  }
  EXPECT_NE(kestrel_fp8_gemm_add(nullptr, b.get(), 1.0f, nullptr, r.get(), kL, kGemmM, kFp8N, kK,
                                 nullptr),
            0);
  EXPECT_NE(std::string(kestrel_last_error()).find("a: is NULL"), std::string::npos)
      << kestrel_last_error();
}

INSTANTIATE_TEST_SUITE_P(ScaleLayouts, CApiNvfp4Gpu,
                         ::testing::Values(ScaleLayout::kLinear, ScaleLayout::kBlocked),
                         [](const auto& info) {
                           return std::string(scale_layout_name(info.param));
                         });

}  // namespace
}  // namespace kestrel
