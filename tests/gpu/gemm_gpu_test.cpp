// NVFP4 GEMM against the float64 reference: golden cases, the seed shapes,
// edge shapes (M = 1, sizes off the tile, the smallest K), both generators and
// scale layouts, global scales != 1, bf16 output, every configuration family,
// poisoned outputs, determinism. Large shapes are checked on a sample of
// elements (full rows and columns at the edges plus random ones).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <tuple>

#include "compare.h"
#include "device_nvfp4.h"
#include "golden.h"
#include "golden_nvfp4.h"
#include "gpu_test.h"
#include "kestrel/gemm.h"
#include "ops/gemm_common.h"
#include "ops/tuning_table.h"
#include "random.h"
#include "reference/binary16.h"
#include "sampled_check.h"
#include "scoped_env.h"

namespace kestrel {
namespace {

using testing::DeviceBuffer;
using testing::DeviceNvfp4;

struct GemmCase {
  int64_t m, n, k, l;
  bool gpumode;
  ScaleLayout a_layout, b_layout;
  DType out = DType::kF16;
  int64_t c_row_pad = 0;  // extra elements per row of C
  int64_t a_row_gap = 0;  // extra bytes between rows of A's values
  bool packed = false;    // B through pack_gemm_weights
};

std::string describe(const GemmCase& c) {
  return "M" + std::to_string(c.m) + " N" + std::to_string(c.n) + " K" + std::to_string(c.k) +
         " L" + std::to_string(c.l) + (c.gpumode ? " gpumode" : " realistic") +
         " A:" + scale_layout_name(c.a_layout) + " B:" + scale_layout_name(c.b_layout) + " " +
         dtype_name(c.out) + " pad" + std::to_string(c.c_row_pad) + " gap" +
         std::to_string(c.a_row_gap) + (c.packed ? " packed" : "");
}

struct Operands {
  ref::HostNvfp4 a, b;
};

Operands make_operands(const GemmCase& c, uint64_t seed) {
  Operands o;
  if (c.gpumode) {
    o.a = testing::gpumode_nvfp4(testing::GpuModeData::kGemm, c.l, c.m, c.k, seed);
    o.b = testing::gpumode_nvfp4(testing::GpuModeData::kGemm, c.l, c.n, c.k, seed + 1);
    o.a.global_scale = 0.5f;
    o.b.global_scale = 2.0f;
  } else {
    o.a = testing::realistic_nvfp4(c.l, c.m, c.k, seed);
    o.b = testing::realistic_nvfp4(c.l, c.n, c.k, seed + 1);
  }
  o.a = testing::with_layout(o.a, c.a_layout);
  o.b = testing::with_layout(o.b, c.b_layout);
  return o;
}

// Runs the GEMM on poisoned output; returns C as doubles [L][M][N].
std::vector<double> run_gemm(const GemmCase& c, const Operands& o, const GemmConfig* cfg,
                             Status* st) {
  DeviceNvfp4 a(o.a, c.a_row_gap), b(o.b);
  const int64_t row = c.n + c.c_row_pad;
  DeviceBuffer out(size_t(c.l * c.m * row * 2));
  out.poison();
  const TensorView cv = TensorView::strided(out.get(), c.out, {c.l, c.m, c.n}, {c.m * row, row, 1});
  if (c.packed) {
    // Poisoned too: the pack must write its padding.
    const int64_t bytes = gemm_packed_weight_bytes(c.n, c.k, c.l);
    DeviceBuffer packed{size_t(bytes)};
    packed.poison();
    // One batch: the weights as rank-2 views.
    Nvfp4View bv = b.view;
    if (c.l == 1) {
      bv.values = TensorView::strided(b.view.values.data, DType::kE2M1x2, {c.n, c.k / 2},
                                      {b.view.values.stride[1], 1});
      if (bv.layout == ScaleLayout::kLinear)
        bv.scales = TensorView::dense(b.view.scales.data, DType::kE4M3, {c.n, c.k / 16});
    }
    GemmPackedWeights pw;
    *st = pack_gemm_weights(bv, packed.get(), bytes, nullptr, &pw);
    if (st->ok()) *st = gemm_nvfp4(a.view, pw, cv, nullptr, cfg);
  } else {
    *st = gemm_nvfp4(a.view, b.view, cv, nullptr, cfg);
  }
  if (!st->ok()) return {};
  const auto bits = out.download<uint16_t>();
  std::vector<double> v(size_t(c.l * c.m * c.n));
  for (int64_t r = 0; r < c.l * c.m; ++r)
    for (int64_t j = 0; j < c.n; ++j) {
      const uint16_t b16 = bits[size_t(r * row + j)];
      v[size_t(r * c.n + j)] = c.out == DType::kF16 ? ref::fp16_value(b16) : ref::bf16_value(b16);
    }
  return v;
}

double reference_at(const Operands& o, const GemmCase& c, int64_t i) {
  const int64_t l = i / (c.m * c.n), m = i / c.n % c.m, n = i % c.n;
  double s = 0;
  for (int64_t k = 0; k < c.k; ++k) s += o.a.value(l, m, k) * o.b.value(l, n, k);
  return s;
}

void check_case(const GemmCase& c, const GemmConfig* cfg = nullptr) {
  const Operands o = make_operands(c, 500 + c.m * 13 + c.n * 7 + c.k);
  Status st;
  const auto got = run_gemm(c, o, cfg, &st);
  ASSERT_TRUE(st.ok()) << describe(c) << ": " << st.to_string();
  const auto idx = testing::sample_positions(c.l, c.m, c.n, c.k);
  std::vector<double> want, sub;
  if (int64_t(idx.size()) == c.l * c.m * c.n) {
    want = ref::gemm_nvfp4(o.a, o.b);
    sub = got;
  } else {
    for (int64_t i : idx) {
      want.push_back(reference_at(o, c, i));
      sub.push_back(got[size_t(i)]);
    }
  }
  const auto rep =
      c.out == DType::kF16 ? testing::compare_fp16(sub, want) : testing::compare_bf16(sub, want);
  EXPECT_TRUE(rep.pass) << describe(c) << (cfg ? " " + cfg->describe() : "") << ": "
                        << rep.to_string();
  const auto again = run_gemm(c, o, cfg, &st);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(0, std::memcmp(got.data(), again.data(), got.size() * sizeof(double)))
      << describe(c) << ": results differ between runs";
}

class GemmGpu : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmGpu, MatchesReference) {
  KESTREL_REQUIRE_GPU();
  check_case(GetParam());
}

std::vector<GemmCase> shapes() {
  using L = ScaleLayout;
  std::vector<GemmCase> v;
  // Seed shapes.
  for (auto [n, k] : {std::tuple{7168, 16384}, {4096, 7168}, {7168, 2048}}) {
    v.push_back({128, n, k, 1, false, L::kLinear, L::kLinear});
    v.push_back({128, n, k, 1, true, L::kBlocked, L::kBlocked});
  }
  // Edge shapes: M, N off the tiles, K from the smallest legal.
  for (int64_t m : {1, 8, 77, 128, 256, 512, 1000})
    for (int64_t n : {128, 200, 4096})
      for (int64_t k : {64, 1024, 4160}) {
        if (m * n * k > (int64_t(1) << 31)) continue;
        v.push_back({m, n, k, 1, (m + n + k) % 2 == 0, L::kLinear, L::kBlocked});
      }
  v.push_back({4096, 7168, 1024, 1, false, L::kBlocked, L::kLinear});
  v.push_back({77, 200, 512, 3, false, L::kLinear, L::kLinear, DType::kBF16, 8});
  // A's rows 4-byte aligned only (the pre-pass's 4-byte loads), or 16-byte aligned and strided.
  v.push_back({77, 200, 512 + 64, 3, false, L::kLinear, L::kLinear, DType::kF16, 0, 4});
  v.push_back({130, 328, 1024, 2, true, L::kBlocked, L::kLinear, DType::kF16, 0, 4});
  v.push_back({77, 200, 512, 3, false, L::kBlocked, L::kLinear, DType::kF16, 0, 48});
  v.push_back({300, 4096, 16384, 1, true, L::kLinear, L::kLinear, DType::kBF16});
  // Decode batches: M = 2..4 run the register GEMV at their token count,
  // M = 5..8 with the tokens as its mma columns. N off the GEMV's 128-row tile, K whole
  // or cut into the GEMV's items (4160: 9 chunks, the last one part),
  // batches, padded C rows, A rows 4 and 48 bytes apart, both layouts.
  for (int64_t m : {2, 3, 4, 5, 8})
    for (int64_t n : {200, 4096})
      for (int64_t k : {64, 1024, 4160})
        v.push_back({m, n, k, 1, (m + n + k) % 2 == 1, (m + k) % 2 ? L::kBlocked : L::kLinear,
                     (n / 8 + m) % 2 ? L::kBlocked : L::kLinear});
  v.push_back({2, 200, 8192, 3, false, L::kLinear, L::kBlocked, DType::kBF16, 8, 48});
  v.push_back({2, 328, 4096 + 64, 2, true, L::kBlocked, L::kLinear, DType::kF16, 0, 4});
  v.push_back({2, 7168, 16384, 1, false, L::kLinear, L::kLinear, DType::kBF16});
  // From 32 Mi weight values the register GEMV streams A through its cp.async ring.
  v.push_back({2, 4104, 8192, 1, false, L::kLinear, L::kBlocked, DType::kBF16});
  v.push_back({2, 2056, 8192, 2, true, L::kBlocked, L::kLinear});
  // Three tokens there take two groups in flight through the ring; four, on
  // rows of K >= 8192, run as a column tile of 8 tokens (also below 32 Mi).
  v.push_back({3, 4104, 8192, 1, false, L::kBlocked, L::kLinear, DType::kBF16});
  v.push_back({3, 2056, 8192, 2, true, L::kLinear, L::kBlocked, DType::kF16, 8});
  v.push_back({4, 4104, 8192, 1, false, L::kLinear, L::kLinear});
  v.push_back({4, 200, 8192 + 64, 2, true, L::kBlocked, L::kBlocked, DType::kBF16, 8, 48});
  // Five to sixteen tokens: the tokens as the register GEMV's mma columns
  // (column tiles of 8, the rows past M zero), from the smallest legal K.
  v.push_back({16, 4104, 8192, 1, false, L::kBlocked, L::kLinear, DType::kBF16});
  v.push_back({9, 200, 4160, 3, true, L::kLinear, L::kBlocked, DType::kF16, 8, 48});
  v.push_back({16, 328, 64, 2, false, L::kLinear, L::kLinear});
  v.push_back({12, 2056, 8192, 2, true, L::kBlocked, L::kBlocked, DType::kF16, 0, 4});
  // Few rows of long K: the register GEMV would split K over a cluster,
  // which it takes at one token only, so M = 2 runs the GEMM kernel; M = 3
  // and 4 with batches and padded rows run the register GEMV.
  v.push_back({2, 200, 32768, 1, true, L::kBlocked, L::kLinear});
  v.push_back({7, 200, 8192, 3, false, L::kLinear, L::kBlocked, DType::kBF16, 8, 48});
  v.push_back({3, 200, 8192, 3, false, L::kBlocked, L::kLinear, DType::kBF16, 8, 48});
  v.push_back({4, 328, 4096 + 64, 2, true, L::kLinear, L::kBlocked, DType::kF16, 0, 4});
  // Packed weights: a seed, edge shapes (M = 1 runs the GEMM kernel, N off
  // the 128-row tile and off the 64-row block, K of half a stage), batches,
  // both scale layouts.
  v.push_back({128, 4096, 7168, 1, false, L::kLinear, L::kLinear, DType::kF16, 0, 0, true});
  for (int64_t m : {1, 8, 77, 256})
    for (int64_t n : {72, 200, 4096})
      for (int64_t k : {64, 1024, 4160})
        v.push_back({m, n, k, 1, (m + n + k) % 2 == 1, L::kLinear,
                     (m + k) % 2 ? L::kBlocked : L::kLinear, DType::kF16, 0, 0, true});
  v.push_back({77, 200, 512, 3, false, L::kBlocked, L::kBlocked, DType::kBF16, 8, 0, true});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmGpu, ::testing::ValuesIn(shapes()),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(GemmGpuConfigs, EveryConfigFamilyMatchesReference) {
  KESTREL_REQUIRE_GPU();
  for (int64_t m : {1, 40, 200}) {
    const GemmCase c{m, 328, 2048 + 64, 1, false, ScaleLayout::kLinear, ScaleLayout::kLinear};
    std::map<int, int> deepest;  // block_n -> most stages that fit
    for (const GemmConfig& cfg : gemm_config_space())
      deepest[cfg.block_n] = std::max(deepest[cfg.block_n], cfg.stages);
    for (const GemmConfig& cfg : gemm_config_space()) {
      // Every tile width at its deepest pipeline; every split on two widths.
      if (cfg.stages != deepest[cfg.block_n]) continue;
      if (cfg.split_k != 1 && cfg.block_n != 16 && cfg.block_n != 128) continue;
      // K tails on splits of 1 and 2 (wider splits leave no SM idle here).
      if (cfg.k_tail && cfg.split_k > 2) continue;
      SCOPED_TRACE(cfg.describe());
      check_case(c, &cfg);
      if (cfg.split_k == 1 || cfg.k_tail) continue;
      GemmConfig l2 = cfg;  // the same split through L2 instead of a cluster
      l2.split_l2 = true;
      SCOPED_TRACE(l2.describe());
      check_case(c, &l2);
    }
  }
}

// A split wider than K's stages leaves parts with no stage at all (split 8
// of one or two 128-value stages): they load nothing, add zeros, and still
// meet their cluster or L2 partners.
TEST(GemmGpuConfigs, SplitPartsWithoutStagesMatchReference) {
  KESTREL_REQUIRE_GPU();
  for (int64_t k : {64, 256}) {
    const GemmCase c{40, 328, k, 1, false, ScaleLayout::kLinear, ScaleLayout::kLinear};
    for (bool l2 : {false, true}) {
      GemmConfig cfg{128, 4, 8};
      cfg.split_l2 = l2;
      SCOPED_TRACE(cfg.describe() + " K " + std::to_string(k));
      check_case(c, &cfg);
    }
  }
}

// Without a K split the CTAs are persistent: here each takes ~11 tiles of a
// batched, ragged problem, with tiles of 3 stages against rings of 2, 8
// and 3. C leaves by TMA stores, or (rows of 1001 elements, not 16-byte
// aligned) by the threads' stores.
TEST(GemmGpuConfigs, PersistentCtasTakeManyTiles) {
  KESTREL_REQUIRE_GPU();
  using L = ScaleLayout;
  for (const GemmCase& c :
       {GemmCase{1000, 1000, 320, 3, true, L::kBlocked, L::kLinear},
        GemmCase{1000, 1000, 320, 3, false, L::kLinear, L::kLinear, DType::kBF16, 1}})
    for (const GemmConfig& cfg :
         {GemmConfig{16, 2, 1}, GemmConfig{32, 8, 1}, GemmConfig{256, 3, 1}}) {
      SCOPED_TRACE(cfg.describe());
      check_case(c, &cfg);
    }
}

// K tails: the CTAs a launch leaves idle take the last stages of several
// tiles each, their parts meeting the split's in L2 (on 132 SMs: 100 tiles
// leave 32 CTAs the last 4 of 20 stages of 4 tiles each; 50 tiles split 2
// leave 25 taking 2 tiles; 50 tiles unsplit, one each), tails longer than
// the ring and shorter, packed and row-major weights, M = 1 and ragged
// shapes, fp16 and bf16. check_case runs each twice: the sums' order is
// fixed whichever part arrives last.
TEST(GemmGpuConfigs, KTailTakesTheLastStagesOfManyTiles) {
  KESTREL_REQUIRE_GPU();
  using L = ScaleLayout;
  const std::pair<GemmCase, std::vector<GemmConfig>> cases[] = {
      {GemmCase{8, 12800, 2560, 1, false, L::kLinear, L::kLinear},
       {GemmConfig{8, 8, 1, false, true}, GemmConfig{8, 2, 1, false, true}}},
      {GemmCase{1, 6400 - 40, 2560, 1, true, L::kLinear, L::kBlocked, DType::kBF16},
       {GemmConfig{8, 8, 2, false, true}}},
      {GemmCase{77, 6400, 2560 + 64, 1, false, L::kBlocked, L::kLinear, DType::kF16, 8, 0, true},
       {GemmConfig{96, 4, 2, false, true}, GemmConfig{96, 4, 1, false, true}}},
  };
  for (const auto& [c, cfgs] : cases)
    for (const GemmConfig& cfg : cfgs) {
      SCOPED_TRACE(cfg.describe());
      check_case(c, &cfg);
    }
}

// A K tail where no SM is left idle is refused with the rule, not run.
TEST(GemmGpuConfigs, KTailWithoutIdleSmsIsAnError) {
  KESTREL_REQUIRE_GPU();
  const GemmCase c{8, 128 * 300, 256, 1, false, ScaleLayout::kLinear, ScaleLayout::kLinear};
  const Operands o = make_operands(c, 9);
  const GemmConfig cfg{8, 8, 1, false, true};
  Status st;
  run_gemm(c, o, &cfg, &st);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("k_tail needs SMs the split leaves idle"), std::string::npos)
      << st.message();
}

// A GEMM of the tuning table's exact shape on this GPU runs the entry's
// configuration (and another M the heuristic's), and matches the reference.
TEST(GemmGpuConfigs, TheTuningTablesEntryRunsItsShape) {
  KESTREL_REQUIRE_GPU();
  const rt::DeviceInfo* dev = nullptr;
  ASSERT_TRUE(rt::current_device(&dev).ok());
  const GemmCase c{77, 256, 512, 1, false, ScaleLayout::kLinear, ScaleLayout::kLinear};
  const GemmConfig tuned{128, 2, 1};
  ops::TuningTable table;
  ops::GemmTuned e;
  e.key = {dev->name, false, c.m, c.n, c.k, c.l, false, false};
  e.config = tuned;
  table.put(e);
  const std::string path = ::testing::TempDir() + "kestrel_gemm_tuning_gpu_test.json";
  std::ofstream(path) << table.to_json();
  const testing::ScopedEnv env("KESTREL_TUNING_TABLE", path);
  auto resolved = [&](int64_t m) {
    const ops::GemmShape shape{c.l, m, c.n, c.k, m * c.n, c.n};
    GemmConfig cfg;
    const Status s = ops::resolve_gemm_config(
        nullptr, gemm_default_config(m, c.n, c.k, c.l, dev->sm_count), shape, c.out, false, false,
        false, &cfg);
    EXPECT_TRUE(s.ok()) << s.to_string();
    return cfg.describe();
  };
  EXPECT_EQ(resolved(c.m), tuned.describe());
  EXPECT_NE(resolved(c.m + 1), tuned.describe());  // bn96 is the heuristic's tile at 78 tokens
  check_case(c);
  std::remove(path.c_str());
}

// Packed weights under every kind of launch: persistent tiles, K splits over
// a cluster and through L2, a K tail, the narrowest and widest token tiles.
TEST(GemmGpuConfigs, PackedWeightsUnderEveryLaunchKind) {
  KESTREL_REQUIRE_GPU();
  using L = ScaleLayout;
  const GemmCase c{200,         328,          2048 + 64, 2, false, L::kLinear,
                   L::kBlocked, DType::kBF16, 0,         0, true};
  for (const GemmConfig& cfg :
       {GemmConfig{8, 8, 1}, GemmConfig{16, 6, 2}, GemmConfig{128, 5, 4, true},
        GemmConfig{256, 3, 1}, GemmConfig{32, 8, 1}, GemmConfig{32, 8, 1, false, true}}) {
    SCOPED_TRACE(cfg.describe());
    check_case(c, &cfg);
  }
}

// The packed bytes, values and scale codes, are the documented order
// (ref::pack_gemm_weights), byte for byte, padding included, from both
// scale layouts.
TEST(GemmPackedWeights, PackMatchesReferenceOrder) {
  KESTREL_REQUIRE_GPU();
  for (auto [n, k, l] :
       {std::tuple<int64_t, int64_t, int64_t>{72, 64, 1}, {200, 4160, 3}, {256, 1024, 1}}) {
    const ref::HostNvfp4 w =
        testing::with_layout(testing::realistic_nvfp4(l, n, k, 77 + n + k),
                             n == 200 ? ScaleLayout::kBlocked : ScaleLayout::kLinear);
    DeviceNvfp4 dw(w, 32);  // strided rows
    const int64_t bytes = gemm_packed_weight_bytes(n, k, l);
    DeviceBuffer packed{size_t(bytes)};
    packed.poison();
    GemmPackedWeights pw;
    const Status st = pack_gemm_weights(dw.view, packed.get(), bytes, nullptr, &pw);
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(pw.n, n);
    EXPECT_EQ(pw.k, k);
    EXPECT_EQ(pw.batches, l);
    EXPECT_TRUE(packed.download<uint8_t>() == ref::pack_gemm_weights(w))
        << "N" << n << " K" << k << " L" << l;
  }
}

TEST(GemmPackedWeights, BadArgumentsNameTheRule) {
  alignas(16) uint8_t dummy[4096];
  const Nvfp4View w{TensorView::dense(dummy, DType::kE2M1x2, {8, 32}),
                    TensorView::dense(dummy, DType::kE4M3, {8, 4}), ScaleLayout::kLinear, 1.0f};
  GemmPackedWeights pw;
  const int64_t need = gemm_packed_weight_bytes(8, 64, 1);
  EXPECT_EQ(need, 2 * (64 * 64 + 64 * 8));  // two blocks of 64 rows: values, scale codes
  Status st = pack_gemm_weights(w, dummy, need - 16, nullptr, &pw);
  EXPECT_NE(st.message().find("out_bytes: must be at least"), std::string::npos) << st.message();
  st = pack_gemm_weights(w, dummy + 8, need, nullptr, &pw);
  EXPECT_NE(st.message().find("out: must be 16-byte aligned"), std::string::npos) << st.message();
  st = pack_gemm_weights(w, dummy, need, nullptr, nullptr);
  EXPECT_NE(st.message().find("packed: must not be null"), std::string::npos) << st.message();
  const Nvfp4View w48{TensorView::dense(dummy, DType::kE2M1x2, {8, 24}),
                      TensorView::dense(dummy, DType::kE4M3, {8, 3}), ScaleLayout::kLinear, 1.0f};
  st = pack_gemm_weights(w48, dummy, need, nullptr, &pw);
  EXPECT_NE(st.message().find("K: must be a multiple of 64"), std::string::npos) << st.message();
  // A GemmPackedWeights is checked like the weights it came from.
  const Nvfp4View a{TensorView::dense(dummy, DType::kE2M1x2, {4, 32}),
                    TensorView::dense(dummy, DType::kE4M3, {4, 4}), ScaleLayout::kLinear, 1.0f};
  const TensorView c = TensorView::dense(dummy, DType::kF16, {4, 8});
  GemmPackedWeights bad;
  bad.batches = 1;
  bad.n = 8;
  bad.k = 64;
  st = gemm_nvfp4(a, bad, c, nullptr);
  EXPECT_NE(st.message().find("b.values: data is null"), std::string::npos) << st.message();
  bad.values = dummy;
  bad.k = 128;
  st = gemm_nvfp4(a, bad, c, nullptr);
  EXPECT_NE(st.message().find("b: K must equal a's K"), std::string::npos) << st.message();
  bad.k = 64;
  bad.values = dummy + 8;
  st = dual_gemm_nvfp4(a, bad, bad, c, nullptr);
  EXPECT_NE(st.message().find("b.values: data must be 16-byte aligned"), std::string::npos)
      << st.message();
}

TEST(GemmGpuGolden, MatchesGoldenCases) {
  KESTREL_REQUIRE_GPU();
  if (!testing::golden_available()) GTEST_SKIP() << "skipped: golden vectors not found";
  for (const char* name : {"gemm_1x128x256", "gemm_77x200x512", "gemm_128x256x1024"}) {
    const auto g = testing::GoldenCase::load(name);
    for (ScaleLayout layout : {ScaleLayout::kLinear, ScaleLayout::kBlocked}) {
      const bool blk = layout == ScaleLayout::kBlocked;
      Operands o{testing::golden_nvfp4(g, "a", blk ? "sfa_blocked" : "sfa", layout,
                                       float(g.scalar("global_scale_a"))),
                 testing::golden_nvfp4(g, "b", blk ? "sfb_blocked" : "sfb", layout,
                                       float(g.scalar("global_scale_b")))};
      const GemmCase c{o.a.rows, o.b.rows, o.a.k, 1, true, layout, layout};
      Status st;
      const auto got = run_gemm(c, o, nullptr, &st);
      ASSERT_TRUE(st.ok()) << st.to_string();
      const auto rep = testing::compare_fp16(got, g.doubles("c_f64"));
      EXPECT_TRUE(rep.pass) << name << " " << scale_layout_name(layout) << ": " << rep.to_string();
    }
  }
}

TEST(GemmArgs, BadArgumentsNameTheRule) {
  alignas(16) uint8_t dummy[4096];
  Nvfp4View a{TensorView::dense(dummy, DType::kE2M1x2, {4, 32}),
              TensorView::dense(dummy, DType::kE4M3, {4, 4}), ScaleLayout::kLinear, 1.0f};
  Nvfp4View b{TensorView::dense(dummy, DType::kE2M1x2, {8, 32}),
              TensorView::dense(dummy, DType::kE4M3, {8, 4}), ScaleLayout::kLinear, 1.0f};
  Status st = gemm_nvfp4(a, b, TensorView::dense(dummy, DType::kF32, {4, 8}), nullptr);
  EXPECT_NE(st.message().find("c: dtype"), std::string::npos) << st.message();
  st = gemm_nvfp4(a, b, TensorView::dense(dummy, DType::kF16, {8, 4}), nullptr);
  EXPECT_NE(st.message().find("c: shape"), std::string::npos) << st.message();
  Nvfp4View a48{TensorView::dense(dummy, DType::kE2M1x2, {4, 24}),
                TensorView::dense(dummy, DType::kE4M3, {4, 3}), ScaleLayout::kLinear, 1.0f};
  Nvfp4View b48{TensorView::dense(dummy, DType::kE2M1x2, {8, 24}),
                TensorView::dense(dummy, DType::kE4M3, {8, 3}), ScaleLayout::kLinear, 1.0f};
  st = gemm_nvfp4(a48, b48, TensorView::dense(dummy, DType::kF16, {4, 8}), nullptr);
  EXPECT_NE(st.message().find("K: must be a multiple of 64"), std::string::npos) << st.message();
  st = gemm_nvfp4(a, b48, TensorView::dense(dummy, DType::kF16, {4, 8}), nullptr);
  EXPECT_NE(st.message().find("b: K"), std::string::npos) << st.message();
  Nvfp4View b_odd = b;
  b_odd.scales = TensorView::dense(dummy + 1, DType::kE4M3, {8, 4});
  st = gemm_nvfp4(a, b_odd, TensorView::dense(dummy, DType::kF16, {4, 8}), nullptr);
  EXPECT_NE(st.message().find("b.scales: data must be 2-byte aligned"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace kestrel
