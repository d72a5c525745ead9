// The FP8 GEMM's configuration space and width rule (no GPU needed): every
// configuration fits in shared memory, the deepest ring of each width is in
// the space, and the rule picks the widths `kestrel tune` found fastest on
// the H100 (BENCHMARKS.md, session 42).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "kestrel/fp8_gemm.h"
#include "ops/fp8_gemm_kernel.h"
#include "ops/gemm_common.h"

namespace kestrel {
namespace {

constexpr int kH100Sms = 132;

TEST(Fp8GemmConfig, EveryConfigurationFitsAndHasItsOwnKernel) {
  const auto space = fp8_gemm_config_space();
  ASSERT_FALSE(space.empty());
  std::set<std::string> kernels;
  for (const Fp8GemmConfig& c : space) {
    EXPECT_LE(ops::fp8_gemm_smem_bytes(c.block_n, c.stages), ops::kGemmSmemLimit) << c.describe();
    EXPECT_GE(c.stages, 2) << c.describe();
    kernels.insert(ops::fp8_gemm_kernel_spec(c, true).entry);
  }
  // The raster is a run-time parameter: one kernel per width and depth.
  for (int bn : {64, 128, 192}) {
    const int deepest = ops::fp8_gemm_max_stages(bn);
    EXPECT_GT(ops::fp8_gemm_smem_bytes(bn, deepest + 1), ops::kGemmSmemLimit) << bn;
    EXPECT_TRUE(std::any_of(space.begin(), space.end(), [&](const Fp8GemmConfig& c) {
      return c.block_n == bn && c.stages == deepest;
    })) << bn;
  }
  EXPECT_EQ(kernels.size(), space.size() / 4);  // rasters 1, 4, 8, 16
}

TEST(Fp8GemmConfig, TheWidthRulePicksTheMeasuredFastest) {
  struct Case {
    int64_t m, n, k;
    int block_n;
  };
  // H100 / H200, session 42: bn192 791 vs bn128 844 us at 8192^3; bn128
  // 117.0 vs bn192 127.0 at 4096^3; bn192 823 vs bn128 840 at M4096 N7168
  // K18432; bn64 23.5 vs bn128 30.4 at M128 N8192 K8192 (H200).
  for (const Case& c : {Case{8192, 8192, 8192, 192}, Case{4096, 4096, 4096, 128},
                        Case{4096, 7168, 18432, 192}, Case{128, 8192, 8192, 64}}) {
    const Fp8GemmConfig cfg = fp8_gemm_default_config(c.m, c.n, c.k, 1, kH100Sms);
    EXPECT_EQ(cfg.block_n, c.block_n) << c.m << " x " << c.n << " x " << c.k;
    EXPECT_EQ(cfg.stages, ops::fp8_gemm_max_stages(cfg.block_n));
  }
  // Tiny and huge problems still get a configuration of the space.
  for (const auto& [m, n, l] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 8, 1}, {1 << 20, 8, 1}, {77, 200, 64}}) {
    const Fp8GemmConfig cfg = fp8_gemm_default_config(m, n, 16, l, kH100Sms);
    const auto space = fp8_gemm_config_space();
    EXPECT_TRUE(std::any_of(space.begin(), space.end(), [&](const Fp8GemmConfig& s) {
      return s.describe() == cfg.describe();
    })) << cfg.describe();
  }
}

TEST(Fp8GemmConfig, DescribeNamesEveryKnob) {
  EXPECT_EQ((Fp8GemmConfig{128, 6, 4}).describe(), "bn128 s6 r4");
  EXPECT_EQ(ops::fp8_gemm_kernel_spec({192, 4, 8}, false).entry,
            "kestrel::fp8_gemm_kernel<192, 4, false>");
}

}  // namespace
}  // namespace kestrel
