// The C ABI's own argument checks (include/kestrel/c_api.h): codes and
// messages, and that the C++ API's validation reaches a C caller.
#include "kestrel/c_api.h"

#include <gtest/gtest.h>

#include <string>

#include "kestrel/nvfp4.h"
#include "kestrel/status.h"

namespace kestrel {
namespace {

constexpr int kInvalid = int(StatusCode::kInvalidArgument);

void expect_error(int rc, const std::string& words) {
  EXPECT_EQ(rc, kInvalid);
  EXPECT_NE(std::string(kestrel_last_error()).find(words), std::string::npos)
      << kestrel_last_error();
}

TEST(CApi, RejectsUnknownDtypeCodes) {
  char buf[64] = {};
  expect_error(kestrel_softmax_fwd(buf, buf, 1, 8, 7, nullptr), "dtype: must be KESTREL_F32");
  expect_error(kestrel_rmsnorm_fwd(buf, nullptr, buf, -1, buf, nullptr, nullptr, 1, 8, KESTREL_F32,
                                   1e-6f, nullptr),
               "weight_dtype");
  expect_error(
      kestrel_rmsnorm_bwd(buf, buf, nullptr, 0, nullptr, buf, buf, 9, 1, 8, KESTREL_BF16, nullptr),
      "dweight_dtype");
}

TEST(CApi, RejectsUnknownReductionCodes) {
  char buf[64] = {};
  int64_t target[1] = {0};
  float f[4] = {};
  expect_error(kestrel_cross_entropy_fwd(buf, target, f, f, nullptr, 1, 8, KESTREL_F32, -100, 0.0f,
                                         3, nullptr),
               "reduction: must be");
  expect_error(kestrel_cross_entropy_bwd(f, buf, target, f, nullptr, buf, 1, 8, KESTREL_F32, -100,
                                         0.0f, -1, nullptr),
               "reduction: must be");
}

TEST(CApi, RejectsHWithoutResidual) {
  char buf[64] = {};
  expect_error(kestrel_rmsnorm_fwd(buf, nullptr, nullptr, 0, buf, buf, nullptr, 1, 8, KESTREL_F32,
                                   1e-6f, nullptr),
               "h: given without a residual");
}

TEST(CApi, CarriesTheLibrarysValidation) {
  char buf[64] = {};
  // A negative row count is the C++ API's to reject, before any device work.
  expect_error(kestrel_softmax_fwd(buf, buf, -1, 8, KESTREL_F32, nullptr), "x: negative extent");
}

TEST(CApi, EachCallReplacesTheMessage) {
  char buf[64] = {};
  expect_error(kestrel_softmax_fwd(buf, buf, 1, 8, 7, nullptr), "dtype");
  expect_error(kestrel_softmax_fwd(buf, buf, -1, 8, KESTREL_F32, nullptr), "x: negative extent");
  EXPECT_EQ(std::string(kestrel_last_error()).find("dtype"), std::string::npos);
}

// NVFP4: a kestrel_nvfp4 is checked before it becomes a view; the rest is
// the C++ API's validation, which runs before any device work.
kestrel_nvfp4 nvfp4(void* p, int64_t batches, int64_t rows, int64_t k, int layout) {
  return {p, p, batches, rows, k, layout, 1.0f};
}

TEST(CApi, Nvfp4TensorsAreCheckedWithTheirNames) {
  char buf[64] = {};
  const kestrel_nvfp4 a = nvfp4(buf, 1, 8, 64, KESTREL_SCALES_LINEAR);
  const kestrel_nvfp4 bad_layout = nvfp4(buf, 1, 8, 64, 2);
  const kestrel_nvfp4 bad_k = nvfp4(buf, 1, 8, 72, KESTREL_SCALES_LINEAR);
  expect_error(kestrel_gemm_nvfp4(&a, nullptr, buf, KESTREL_BF16, nullptr), "b: NULL");
  expect_error(kestrel_gemm_nvfp4(&a, &bad_layout, buf, KESTREL_BF16, nullptr),
               "b.scale_layout: must be KESTREL_SCALES_LINEAR or KESTREL_SCALES_BLOCKED");
  expect_error(kestrel_dual_gemm_nvfp4(&a, &a, &bad_k, buf, KESTREL_BF16, nullptr),
               "b2.k: must be a multiple of 16, got 72");
  expect_error(kestrel_pack_gemm_weights(&bad_layout, buf, 64, nullptr), "w.scale_layout");
  expect_error(kestrel_quantize_nvfp4(buf, KESTREL_BF16, &bad_k, nullptr), "t.k: must be");
  expect_error(kestrel_dequantize_nvfp4(nullptr, buf, KESTREL_F32, nullptr), "t: NULL");
}

TEST(CApi, Nvfp4CallsRejectUnknownDtypeCodes) {
  char buf[64] = {};
  const kestrel_nvfp4 a = nvfp4(buf, 1, 8, 64, KESTREL_SCALES_LINEAR);
  expect_error(kestrel_gemm_nvfp4(&a, &a, buf, 5, nullptr), "out_dtype: must be KESTREL_F32");
  expect_error(kestrel_gemm_nvfp4_packed(&a, buf, 1.0f, 8, buf, -1, nullptr), "out_dtype");
  expect_error(kestrel_quantize_nvfp4(buf, 9, &a, nullptr), "dtype: must be");
}

TEST(CApi, Nvfp4CallsCarryTheLibrarysValidation) {
  char buf[64] = {};
  const kestrel_nvfp4 a = nvfp4(buf, 1, 8, 64, KESTREL_SCALES_LINEAR);
  const kestrel_nvfp4 b = nvfp4(buf, 2, 16, 64, KESTREL_SCALES_LINEAR);
  expect_error(kestrel_gemm_nvfp4(&a, &b, buf, KESTREL_BF16, nullptr),
               "b: batch count must equal a's (1), got 2");
  expect_error(kestrel_gemm_nvfp4_packed(&a, nullptr, 1.0f, 16, buf, KESTREL_BF16, nullptr),
               "b.values");
  // An fp32 output is the GEMM's rule, not the C layer's.
  const kestrel_nvfp4 b1 = nvfp4(buf, 1, 16, 64, KESTREL_SCALES_LINEAR);
  expect_error(kestrel_gemm_nvfp4(&a, &b1, buf, KESTREL_F32, nullptr), "c: dtype");
}

TEST(CApi, SizesAreTheLibrarys) {
  EXPECT_EQ(kestrel_blocked_scale_bytes(200, 512, 3), blocked_scale_bytes(200, 512, 3));
}

}  // namespace
}  // namespace kestrel
