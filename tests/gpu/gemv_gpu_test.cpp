// NVFP4 GEMV against the float64 reference: seed shapes, edge shapes, both
// data generators, both scale layouts, global scales != 1, strided rows,
// poisoned outputs, every configuration family, determinism.
#include <gtest/gtest.h>

#include <cstring>

#include "compare.h"
#include "device_nvfp4.h"
#include "golden.h"
#include "golden_nvfp4.h"
#include "gpu_test.h"
#include "kestrel/gemv.h"
#include "random.h"
#include "host_float.h"

namespace kestrel {
namespace {

using testing::DeviceBuffer;
using testing::DeviceNvfp4;

struct GemvCase {
  int64_t m, k, l;
  bool gpumode;  // GPU MODE generator (else realistic quantized normal data)
  ScaleLayout a_layout, b_layout;
  int64_t b_rows = 1;     // the GPU MODE inputs pad B to 128 rows
  int64_t a_row_gap = 0;  // bytes between rows of A beyond K/2
  DType out = DType::kF16;
};

std::string describe(const GemvCase& c) {
  return "M" + std::to_string(c.m) + " K" + std::to_string(c.k) + " L" + std::to_string(c.l) +
         (c.gpumode ? " gpumode" : " realistic") + " A:" + scale_layout_name(c.a_layout) +
         " B:" + scale_layout_name(c.b_layout) + " brows" + std::to_string(c.b_rows) + " gap" +
         std::to_string(c.a_row_gap) + " " + dtype_name(c.out);
}

struct Inputs {
  ref::HostNvfp4 a, b;
};

Inputs make_inputs(const GemvCase& c, uint64_t seed) {
  Inputs in;
  if (c.gpumode) {
    in.a = testing::gpumode_nvfp4(testing::GpuModeData::kGemv, c.l, c.m, c.k, seed);
    in.b = testing::gpumode_nvfp4(testing::GpuModeData::kGemv, c.l, c.b_rows, c.k, seed + 1);
    in.a.global_scale = 1.0f;
    in.b.global_scale = 1.0f;
  } else {
    in.a = testing::realistic_nvfp4(c.l, c.m, c.k, seed);
    in.b = testing::realistic_nvfp4(c.l, c.b_rows, c.k, seed + 1);
  }
  in.a = testing::with_layout(in.a, c.a_layout);
  in.b = testing::with_layout(in.b, c.b_layout);
  return in;
}

std::vector<double> run_gemv(const GemvCase& c, const Inputs& in, const GemvConfig* cfg,
                             Status* st) {
  DeviceNvfp4 a(in.a, c.a_row_gap), b(in.b);
  DeviceBuffer out(size_t(c.l * c.m * 2));
  out.poison();
  *st = gemv_nvfp4(a.view, b.view, TensorView::dense(out.get(), c.out, {c.l, c.m}), nullptr, cfg);
  if (!st->ok()) return {};
  const auto bits = out.download<uint16_t>();
  return c.out == DType::kF16 ? testing::fp16_to_doubles(bits) : testing::bf16_to_doubles(bits);
}

// One configuration (nullptr: the heuristic) against a computed reference.
void check_run(const GemvCase& c, const Inputs& in, const std::vector<double>& want,
               const GemvConfig* cfg) {
  Status st;
  const auto got = run_gemv(c, in, cfg, &st);
  ASSERT_TRUE(st.ok()) << st.to_string();
  const auto rep = c.out == DType::kF16 ? testing::compare_fp16(got, want)
                                        : testing::compare_bf16(got, want);
  EXPECT_TRUE(rep.pass) << describe(c) << (cfg ? " " + cfg->describe() : "") << ": "
                        << rep.to_string();
  // Deterministic: a second run gives the same bits.
  const auto again = run_gemv(c, in, cfg, &st);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(0, std::memcmp(got.data(), again.data(), got.size() * sizeof(double)))
      << describe(c) << ": results differ between runs";
}

void check_case(const GemvCase& c, const GemvConfig* cfg = nullptr) {
  const Inputs in = make_inputs(c, 1000 + c.m * 31 + c.k * 7 + c.l);
  const auto want = ref::gemv_nvfp4(in.a, in.b);
  check_run(c, in, want, cfg);
}

// Both kernels on every shape: the heuristic, then each kernel explicitly
// where its rules accept the operands (the wgmma kernel's are checked first).
void check_both_kernels(const GemvCase& c) {
  const Inputs in = make_inputs(c, 1000 + c.m * 31 + c.k * 7 + c.l);
  const auto want = ref::gemv_nvfp4(in.a, in.b);
  check_run(c, in, want, nullptr);
  GemvConfig wgmma;
  Status st;
  run_gemv(c, in, &wgmma, &st);
  if (st.ok()) {
    check_run(c, in, want, &wgmma);
  } else {
    EXPECT_NE(st.message().find("wgmma GEMV"), std::string::npos) << st.message();
  }
  const GemvConfig reg = gemv_default_config(c.m, c.k, c.l, 132, GemvKernel::kRegister);
  check_run(c, in, want, &reg);
}

class GemvGpu : public ::testing::TestWithParam<GemvCase> {};

TEST_P(GemvGpu, MatchesReference) {
  KESTREL_REQUIRE_GPU();
  check_both_kernels(GetParam());
}

std::vector<GemvCase> shapes() {
  using L = ScaleLayout;
  std::vector<GemvCase> v;
  // Seed shapes, both generators (GPU MODE pads B to 128 rows).
  for (auto [m, k, l] : {std::tuple{7168, 16384, 1}, {4096, 7168, 8}, {7168, 2048, 4}}) {
    v.push_back({m, k, l, true, L::kLinear, L::kLinear, 128});
    v.push_back({m, k, l, false, L::kBlocked, L::kBlocked, 1});
  }
  // Edge shapes: M in {1, 3, 128, 1000, 7168}, K from the smallest legal.
  for (int64_t m : {1, 3, 128, 1000})
    for (int64_t k : {16, 2048, 16384, 65536})
      for (int64_t l : {1, 3}) {
        if (m * k * l > (int64_t(1) << 26)) continue;
        v.push_back({m, k, l, false, L::kLinear, L::kBlocked, 1});
        v.push_back({m, k, l, true, L::kBlocked, L::kLinear, 128});
      }
  v.push_back({7168, 65536, 1, false, L::kLinear, L::kLinear, 1});
  v.push_back({1000, 2048, 8, false, L::kLinear, L::kLinear, 1});
  // K not a multiple of 32 or 128, strided and 8-byte aligned rows, bf16 out.
  v.push_back({77, 48, 2, false, L::kLinear, L::kLinear, 1, 8});
  v.push_back({77, 1040, 2, false, L::kBlocked, L::kLinear, 3, 24});
  v.push_back({200, 1024, 1, false, L::kLinear, L::kBlocked, 1, 16, DType::kBF16});
  v.push_back({1024, 16384, 1, false, L::kLinear, L::kLinear, 1, 0, DType::kBF16});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemvGpu, ::testing::ValuesIn(shapes()),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(GemvGpuConfigs, EveryConfigFamilyMatchesReference) {
  KESTREL_REQUIRE_GPU();
  const GemvCase c{300, 4096 + 64, 2, false, ScaleLayout::kLinear, ScaleLayout::kLinear};
  for (const GemvConfig& cfg : gemv_config_space()) {
    // Every wgmma ring; one register representative per (row_tiles, warps)
    // plus every cluster and depth.
    if (cfg.kernel == GemvKernel::kRegister && cfg.depth != 2 &&
        !(cfg.row_tiles == 2 && cfg.warps == 8))
      continue;
    SCOPED_TRACE(cfg.describe());
    check_case(c, &cfg);
  }
}

TEST(GemvGpuGolden, MatchesGoldenCases) {
  KESTREL_REQUIRE_GPU();
  if (!testing::golden_available()) GTEST_SKIP() << "skipped: golden vectors not found";
  for (const char* name : {"gemv_200x1024x1", "gemv_64x256x3"}) {
    const auto g = testing::GoldenCase::load(name);
    Inputs in{testing::golden_nvfp4(g, "a", "sfa"), testing::golden_nvfp4(g, "b", "sfb")};
    const GemvCase c{in.a.rows, in.a.k, in.a.batches, true, ScaleLayout::kLinear,
                     ScaleLayout::kLinear};
    Status st;
    const auto got = run_gemv(c, in, nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.to_string();
    const auto rep = testing::compare_fp16(got, g.doubles("c_f64"));
    EXPECT_TRUE(rep.pass) << name << ": " << rep.to_string();
  }
}

TEST(GemvArgs, BadArgumentsNameTheRule) {
  alignas(16) uint8_t dummy[256];
  Nvfp4View a{TensorView::dense(dummy, DType::kE2M1x2, {1, 4, 16}),
              TensorView::dense(dummy, DType::kE4M3, {1, 4, 2}), ScaleLayout::kLinear, 1.0f};
  Nvfp4View b{TensorView::dense(dummy, DType::kE2M1x2, {1, 1, 16}),
              TensorView::dense(dummy, DType::kE4M3, {1, 1, 2}), ScaleLayout::kLinear, 1.0f};
  auto c = TensorView::dense(dummy, DType::kF16, {1, 4});
  Status st = gemv_nvfp4(a, b, TensorView::dense(dummy, DType::kF32, {1, 4}), nullptr);
  EXPECT_NE(st.message().find("c: dtype"), std::string::npos) << st.message();
  st = gemv_nvfp4(a, b, TensorView::dense(dummy, DType::kF16, {1, 5}), nullptr);
  EXPECT_NE(st.message().find("c: shape"), std::string::npos) << st.message();
  Nvfp4View b_bad = b;
  b_bad.values = TensorView::dense(dummy, DType::kE2M1x2, {1, 1, 24});
  b_bad.scales = TensorView::dense(dummy, DType::kE4M3, {1, 1, 3});
  st = gemv_nvfp4(a, b_bad, c, nullptr);
  EXPECT_NE(st.message().find("b: K"), std::string::npos) << st.message();
  Nvfp4View a_bad = a;
  a_bad.values = TensorView::dense(dummy, DType::kE2M1x2, {1, 4, 12});
  st = gemv_nvfp4(a_bad, b, c, nullptr);
  EXPECT_NE(st.message().find("multiple of 16"), std::string::npos) << st.message();
  if (testing::cuda_device_present()) {
    GemvConfig cfg;
    cfg.kernel = GemvKernel::kRegister;
    cfg.cluster = 3;
    st = gemv_nvfp4(a, b, c, nullptr, &cfg);
    EXPECT_NE(st.message().find("config"), std::string::npos) << st.message();
    cfg = GemvConfig{};
    cfg.stages = 7;
    st = gemv_nvfp4(a, b, c, nullptr, &cfg);
    EXPECT_NE(st.message().find("stages"), std::string::npos) << st.message();
    cfg = GemvConfig{};
    cfg.chunks_per_item = -1;
    st = gemv_nvfp4(a, b, c, nullptr, &cfg);
    EXPECT_NE(st.message().find("chunks_per_item"), std::string::npos) << st.message();
    // K = 32 with linear scales: the wgmma kernel's scale copies need K % 64.
    cfg = GemvConfig{};
    st = gemv_nvfp4(a, b, c, nullptr, &cfg);
    EXPECT_NE(st.message().find("K % 64"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace kestrel
