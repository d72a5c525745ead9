// The C ABI's own argument checks (include/kestrel/c_api.h): codes and
// messages, and that the C++ API's validation reaches a C caller.
#include <gtest/gtest.h>

#include <string>

#include "kestrel/c_api.h"
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
  expect_error(kestrel_rmsnorm_bwd(buf, buf, nullptr, 0, nullptr, buf, buf, 9, 1, 8, KESTREL_BF16,
                                   nullptr),
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

}  // namespace
}  // namespace kestrel
