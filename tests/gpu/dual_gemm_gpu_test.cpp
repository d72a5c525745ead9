// NVFP4 dual GEMM (SwiGLU) against the float64 reference: golden cases, the
// seed shapes (sampled), edge shapes, both generators and scale layouts,
// global scales != 1, configurations, poisoned outputs, determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

#include "compare.h"
#include "device_nvfp4.h"
#include "golden.h"
#include "golden_nvfp4.h"
#include "gpu_test.h"
#include "kestrel/gemm.h"
#include "random.h"
#include "host_float.h"
#include "sampled_check.h"

namespace kestrel {
namespace {

using testing::DeviceBuffer;
using testing::DeviceNvfp4;

struct DualCase {
  int64_t m, n, k;
  bool gpumode;
  ScaleLayout a_layout, b_layout;
  DType out = DType::kF16;
  bool packed = false;  // B1 and B2 through pack_gemm_weights
};

std::string describe(const DualCase& c) {
  return "M" + std::to_string(c.m) + " N" + std::to_string(c.n) + " K" + std::to_string(c.k) +
         (c.gpumode ? " gpumode" : " realistic") + " A:" + scale_layout_name(c.a_layout) +
         " B:" + scale_layout_name(c.b_layout) + " " + dtype_name(c.out) +
         (c.packed ? " packed" : "");
}

struct Operands {
  ref::HostNvfp4 a, b1, b2;
};

Operands make_operands(const DualCase& c, uint64_t seed) {
  Operands o;
  if (c.gpumode) {
    const auto kind = testing::GpuModeData::kDual;
    o.a = testing::gpumode_nvfp4(kind, 1, c.m, c.k, seed);
    o.b1 = testing::gpumode_nvfp4(kind, 1, c.n, c.k, seed + 1);
    o.b2 = testing::gpumode_nvfp4(kind, 1, c.n, c.k, seed + 2);
    o.b2.global_scale = 0.75f;
  } else {
    o.a = testing::realistic_nvfp4(1, c.m, c.k, seed);
    o.b1 = testing::realistic_nvfp4(1, c.n, c.k, seed + 1);
    o.b2 = testing::realistic_nvfp4(1, c.n, c.k, seed + 2);
  }
  o.a = testing::with_layout(o.a, c.a_layout);
  o.b1 = testing::with_layout(o.b1, c.b_layout);
  o.b2 = testing::with_layout(o.b2, c.b_layout);
  return o;
}

std::vector<double> run_dual(const DualCase& c, const Operands& o, const GemmConfig* cfg,
                             Status* st) {
  DeviceNvfp4 a(o.a), b1(o.b1), b2(o.b2);
  DeviceBuffer out(size_t(c.m * c.n * 2));
  out.poison();
  const TensorView cv = TensorView::dense(out.get(), c.out, {c.m, c.n});
  if (c.packed) {
    const int64_t bytes = gemm_packed_weight_bytes(c.n, c.k, 1);
    DeviceBuffer p1{size_t(bytes)}, p2{size_t(bytes)};
    p1.poison();
    p2.poison();
    GemmPackedWeights w1, w2;
    *st = pack_gemm_weights(b1.view, p1.get(), bytes, nullptr, &w1);
    if (st->ok()) *st = pack_gemm_weights(b2.view, p2.get(), bytes, nullptr, &w2);
    if (st->ok()) *st = dual_gemm_nvfp4(a.view, w1, w2, cv, nullptr, cfg);
  } else {
    *st = dual_gemm_nvfp4(a.view, b1.view, b2.view, cv, nullptr, cfg);
  }
  if (!st->ok()) return {};
  const auto bits = out.download<uint16_t>();
  return c.out == DType::kF16 ? testing::fp16_to_doubles(bits) : testing::bf16_to_doubles(bits);
}

double reference_at(const Operands& o, int64_t n_cols, int64_t i) {
  const int64_t m = i / n_cols, n = i % n_cols;
  double g = 0, u = 0;
  for (int64_t k = 0; k < o.a.k; ++k) {
    const double x = o.a.value(0, m, k);
    g += x * o.b1.value(0, n, k);
    u += x * o.b2.value(0, n, k);
  }
  return g / (1.0 + std::exp(-g)) * u;
}

void check_case(const DualCase& c, const GemmConfig* cfg = nullptr) {
  const Operands o = make_operands(c, 900 + c.m * 3 + c.n + c.k);
  Status st;
  const auto got = run_dual(c, o, cfg, &st);
  ASSERT_TRUE(st.ok()) << describe(c) << ": " << st.to_string();
  const auto idx = testing::sample_positions(1, c.m, c.n, 2 * c.k);
  std::vector<double> want, sub;
  if (int64_t(idx.size()) == c.m * c.n) {
    want = ref::dual_gemm_nvfp4(o.a, o.b1, o.b2);
    sub = got;
  } else {
    for (int64_t i : idx) {
      want.push_back(reference_at(o, c.n, i));
      sub.push_back(got[size_t(i)]);
    }
  }
  const auto rep = c.out == DType::kF16 ? testing::compare_fp16(sub, want)
                                        : testing::compare_bf16(sub, want);
  EXPECT_TRUE(rep.pass) << describe(c) << (cfg ? " " + cfg->describe() : "") << ": "
                        << rep.to_string();
  const auto again = run_dual(c, o, cfg, &st);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(0, std::memcmp(got.data(), again.data(), got.size() * sizeof(double)))
      << describe(c) << ": results differ between runs";
}

class DualGemmGpu : public ::testing::TestWithParam<DualCase> {};

TEST_P(DualGemmGpu, MatchesReference) {
  KESTREL_REQUIRE_GPU();
  check_case(GetParam());
}

std::vector<DualCase> shapes() {
  using L = ScaleLayout;
  std::vector<DualCase> v;
  for (auto [m, n, k] : {std::tuple{256, 4096, 7168}, {512, 4096, 7168}, {256, 3072, 4096},
                         {512, 3072, 7168}})
    v.push_back({m, n, k, (m + n) % 3 == 0, L::kLinear, L::kLinear});
  for (int64_t m : {1, 8, 77, 128, 300})
    for (int64_t n : {128, 200})
      for (int64_t k : {64, 1024}) v.push_back({m, n, k, (m + k) % 2 == 0, L::kLinear, L::kBlocked});
  v.push_back({77, 200, 512, false, L::kBlocked, L::kBlocked, DType::kBF16});
  // M160: one tile of 192 tokens and a cluster split (not two of 128).
  for (bool packed : {false, true})
    v.push_back({160, 200, 2048, packed, L::kLinear, L::kLinear, DType::kF16, packed});
  // Packed weights: a seed and edge shapes (N off the 64-row block, K of
  // half a stage).
  v.push_back({256, 3072, 4096, false, L::kLinear, L::kLinear, DType::kF16, true});
  for (int64_t m : {1, 77, 300})
    for (int64_t n : {72, 200})
      for (int64_t k : {64, 1024})
        v.push_back({m, n, k, (m + k) % 2 == 1, L::kBlocked, L::kLinear, DType::kBF16, true});
  // Packed tiles of <= 128 tokens without a split run the loop with two
  // wgmma groups in flight: odd stage counts (3, 15), and more tiles than
  // an H100 has SMs (210 at M128 N13440), so persistent CTAs take several
  // (nvfp4_config_test checks that the heuristic picks that loop here).
  v.push_back({128, 13440, 384, false, L::kLinear, L::kLinear, DType::kBF16, true});
  v.push_back({77, 200, 1920, true, L::kBlocked, L::kLinear, DType::kF16, true});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, DualGemmGpu, ::testing::ValuesIn(shapes()),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(DualGemmGpuConfigs, TileWidthsAndSplits) {
  KESTREL_REQUIRE_GPU();
  const DualCase c{200, 328, 2048 + 64, false, ScaleLayout::kLinear, ScaleLayout::kLinear};
  for (GemmConfig cfg : {GemmConfig{16, 8, 1}, GemmConfig{64, 6, 2}, GemmConfig{128, 4, 1},
                         GemmConfig{128, 4, 4}, GemmConfig{256, 3, 1}, GemmConfig{24, 8, 8}}) {
    SCOPED_TRACE(cfg.describe());
    check_case(c, &cfg);
  }
  for (GemmConfig l2 : {GemmConfig{128, 4, 4}, GemmConfig{256, 3, 2}}) {
    l2.split_l2 = true;
    SCOPED_TRACE(l2.describe());
    check_case(c, &l2);
  }
  for (GemmConfig tail : {GemmConfig{128, 4, 1}, GemmConfig{256, 3, 2}, GemmConfig{24, 8, 2}}) {
    tail.k_tail = true;
    SCOPED_TRACE(tail.describe());
    check_case(c, &tail);
  }
}

// K tails over many tiles: on 132 SMs, 96 tiles of 64 columns leave 36
// CTAs, each the last stages of 3 tiles (the dual M512 N3072 seed's
// geometry at a smaller K), row-major and packed weights.
TEST(DualGemmGpuConfigs, KTailTakesTheLastStagesOfManyTiles) {
  KESTREL_REQUIRE_GPU();
  for (bool packed : {false, true}) {
    const DualCase c{40,          6144 - 8, 2048, packed, ScaleLayout::kBlocked,
                     ScaleLayout::kLinear, DType::kBF16, packed};
    for (GemmConfig cfg : {GemmConfig{48, 4, 1, false, true}, GemmConfig{48, 2, 1, false, true}}) {
      SCOPED_TRACE(cfg.describe());
      check_case(c, &cfg);
    }
  }
}

TEST(DualGemmGpuConfigs, PackedWeightsUnderEveryLaunchKind) {
  KESTREL_REQUIRE_GPU();
  const DualCase c{200,         328, 2048 + 64, false, ScaleLayout::kLinear, ScaleLayout::kLinear,
                   DType::kF16, true};
  for (GemmConfig cfg :
       {GemmConfig{16, 8, 1}, GemmConfig{128, 4, 4}, GemmConfig{256, 3, 2, true},
        GemmConfig{128, 4, 1, false, true}}) {
    SCOPED_TRACE(cfg.describe());
    check_case(c, &cfg);
  }
}

// Persistent CTAs (no K split) over ~8 tiles each, 3-stage tiles against
// rings of 2 and 8; C by TMA stores, or (N = 1004: rows not 16-byte
// aligned) by the threads' stores.
TEST(DualGemmGpuConfigs, PersistentCtasTakeManyTiles) {
  KESTREL_REQUIRE_GPU();
  for (int64_t n : {1000, 1004}) {
    const DualCase c{1000, n, 320, true, ScaleLayout::kBlocked, ScaleLayout::kBlocked};
    for (const GemmConfig& cfg : {GemmConfig{16, 2, 1}, GemmConfig{16, 8, 1}}) {
      SCOPED_TRACE(cfg.describe());
      check_case(c, &cfg);
    }
  }
}

// Three consumer warpgroups (tiles of 96 columns: a block and a half of each
// packed weight, odd tiles starting mid-block, the last tile's next block past
// the packed rows at N = 200 and 1004), one tile per CTA and persistent CTAs
// over many tiles (M600 N1004 bn16: 418 tiles), and the smallest K; row-major
// and packed weights (two tests, for the sanitizers' time).
void check_three_consumer_groups(bool packed) {
  using L = ScaleLayout;
  auto three = [](int bn, int stages) {
    GemmConfig c{bn, stages, 1};
    c.consumer_groups = 3;
    return c;
  };
  for (DualCase c : {DualCase{200, 328, 2048 + 64, false, L::kLinear, L::kLinear},
                     DualCase{77, 200, 1920, true, L::kBlocked, L::kLinear, DType::kBF16},
                     DualCase{1, 72, 64, false, L::kLinear, L::kBlocked},
                     DualCase{600, 1004, 320, true, L::kBlocked, L::kLinear}}) {
    c.packed = packed;
    for (const GemmConfig& cfg : {three(128, 4), three(96, 3), three(16, 2)}) {
      SCOPED_TRACE(cfg.describe());
      check_case(c, &cfg);
    }
  }
}

TEST(DualGemmGpuConfigs, ThreeConsumerWarpgroupsRowMajor) {
  KESTREL_REQUIRE_GPU();
  check_three_consumer_groups(false);
}

TEST(DualGemmGpuConfigs, ThreeConsumerWarpgroupsPacked) {
  KESTREL_REQUIRE_GPU();
  check_three_consumer_groups(true);
}

// The seed shape three warpgroups are for (the heuristic's pick there).
TEST(DualGemmGpuSeed, ThreeConsumerWarpgroups) {
  KESTREL_REQUIRE_GPU();
  for (bool packed : {false, true}) {
    const DualCase c{512,          3072,  7168, false, ScaleLayout::kLinear, ScaleLayout::kLinear,
                     DType::kBF16, packed};
    ASSERT_EQ(dual_gemm_default_config(512, 3072, 7168, 1, 132).consumer_groups, 3);
    check_case(c);
  }
}

TEST(DualGemmGpuGolden, MatchesGoldenCases) {
  KESTREL_REQUIRE_GPU();
  if (!testing::golden_available()) GTEST_SKIP() << "skipped: golden vectors not found";
  for (const char* name : {"dual_1x128x256", "dual_77x200x512"}) {
    const auto g = testing::GoldenCase::load(name);
    Operands o{testing::golden_nvfp4(g, "a", "sfa"), testing::golden_nvfp4(g, "b1", "sfb1"),
               testing::golden_nvfp4(g, "b2", "sfb2")};
    const DualCase c{o.a.rows, o.b1.rows, o.a.k, true, ScaleLayout::kLinear, ScaleLayout::kLinear};
    Status st;
    const auto got = run_dual(c, o, nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.to_string();
    const auto rep = testing::compare_fp16(got, g.doubles("c_f64"));
    EXPECT_TRUE(rep.pass) << name << ": " << rep.to_string();
  }
}

TEST(DualGemmArgs, BadArgumentsNameTheRule) {
  alignas(16) uint8_t dummy[4096];
  Nvfp4View a{TensorView::dense(dummy, DType::kE2M1x2, {4, 32}),
              TensorView::dense(dummy, DType::kE4M3, {4, 4}), ScaleLayout::kLinear, 1.0f};
  Nvfp4View b{TensorView::dense(dummy, DType::kE2M1x2, {8, 32}),
              TensorView::dense(dummy, DType::kE4M3, {8, 4}), ScaleLayout::kLinear, 1.0f};
  Nvfp4View b_short{TensorView::dense(dummy, DType::kE2M1x2, {4, 32}),
                    TensorView::dense(dummy, DType::kE4M3, {4, 4}), ScaleLayout::kLinear, 1.0f};
  const auto c = TensorView::dense(dummy, DType::kF16, {4, 8});
  Status st = dual_gemm_nvfp4(a, b, b_short, c, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("c: shape"), std::string::npos) << st.message();
  Nvfp4View b_blk = b;
  b_blk.layout = ScaleLayout::kBlocked;
  b_blk.scales = TensorView::dense(dummy, DType::kE4M3, {blocked_scale_bytes(8, 64, 1)});
  st = dual_gemm_nvfp4(a, b, b_blk, c, nullptr);
  EXPECT_NE(st.message().find("b2: scale layout"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace kestrel
