// The FP8 GEMM's configuration space and width rule (no GPU needed): every
// configuration fits in shared memory, the deepest ring of each width is in
// the space, and the rule picks the tiles and tail splits measured fastest
// (BENCHMARKS.md, sessions 42 to 44).
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

using ops::fp8_gemm_tail_plan;
using ops::Fp8TailPlan;

constexpr int kH100Sms = 132;

TEST(Fp8GemmConfig, EveryConfigurationFitsAndHasItsOwnKernel) {
  const auto space = fp8_gemm_config_space();
  ASSERT_FALSE(space.empty());
  std::set<std::string> kernels;
  for (const Fp8GemmConfig& c : space) {
    EXPECT_LE(ops::fp8_gemm_smem_bytes(c.consumer_groups, c.block_n, c.stages), ops::kGemmSmemLimit)
        << c.describe();
    EXPECT_GE(c.stages, 2) << c.describe();
    kernels.insert(ops::fp8_gemm_kernel_spec(c, true).entry);
  }
  // The raster and the tail split are run-time parameters: one kernel per
  // tile and depth.
  for (int groups : {1, 2})
    for (int bn : {64, 128, 192}) {
      const int deepest = ops::fp8_gemm_max_stages(groups, bn);
      EXPECT_GT(ops::fp8_gemm_smem_bytes(groups, bn, deepest + 1), ops::kGemmSmemLimit) << bn;
      EXPECT_TRUE(std::any_of(space.begin(), space.end(), [&](const Fp8GemmConfig& c) {
        return c.consumer_groups == groups && c.block_n == bn && c.stages == deepest;
      })) << bn;
    }
  // 64-row tiles hold more of B in flight: bn64 13 stages against 8.
  EXPECT_EQ(ops::fp8_gemm_max_stages(2, 64), 8);
  EXPECT_EQ(ops::fp8_gemm_max_stages(1, 64), 13);
  EXPECT_EQ(kernels.size(), space.size() / 16);  // rasters 1, 4, 8, 16 x tail splits 1, 2, 4, 8
}

TEST(Fp8GemmConfig, TheWidthRulePicksTheMeasuredFastest) {
  struct Case {
    int64_t m, n, k;
    int block_n, tail_split, consumer_groups = 2;
  };
  // Session 42 (H100 / H200, no tail splits): bn192 791 vs bn128 844 us at
  // 8192^3; bn192 823 vs bn128 840 at M4096 N7168 K18432. Session 43
  // (`kestrel bench` over every width and split, H200): M4096 N7168 K18432
  // bn192 in 4 parts 803 (whole 849); 4096^3 bn192 in 3 parts 122.4 (bn128
  // 123.7, bn192 whole 128.3); M128 N8192 K8192 bn64 25.1 (bn128 in 2
  // parts 28.6); M2048 N2048 K8192 bn128 58.4 (bn192 in 3 parts 62.4);
  // M128 N1024 K16384 bn64 in 8 parts 15.7 (whole 34.7). Session 44 (H100,
  // 64-row tiles, every width and split): M16 N8192 K16384 bn64 51.2 (bn128
  // 52.4, bn192 in 3 parts 55.0); M16 N16384 K8192 bn128 50.8 (bn64 51.8);
  // M32 N4096 K14336 bn64 in 2 parts 27.9 (bn128 in 4 parts 29.5); M16
  // N28672 K4096 bn128 45.5 (bn64 47.5); M16 N7168 K2048 bn64 11.3; M16
  // N1024 K16384 bn64 in 4 parts 14.5 (8 parts 15.1, bn128 in 4 17.3).
  // Session 45 (H100, the meeting's loads in rounds): M8 N2048 K8192 bn64
  // in 4 parts 13.1-13.3 (2 parts 13.5-13.7, whole 17.4-17.6).
  for (const Case& c : {Case{8192, 8192, 8192, 192, 1}, Case{4096, 7168, 18432, 192, 4},
                        Case{4096, 4096, 4096, 192, 4}, Case{128, 8192, 8192, 64, 1},
                        Case{2048, 2048, 8192, 128, 1}, Case{128, 1024, 16384, 64, 8},
                        Case{16, 8192, 8192, 64, 1, 1}, Case{16, 8192, 16384, 64, 1, 1},
                        Case{16, 16384, 8192, 128, 1, 1}, Case{32, 4096, 14336, 64, 2, 1},
                        Case{16, 28672, 4096, 128, 1, 1}, Case{16, 7168, 2048, 64, 1, 1},
                        Case{16, 1024, 16384, 64, 4, 1}, Case{8, 2048, 8192, 64, 4, 1}}) {
    const Fp8GemmConfig cfg = fp8_gemm_default_config(c.m, c.n, c.k, 1, kH100Sms);
    EXPECT_EQ(cfg.block_n, c.block_n) << c.m << " x " << c.n << " x " << c.k;
    EXPECT_EQ(cfg.tail_split, c.tail_split) << c.m << " x " << c.n << " x " << c.k;
    EXPECT_EQ(cfg.consumer_groups, c.consumer_groups) << c.m << " x " << c.n << " x " << c.k;
    EXPECT_EQ(cfg.stages, ops::fp8_gemm_max_stages(cfg.consumer_groups, cfg.block_n));
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

// The tail split's plan: whole waves of one CTA per SM, then the partial
// wave's tiles in as many K parts as tail_split, the idle SMs and K allow.
TEST(Fp8GemmConfig, TailPlanFillsThePartialWave) {
  // 4096^3 at bn192 on 132 SMs: 704 tiles, 5 whole waves, 44 tiles in 3.
  Fp8TailPlan p = fp8_gemm_tail_plan(4096, 4096, 4096, 1, {192, 4, 8, 4}, kH100Sms);
  EXPECT_EQ(p.grid, 132);
  EXPECT_EQ(p.tail_begin, 660);
  EXPECT_EQ(p.tail_tiles, 44);
  EXPECT_EQ(p.parts, 3);
  // One partial wave alone (split-K): 16 tiles in 8 parts on 128 CTAs.
  p = fp8_gemm_tail_plan(128, 1024, 16384, 1, {64, 8, 8, 8}, kH100Sms);
  EXPECT_EQ(p.grid, 128);
  EXPECT_EQ(p.tail_begin, 0);
  EXPECT_EQ(p.parts, 8);
  // The same in 64-row tiles: 32 tiles in 4 parts.
  p = fp8_gemm_tail_plan(128, 1024, 16384, 1, {64, 13, 8, 8, 1}, kH100Sms);
  EXPECT_EQ(p.grid, 128);
  EXPECT_EQ(p.tail_tiles, 32);
  EXPECT_EQ(p.parts, 4);
  for (int sms : {132, 114, 78})
    for (int64_t m : {1, 300, 4096})
      for (int64_t n : {64, 1000, 8192})
        for (int64_t k : {16, 200, 4096})
          for (int bn : {64, 128, 192})
            for (int t : {1, 2, 4, 8}) {
              const int groups = m == 1 ? 1 : 2;
              const int64_t tiles = ops::ceil_div(m, 64 * groups) * ops::ceil_div(n, bn);
              const int64_t rest = tiles % sms;
              p = fp8_gemm_tail_plan(m, n, k, 1, {bn, 4, 8, t, groups}, sms);
              const std::string what = "M" + std::to_string(m) + " N" + std::to_string(n) + " K" +
                                       std::to_string(k) + " bn" + std::to_string(bn) + " t" +
                                       std::to_string(t) + " c" + std::to_string(groups) + " on " +
                                       std::to_string(sms);
              const int64_t most =
                  std::min<int64_t>({t, rest ? sms / rest : 1, ops::ceil_div(k, 128)});
              EXPECT_EQ(p.parts, std::max<int64_t>(most, 1)) << what;
              if (p.parts == 1) {
                EXPECT_EQ(p.tail_tiles, 0) << what;
                EXPECT_EQ(p.tail_begin, tiles) << what;
                EXPECT_EQ(p.grid, std::min<int64_t>(tiles, sms)) << what;
              } else {
                EXPECT_EQ(p.tail_tiles, rest) << what;
                EXPECT_EQ(p.tail_begin, tiles - rest) << what;
                EXPECT_EQ(p.tail_begin % sms, 0) << what;
                EXPECT_LE(p.tail_tiles * p.parts, sms) << what;
                EXPECT_EQ(p.grid, tiles > sms ? sms : rest * p.parts) << what;
              }
            }
}

TEST(Fp8GemmConfig, DescribeNamesEveryKnob) {
  EXPECT_EQ((Fp8GemmConfig{128, 6, 4}).describe(), "bn128 s6 r4 t1");
  EXPECT_EQ((Fp8GemmConfig{192, 4, 8, 4}).describe(), "bn192 s4 r8 t4");
  EXPECT_EQ((Fp8GemmConfig{64, 13, 8, 1, 1}).describe(), "bn64 s13 r8 t1 c1");
  EXPECT_EQ(ops::fp8_gemm_kernel_spec({192, 4, 8}, false).entry,
            "kestrel::fp8_gemm_kernel<128, 192, 4, false>");
  EXPECT_EQ(ops::fp8_gemm_kernel_spec({64, 13, 8, 1, 1}, true).entry,
            "kestrel::fp8_gemm_kernel<64, 64, 13, true>");
}

}  // namespace
}  // namespace kestrel
