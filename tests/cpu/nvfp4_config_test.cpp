// The NVFP4 GEMV / GEMM configuration spaces and heuristics (no GPU needed):
// every heuristic pick is a member of its space and fits in shared memory,
// for the seed shapes and the edges (M = 1, huge K, many batches).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <climits>
#include <tuple>
#include <utility>

#include "kestrel/gemm.h"
#include "kestrel/gemv.h"
#include "ops/gemm_common.h"
#include "ops/gemv_launch.h"

namespace kestrel {
namespace {

bool in_space(const GemvConfig& c) {
  const auto space = gemv_config_space();
  return std::any_of(space.begin(), space.end(), [&](const GemvConfig& s) {
    if (s.kernel != c.kernel) return false;
    if (c.kernel == GemvKernel::kWgmma) return s.stages == c.stages && s.ctas_per_sm == c.ctas_per_sm &&
                                               s.chunks_per_item == c.chunks_per_item;
    return s.row_tiles == c.row_tiles && s.warps == c.warps && s.cluster == c.cluster &&
           s.depth == c.depth && s.ring == c.ring;
  });
}

bool in_space(const GemmConfig& c, bool dual = false) {
  const auto space = gemm_config_space(dual);
  return std::any_of(space.begin(), space.end(), [&](const GemmConfig& s) {
    return s.block_n == c.block_n && s.stages == c.stages && s.split_k == c.split_k &&
           s.consumer_groups == c.consumer_groups;
  });
}

TEST(Nvfp4Config, GemvHeuristicPicksAreInTheSpace) {
  for (int64_t m : {1, 3, 128, 1000, 1024, 4096, 7168, 65536})
    for (int64_t k : {16, 48, 2048, 7168, 16384, 65536})
      for (int64_t l : {1, 3, 8}) {
        for (GemvKernel kernel : {GemvKernel::kWgmma, GemvKernel::kRegister}) {
          const GemvConfig c = gemv_default_config(m, k, l, 132, kernel);
          EXPECT_EQ(c.kernel, kernel);
          EXPECT_TRUE(in_space(c)) << m << "x" << k << "x" << l << ": " << c.describe();
        }
      }
}

// The kernel choice BENCHMARKS.md measured (session 49, H200): the register
// kernel also where the wgmma kernel had led (many rows of K >= 2048).
TEST(Nvfp4Config, GemvKernelChoiceFollowsTheMeasurements) {
  for (auto [m, k, l] : {std::array<int64_t, 3>{7168, 16384, 1},
                         {4096, 7168, 8},
                         {7168, 2048, 4},
                         {16384, 8192, 1},
                         {28672, 4096, 1},
                         {1024, 16384, 1},
                         {8192, 8192, 1}})
    EXPECT_EQ(gemv_default_kernel(m, k, l), GemvKernel::kRegister) << m << "x" << k << "x" << l;
}

// The register kernel's picks that session 18's grid search measured
// (BENCHMARKS.md): 16-row tiles; 4 / 8 / 16 warps as the tiles cover the
// SMs twice / once / not; a cluster only for rows of >= 16384 values per CTA;
// A through the cp.async ring from 32 Mi values (session 48) and with a
// cluster split, four groups in flight through it on rows of K >= 8192
// without one (session 49).
TEST(Nvfp4Config, GemvRegisterHeuristicFollowsTheMeasurements) {
  auto pick = [](int64_t m, int64_t k, int64_t l) {
    return gemv_default_config(m, k, l, 132, GemvKernel::kRegister).describe();
  };
  EXPECT_EQ(pick(14336, 4096, 1), "rt1 w4 c1 d2 ring");
  EXPECT_EQ(pick(4096, 7168, 8), "rt1 w4 c1 d2 ring");
  EXPECT_EQ(pick(8192, 8192, 1), "rt1 w4 c1 d4 ring");
  EXPECT_EQ(pick(4096, 14336, 1), "rt1 w8 c1 d4 ring");
  EXPECT_EQ(pick(4096, 4096, 1), "rt1 w8 c1 d2");
  EXPECT_EQ(pick(2048, 8192, 1), "rt1 w16 c1 d2");
  EXPECT_EQ(pick(1024, 4096, 1), "rt1 w16 c1 d2");
  EXPECT_EQ(pick(1024, 16384, 1), "rt1 w16 c2 d2 ring");
  EXPECT_EQ(pick(64, 65536, 1), "rt1 w16 c8 d2 ring");
  EXPECT_EQ(pick(7168, 1024, 4), "rt1 w4 c1 d2");
}

// Groups in flight at several tokens: what fits 128 registers (ptxas).
TEST(Nvfp4Config, GemvRegisterTokensDepthFitsTheRegisters) {
  EXPECT_EQ(ops::gemv_register_tokens_depth(4, 1, true), 4);
  EXPECT_EQ(ops::gemv_register_tokens_depth(4, 2, true), 2);
  EXPECT_EQ(ops::gemv_register_tokens_depth(1, 2, false), 1);
  EXPECT_EQ(ops::gemv_register_tokens_depth(4, 3, true), 2);
  EXPECT_EQ(ops::gemv_register_tokens_depth(2, 3, false), 1);
  EXPECT_EQ(ops::gemv_register_tokens_depth(2, 4, true), 1);
  EXPECT_EQ(ops::gemv_register_tokens_depth(4, 16, false), 2);
}

// The cluster split that finishes its work items in the fewest CTA-group
// steps: a split of 4 whose clusters take two rounds loses to one of 2.
TEST(Nvfp4Config, GemvPickClusterCountsRounds) {
  // M 512 K 32768: 32 row tiles, 256 groups.
  EXPECT_EQ(ops::gemv_pick_cluster(32, 256, {{4, 30}, {2, 66}, {1, 132}}), 2);
  EXPECT_EQ(ops::gemv_pick_cluster(32, 256, {{4, 33}, {2, 66}, {1, 132}}), 4);
  // M 1024 K 16384: 64 tiles, 128 groups; the split halves each CTA's share.
  EXPECT_EQ(ops::gemv_pick_cluster(64, 128, {{2, 66}, {1, 132}}), 2);
  // Nothing fits: 0.
  EXPECT_EQ(ops::gemv_pick_cluster(8, 64, {{8, 0}}), 0);
}

// From five tokens (four on rows of K >= 8192) the kernel runs column tiles
// of 8 tokens.
TEST(Nvfp4Config, GemvRegisterKernelTokensTileFromFive) {
  for (int64_t t = 1; t <= 4; ++t) EXPECT_EQ(ops::gemv_register_kernel_tokens(t, 4096), t);
  for (int64_t t : {5, 8}) EXPECT_EQ(ops::gemv_register_kernel_tokens(t, 4096), 8);
  for (int64_t t : {9, 16}) EXPECT_EQ(ops::gemv_register_kernel_tokens(t, 4096), 16);
  // Four tokens on long rows: one column tile.
  for (int64_t t = 1; t <= 3; ++t) EXPECT_EQ(ops::gemv_register_kernel_tokens(t, 8192), t);
  EXPECT_EQ(ops::gemv_register_kernel_tokens(4, 8192), 8);
}

TEST(Nvfp4Config, GemmHeuristicPicksAreInTheSpaceAndFit) {
  for (int64_t m : {1, 8, 16, 77, 128, 256, 512, 1000, 4096, 8192})
    for (int64_t n : {128, 200, 3072, 4096, 7168, 8192})
      for (int64_t k : {64, 1024, 2048, 7168, 16384}) {
        // Tokens fit one tile up to 256, or tiles of 128 rather than a K
        // split (the dual GEMM's three warpgroups: of 96).
        for (bool dual : {false, true}) {
          const GemmConfig c = dual ? dual_gemm_default_config(m, n, k, 1, 132)
                                    : gemm_default_config(m, n, k, 1, 132);
          const int tile = c.consumer_groups == 3 ? 96 : 128;
          EXPECT_TRUE(in_space(c, dual)) << m << "x" << n << "x" << k << ": " << c.describe();
          EXPECT_LE(ops::gemm_smem_bytes(c.block_n, c.stages, false, c.consumer_groups),
                    ops::kGemmSmemLimit);
          EXPECT_GE(c.block_n, std::min<int64_t>(m, tile)) << m << "x" << n << "x" << k;
          rt::DeviceInfo hopper;
          hopper.max_smem_per_block_optin = ops::kGemmSmemLimit;
          EXPECT_TRUE(ops::check_gemm_config(c, dual, &hopper).ok()) << c.describe();
        }
      }
}

// Packed weights bring 1 KB of scale codes per stage: the deepest ring that
// fits is at most one stage shallower, and still fits.
TEST(Nvfp4Config, PackedWeightStagesFit) {
  for (int bn : gemm_block_n_choices()) {
    const int packed = ops::gemm_max_stages(bn, true), plain = ops::gemm_max_stages(bn);
    EXPECT_LE(ops::gemm_smem_bytes(bn, packed, true), ops::kGemmSmemLimit) << "bn" << bn;
    EXPECT_GT(ops::gemm_smem_bytes(bn, packed, true), ops::gemm_smem_bytes(bn, packed));
    EXPECT_TRUE(packed == plain || packed == plain - 1) << "bn" << bn;
  }
  EXPECT_EQ(ops::gemm_max_stages(192, true), 3);
  EXPECT_EQ(ops::gemm_max_stages(192), 4);
}

// The pipeline depths BENCHMARKS.md measured (session 30): 4 stages at
// 32..128 tokens but for unpacked weights under a K tail; the deepest ring
// that fits elsewhere.
TEST(Nvfp4Config, GemmDefaultStagesFollowTheMeasurements) {
  for (int bn : {32, 48, 64, 96, 128})
    for (bool packed : {false, true}) {
      EXPECT_EQ(ops::gemm_default_stages(bn, false, packed), 4) << "bn" << bn;
      EXPECT_EQ(ops::gemm_default_stages(bn, true, true), 4) << "bn" << bn;
    }
  EXPECT_EQ(ops::gemm_default_stages(128, true, false), ops::gemm_max_stages(128));
  for (int bn : {8, 16, 24, 192, 256})
    for (bool packed : {false, true})
      EXPECT_EQ(ops::gemm_default_stages(bn, false, packed), ops::gemm_max_stages(bn, packed))
          << "bn" << bn;
  EXPECT_EQ(gemm_default_config(128, 4096, 7168, 1, 132).describe(), "bn128 s4 k4");
  EXPECT_EQ(dual_gemm_default_config(256, 4096, 7168, 1, 132).describe(), "bn128 s4 k1");
  EXPECT_EQ(gemm_default_config(128, 7168, 16384, 1, 132).describe(), "bn128 s5 k2 tail");
  EXPECT_EQ(gemm_default_config(16, 8192, 8192, 1, 132).describe(), "bn16 s8 k2");
}

// The dual GEMM's choice BENCHMARKS.md measured (sessions 11, 13): a second
// tile of 128 tokens rather than a K split at M = 256; one tile of 256
// tokens at M = 512.
TEST(Nvfp4Config, DualGemmTakesTokenTilesBeforeAKSplit) {
  for (int64_t n : {3072, 4096}) {
    const GemmConfig m256 = dual_gemm_default_config(256, n, 7168, 1, 132);
    EXPECT_EQ(m256.block_n, 128) << m256.describe();
    EXPECT_EQ(m256.split_k, 1) << m256.describe();
  }
  const GemmConfig m512 = dual_gemm_default_config(512, 4096, 7168, 1, 132);
  EXPECT_EQ(m512.describe(), "bn256 s3 k1");
}

// The plain GEMM likewise (session 39): tiles of 128 tokens rather than a K
// split of 256-token tiles, but not where that split takes a K tail, nor
// where 128-token tiles pad more (M192) while the one-tile pick runs as
// many CTAs and meets over a cluster (session 40), for the dual GEMM too.
TEST(Nvfp4Config, GemmTakesTokenTilesBeforeAKSplitWithoutATail) {
  EXPECT_EQ(gemm_default_config(512, 4096, 7168, 1, 132).describe(), "bn128 s4 k1");
  EXPECT_EQ(gemm_default_config(256, 4096, 7168, 1, 132).describe(), "bn128 s4 k2");
  EXPECT_EQ(gemm_default_config(256, 1024, 16384, 1, 132).describe(), "bn128 s4 k8");
  EXPECT_EQ(gemm_default_config(256, 7168, 16384, 1, 132).describe(), "bn256 s3 k2 tail");
  EXPECT_EQ(gemm_default_config(192, 7168, 16384, 1, 132).describe(), "bn192 s4 k2 tail");
  EXPECT_EQ(gemm_default_config(192, 8192, 8192, 1, 132).describe(), "bn192 s4 k2");
  EXPECT_EQ(dual_gemm_default_config(160, 4096, 7168, 1, 132).describe(), "bn192 s4 k2");
  EXPECT_EQ(dual_gemm_default_config(192, 3072, 4096, 1, 132).describe(), "bn192 s4 k2");
  EXPECT_EQ(gemm_default_config(192, 3072, 4096, 1, 132).describe(), "bn192 s4 k4");  // 96 CTAs
  // One tile's split of four on 128 SMs would meet through L2; fewer CTAs.
  EXPECT_EQ(gemm_default_config(192, 4096, 4096, 1, 132).describe(), "bn128 s4 k2");
  EXPECT_EQ(dual_gemm_default_config(192, 2048, 4096, 1, 132).describe(), "bn128 s4 k2");
  EXPECT_EQ(gemm_default_config(160, 2048, 8192, 1, 132).describe(), "bn128 s4 k4");
  EXPECT_EQ(gemm_default_config(192, 1024, 4096, 1, 132).describe(), "bn128 s4 k4");
  EXPECT_EQ(gemm_default_config(4096, 4096, 4096, 1, 132).describe(), "bn256 s3 k1");
}

// Tiles of 96 columns (three consumer warpgroups) where their waves are
// shorter: at N = 3072, 32 x 4 tiles of 128 tokens (or 96 at M = 384) fill
// 128 SMs where 48 x 2 tiles of 256 fill 96 (H200, session 39: 65.4 ->
// 61.4 us, 65.3 -> 53.5 at M384); not where they take more waves (M512
// N4096: 172 tiles, M256 N3072: 64), nor at 64 tokens or fewer.
TEST(Nvfp4Config, DualGemmTakesThreeWarpgroupsWhereTheyFillTheGpu) {
  EXPECT_EQ(dual_gemm_default_config(512, 3072, 7168, 1, 132).describe(), "bn128 s4 k1 c3");
  EXPECT_EQ(dual_gemm_default_config(384, 3072, 7168, 1, 132).describe(), "bn96 s4 k1 c3");
  EXPECT_EQ(dual_gemm_default_config(1024, 3072, 4096, 1, 132).describe(), "bn128 s4 k1 c3");
  EXPECT_EQ(dual_gemm_default_config(512, 4096, 7168, 1, 132).consumer_groups, 2);
  EXPECT_EQ(dual_gemm_default_config(256, 3072, 4096, 1, 132).consumer_groups, 2);
  EXPECT_EQ(dual_gemm_default_config(4096, 4096, 4096, 1, 132).consumer_groups, 2);
  for (int64_t m : {1, 16, 64})
    EXPECT_EQ(dual_gemm_default_config(m, 3072, 7168, 1, 132).consumer_groups, 2) << m;
}

// The packed dual GPU cases written for the loop with two wgmma groups in
// flight (tiles of <= 128 tokens, no K split: dual_gemm_gpu_test.cpp) get
// it from the heuristic on an H100's 132 SMs, with the stage counts and
// tile counts they are there for.
TEST(Nvfp4Config, DualTwoGroupCasesTakeThatLoop) {
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{128, 13440, 384}, {77, 200, 1920}}) {
    const GemmConfig c = dual_gemm_default_config(m, n, k, 1, 132);
    EXPECT_LE(c.block_n, 128) << c.describe();
    EXPECT_EQ(c.split_k, 1) << c.describe();
    EXPECT_FALSE(c.k_tail) << c.describe();
    EXPECT_EQ(c.consumer_groups, 2) << c.describe();
    EXPECT_EQ(ops::ceil_div(k, ops::kGemmBlockK) % 2, 1) << k;  // an odd stage count
  }
  const GemmConfig wide = dual_gemm_default_config(128, 13440, 384, 1, 132);
  const ops::GemmShape shape{1, 128, 13440, 384, 0, 0};
  EXPECT_GT(ops::gemm_tiles(shape, wide, true), 132);  // CTAs take several tiles
}

// Grouped: tiles of the mean group's rows (at most 128), no K split; the
// launch holds the most tiles any grouping can take (each group pads at
// most one token tile), at most one CTA per SM, and the group table's
// shared memory on top.
TEST(Nvfp4Config, GroupedGemmPicksAndLaunch) {
  EXPECT_EQ(grouped_gemm_default_config(1024, 8).block_n, 128);
  EXPECT_EQ(grouped_gemm_default_config(260, 16).block_n, 24);
  EXPECT_EQ(grouped_gemm_default_config(5, 40).block_n, 8);
  EXPECT_EQ(grouped_gemm_default_config(65536, 4).block_n, 128);
  const GemmConfig c = grouped_gemm_default_config(1024, 8);
  EXPECT_EQ(c.split_k, 1);
  EXPECT_FALSE(c.k_tail);
  ops::GemmShape g{8, 199, 4096, 7168, 0, 0};
  g.groups = 8;
  // ceil(199 / 128) + 8 - 1 = 9 token tiles at most, x 32 weight tiles.
  EXPECT_EQ(ops::gemm_tiles(g, c, false), 9 * 32);
  g.m = 100;  // one token tile holds every row: 8 groups pad 8 tiles at most
  EXPECT_EQ(ops::gemm_tiles(g, c, false), 8 * 32);
  g.m = 1024;
  EXPECT_EQ(ops::gemm_launch_shape(g, c, 132).grid.x, 132u);
  EXPECT_EQ(ops::gemm_launch_shape(g, c, 132).smem_bytes,
            size_t(ops::gemm_smem_bytes(128, c.stages) + 16 + 8 * 8));
  // The pre-passed activations: one batch, a token tile past M's.
  EXPECT_EQ(ops::activation_rows(g, 128), 9 * 128);
  EXPECT_EQ(ops::grouped_gemm_smem_bytes(128, 4, false, 2, 0), ops::gemm_smem_bytes(128, 4));
}

// Without a K split the CTAs are persistent: one per SM at most, whatever
// M; a split launch is a CTA per tile and rank, token tiles in grid.y.
TEST(Nvfp4Config, GemmLaunchShapes) {
  const ops::GemmShape big{3, 1000, 4096, 1024, 0, 0};  // 32 x 63 x 3 tiles at bn16
  const rt::LaunchShape persistent = ops::gemm_launch_shape(big, {16, 8, 1}, 132);
  EXPECT_EQ(persistent.grid.x, 132u);
  EXPECT_EQ(persistent.grid.y * persistent.grid.z, 1u);
  const ops::GemmShape few{1, 128, 1024, 1024, 0, 0};  // 8 tiles
  EXPECT_EQ(ops::gemm_launch_shape(few, {128, 5, 1}, 132).grid.x, 8u);
  const rt::LaunchShape split = ops::gemm_launch_shape(big, {16, 8, 2}, 132);
  EXPECT_EQ(split.grid.x, 64u);
  EXPECT_EQ(split.grid.y, 63u);
  EXPECT_EQ(split.grid.z, 3u);
  EXPECT_EQ(split.cluster.x, 2u);
  EXPECT_EQ(ops::gemm_launch_shape(big, {16, 8, 2, true}, 132, true).grid.x, 128u * 63 * 3);  // dual, l2

  const ops::GemmShape tall{1, 8 * 65536, 128, 64, 0, 0};
  auto check = [&](const GemmConfig& cfg) {
    return ops::check_gemm_launch(tall, cfg, ops::gemm_launch_shape(tall, cfg, 132), 132, false);
  };
  EXPECT_TRUE(check({8, 8, 1}).ok());
  EXPECT_TRUE(check({16, 8, 2}).ok());
  EXPECT_TRUE(check({8, 8, 2, true}).ok());  // through L2: the tiles in grid.x
  const Status st = check({8, 8, 2});
  EXPECT_NE(st.message().find("at most 65535 (grid.y)"), std::string::npos) << st.message();
}

// A K tail: the SMs the split leaves idle take the last stages of every
// tile, balanced against the split's shares; none without idle SMs or with
// too few stages, and a given k_tail config then fails with a clear error.
TEST(Nvfp4Config, GemmKTailBalancesTheIdleSms) {
  // Seed 1, M128 N7168 K16384: 56 tiles x 2 leave 20 SMs, 3 tiles each:
  // 16 tail stages (48, and a stage for each of the two tiles left before
  // the next), 56 for the split's shares instead of 64.
  const ops::GemmKTail seed1 = ops::gemm_k_tail(56, 2, 128, 132);
  EXPECT_EQ(seed1.ctas, 19);
  EXPECT_EQ(seed1.stages, 16);
  EXPECT_EQ(seed1.longest, 56);
  // Dual M512 N3072 K7168 at bn256: 96 tiles, 36 idle SMs taking 3 each.
  const ops::GemmKTail dual = ops::gemm_k_tail(96, 1, 56, 132);
  EXPECT_EQ(dual.ctas, 32);
  EXPECT_EQ(dual.stages, 13);
  EXPECT_EQ(dual.longest, 43);
  // The bisection finds what trying every tail length finds (the first
  // best on ties).
  for (int64_t tiles : {1, 7, 56, 96, 131})
    for (int split : {1, 2, 4, 8})
      for (int64_t k_stages : {2, 3, 9, 16, 56, 128, 1000}) {
        const ops::GemmKTail got = ops::gemm_k_tail(tiles, split, k_stages, 132);
        const int64_t idle = 132 - tiles * split;
        if (idle <= 0 || k_stages < split + 1) {
          EXPECT_EQ(got.ctas, 0);
          continue;
        }
        const int64_t per = (tiles + idle - 1) / idle;
        int64_t best = INT64_MAX, best_t = 0;
        for (int64_t t = 1; t <= k_stages - split; ++t) {
          const int64_t longest = std::max((k_stages - t + split - 1) / split, per * t + per - 1);
          if (longest < best) best = longest, best_t = t;
        }
        EXPECT_EQ(got.stages, best_t) << tiles << " " << split << " " << k_stages;
        EXPECT_EQ(got.longest, best) << tiles << " " << split << " " << k_stages;
      }
  EXPECT_EQ(ops::gemm_k_tail(66, 2, 128, 132).ctas, 0);  // no idle SM
  EXPECT_EQ(ops::gemm_k_tail(56, 2, 2, 132).ctas, 0);    // K under split_k + 1 stages

  const GemmConfig seed = gemm_default_config(128, 7168, 16384, 1, 132);
  EXPECT_TRUE(seed.k_tail && seed.split_k == 2 && seed.partials_through_l2()) << seed.describe();
  EXPECT_EQ(seed.describe(), "bn128 s5 k2 tail");
  EXPECT_FALSE(gemm_default_config(4096, 4096, 4096, 1, 132).k_tail);
  EXPECT_FALSE(gemm_default_config(16, 8192, 8192, 1, 132).k_tail);  // 64 x 2 CTAs: 4 idle
  // Where the split's CTAs keep under 48 stages the meeting in L2 costs more
  // than the tail saves (H100, session 27).
  EXPECT_FALSE(gemm_default_config(128, 7168, 2048, 1, 132).k_tail);
  EXPECT_FALSE(dual_gemm_default_config(256, 3072, 4096, 1, 132).k_tail);
  // (Dual M512 N3072 K7168 took a tail until three warpgroups beat it.)
  EXPECT_FALSE(dual_gemm_default_config(512, 3072, 7168, 1, 132).k_tail);

  const ops::GemmShape seed_shape{1, 128, 7168, 16384, 0, 0};
  const GemmConfig tail{128, 5, 2, false, true};
  const rt::LaunchShape ls = ops::gemm_launch_shape(seed_shape, tail, 132);
  EXPECT_EQ(ls.grid.x, 56u * 2 + 19);
  EXPECT_EQ(ls.cluster.x, 1u);
  EXPECT_TRUE(ops::check_gemm_launch(seed_shape, tail, ls, 132, false).ok());
  const ops::GemmShape wide{1, 128, 8448, 16384, 0, 0};  // 66 tiles x 2: no SM idle
  const Status st = ops::check_gemm_launch(wide, tail, ops::gemm_launch_shape(wide, tail, 132),
                                           132, false);
  EXPECT_NE(st.message().find("k_tail needs SMs the split leaves idle"), std::string::npos)
      << st.message();
}

// The pre-passed activations hold whole token tiles, so that no TMA box of
// the GEMM reaches past them.
TEST(Nvfp4Config, ActivationRowsAreWholeTokenTiles) {
  EXPECT_EQ(ops::activation_rows({1, 160, 4096, 1024, 0, 0}, 128), 256);
  EXPECT_EQ(ops::activation_rows({1, 256, 4096, 1024, 0, 0}, 128), 256);
  EXPECT_EQ(ops::activation_rows({2, 1, 4096, 1024, 0, 0}, 8), 8);
  EXPECT_EQ(ops::activation_rows({1, 1000, 4096, 1024, 0, 0}, 96), 1056);
}

TEST(Nvfp4Config, GemmSpaceCoversEveryTileWidth) {
  for (int bn : gemm_block_n_choices()) {
    const auto space = gemm_config_space();
    EXPECT_TRUE(std::any_of(space.begin(), space.end(),
                            [&](const GemmConfig& c) { return c.block_n == bn; }))
        << bn;
  }
}

}  // namespace
}  // namespace kestrel
