// NVFP4 grouped GEMM (plain and SwiGLU dual) against the float64 reference:
// the golden case (an empty group included), groups off the token tile, empty
// and one-row groups, both generators and weight scale layouts, packed
// weights, configurations, bad group ends (clamped, nothing out of bounds),
// poisoned outputs (rows outside every group stay poisoned), determinism,
// the seed shapes (sampled), and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "compare.h"
#include "device_nvfp4.h"
#include "golden.h"
#include "golden_nvfp4.h"
#include "gpu_test.h"
#include "host_float.h"
#include "kestrel/gemm.h"
#include "random.h"
#include "reference/binary16.h"
#include "sampled_check.h"

namespace kestrel {
namespace {

using testing::DeviceBuffer;
using testing::DeviceNvfp4;

struct GroupedCase {
  std::vector<int64_t> rows;  // per group; A and C have their sum
  int64_t n, k;
  bool gpumode = false;
  bool dual = false;
  bool packed = false;
  ScaleLayout b_layout = ScaleLayout::kLinear;
  DType out = DType::kF16;
  // The ends handed to the kernel, when not the rows' running sums.
  std::vector<int32_t> ends;

  int64_t m() const { return std::accumulate(rows.begin(), rows.end(), int64_t(0)); }
  int64_t groups() const { return int64_t(rows.size()); }
};

std::string describe(const GroupedCase& c) {
  std::string s = c.dual ? "dual" : "plain";
  s += " rows [";
  for (size_t i = 0; i < c.rows.size(); ++i) s += (i ? "," : "") + std::to_string(c.rows[i]);
  return s + "] N" + std::to_string(c.n) + " K" + std::to_string(c.k) +
         (c.gpumode ? " gpumode" : " realistic") + " B:" + scale_layout_name(c.b_layout) + " " +
         dtype_name(c.out) + (c.packed ? " packed" : "") + (c.ends.empty() ? "" : " own ends");
}

struct Operands {
  ref::HostNvfp4 a, b1, b2;  // a: [M][K]; b1, b2: [groups][N][K]
};

Operands make_operands(const GroupedCase& c, uint64_t seed) {
  Operands o;
  const int64_t g = c.groups();
  if (c.gpumode) {
    const auto kind = testing::GpuModeData::kGrouped;
    o.a = testing::gpumode_nvfp4(kind, 1, c.m(), c.k, seed);
    o.b1 = testing::gpumode_nvfp4(kind, g, c.n, c.k, seed + 1);
    o.b2 = testing::gpumode_nvfp4(kind, g, c.n, c.k, seed + 2);
    o.a.global_scale = 0.5f;
    o.b2.global_scale = 1.5f;
  } else {
    o.a = testing::realistic_nvfp4(1, c.m(), c.k, seed);
    o.b1 = testing::realistic_nvfp4(g, c.n, c.k, seed + 1);
    o.b2 = testing::realistic_nvfp4(g, c.n, c.k, seed + 2);
  }
  o.b1 = testing::with_layout(o.b1, c.b_layout);
  o.b2 = testing::with_layout(o.b2, c.b_layout);
  return o;
}

// The ends the kernel gets, and each row's group (-1: in none) as the
// kernel reads them: the running maximum clamped to [0, M].
std::vector<int32_t> kernel_ends(const GroupedCase& c) {
  if (!c.ends.empty()) return c.ends;
  std::vector<int32_t> e;
  int64_t sum = 0;
  for (int64_t r : c.rows) e.push_back(int32_t(sum += r));
  return e;
}

std::vector<int> row_groups(const GroupedCase& c) {
  std::vector<int> group(size_t(c.m()), -1);
  int64_t begin = 0;
  for (size_t g = 0; g < kernel_ends(c).size(); ++g) {
    const int64_t end = std::min<int64_t>(c.m(), std::max<int64_t>(begin, kernel_ends(c)[g]));
    for (int64_t r = begin; r < end; ++r) group[size_t(r)] = int(g);
    begin = end;
  }
  return group;
}

// Runs the grouped GEMM on poisoned output; returns C's raw bits [M][N].
std::vector<uint16_t> run_grouped(const GroupedCase& c, const Operands& o, const GemmConfig* cfg,
                                  Status* st) {
  DeviceNvfp4 a(o.a), b1(o.b1), b2(o.b2);
  const std::vector<int32_t> ends = kernel_ends(c);
  const DeviceBuffer ends_dev = DeviceBuffer::from(ends);
  const GemmGroups groups{static_cast<const int32_t*>(ends_dev.get()), int64_t(ends.size())};
  DeviceBuffer out(size_t(c.m() * c.n * 2));
  out.poison();
  const TensorView cv = TensorView::dense(out.get(), c.out, {c.m(), c.n});
  if (c.packed) {
    const int64_t bytes = gemm_packed_weight_bytes(c.n, c.k, c.groups());
    DeviceBuffer p1{size_t(bytes)}, p2{size_t(bytes)};
    p1.poison();
    p2.poison();
    GemmPackedWeights w1, w2;
    *st = pack_gemm_weights(b1.view, p1.get(), bytes, nullptr, &w1);
    if (st->ok() && c.dual) *st = pack_gemm_weights(b2.view, p2.get(), bytes, nullptr, &w2);
    if (st->ok())
      *st = c.dual ? grouped_dual_gemm_nvfp4(a.view, w1, w2, groups, cv, nullptr, cfg)
                   : grouped_gemm_nvfp4(a.view, w1, groups, cv, nullptr, cfg);
  } else {
    *st = c.dual ? grouped_dual_gemm_nvfp4(a.view, b1.view, b2.view, groups, cv, nullptr, cfg)
                 : grouped_gemm_nvfp4(a.view, b1.view, groups, cv, nullptr, cfg);
  }
  if (!st->ok()) return {};
  return out.download<uint16_t>();
}

double reference_at(const Operands& o, const GroupedCase& c, int g, int64_t r, int64_t n) {
  double s1 = 0, s2 = 0;
  for (int64_t k = 0; k < c.k; ++k) {
    const double x = o.a.value(0, r, k);
    s1 += x * o.b1.value(g, n, k);
    if (c.dual) s2 += x * o.b2.value(g, n, k);
  }
  return c.dual ? s1 / (1.0 + std::exp(-s1)) * s2 : s1;
}

void check_case(const GroupedCase& c, const GemmConfig* cfg = nullptr) {
  const Operands o = make_operands(c, 700 + c.m() * 5 + c.n * 3 + c.k + c.groups());
  Status st;
  const auto bits = run_grouped(c, o, cfg, &st);
  ASSERT_TRUE(st.ok()) << describe(c) << ": " << st.to_string();
  const std::vector<int> group = row_groups(c);
  const uint16_t poison = uint16_t(testing::kPoison) * 0x0101;
  std::vector<double> got, want;
  int64_t unwritten_poisoned = 0, outside = 0;
  for (int64_t i : testing::sample_positions(1, c.m(), c.n, c.k, int64_t(1) << 26)) {
    const int64_t r = i / c.n, n = i % c.n;
    const uint16_t b = bits[size_t(i)];
    if (group[size_t(r)] < 0) {  // in no group: never written
      ++outside;
      unwritten_poisoned += b == poison;
      continue;
    }
    got.push_back(c.out == DType::kF16 ? ref::fp16_value(b) : ref::bf16_value(b));
    want.push_back(reference_at(o, c, group[size_t(r)], r, n));
  }
  EXPECT_EQ(unwritten_poisoned, outside) << describe(c) << ": rows outside every group written";
  const auto rep =
      c.out == DType::kF16 ? testing::compare_fp16(got, want) : testing::compare_bf16(got, want);
  EXPECT_TRUE(rep.pass) << describe(c) << (cfg ? " " + cfg->describe() : "") << ": "
                        << rep.to_string();
  const auto again = run_grouped(c, o, cfg, &st);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(bits, again) << describe(c) << ": results differ between runs";
}

class GroupedGemmGpu : public ::testing::TestWithParam<GroupedCase> {};

TEST_P(GroupedGemmGpu, MatchesReference) {
  KESTREL_REQUIRE_GPU();
  check_case(GetParam());
}

std::vector<GroupedCase> cases() {
  using L = ScaleLayout;
  std::vector<GroupedCase> v;
  for (bool dual : {false, true}) {
    // Off the token tile, an empty group first and last, one-row groups.
    v.push_back({{0, 77, 1, 130, 0}, 200, 512, false, dual});
    v.push_back({{5, 0, 64, 130}, 256, 1024, true, dual, false, L::kBlocked});
    v.push_back({{1}, 128, 64, false, dual});                  // M = 1, the smallest K
    v.push_back({{300, 8, 257}, 136, 256, true, dual, true});  // packed, N off 128
    v.push_back({{40, 76, 168, 72}, 128, 320, false, dual, true, L::kBlocked, DType::kBF16});
    std::vector<int64_t> many(40, 3);  // 40 groups of 3 rows
    many[7] = 0;
    v.push_back({many, 64, 128, false, dual});
    // Ends out of order, past M and negative: clamped to a running maximum in [0, M].
    v.push_back({{10, 20, 30}, 128, 128, false, dual, false, L::kLinear, DType::kF16, {12, 4, 25}});
    v.push_back(
        {{10, 20, 30}, 128, 128, false, dual, false, L::kLinear, DType::kF16, {-3, 70, 55}});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GroupedGemmGpu, ::testing::ValuesIn(cases()));

TEST(GroupedGemmGpuConfigs, EveryTileWidthAndDepth) {
  KESTREL_REQUIRE_GPU();
  const GroupedCase c{{37, 0, 150, 9}, 256, 512};
  for (int bn : {8, 64, 128, 256})
    for (int stages : {2, 3}) {
      const GemmConfig cfg{bn, stages, 1};
      check_case(c, &cfg);
    }
  GroupedCase d = c;
  d.dual = true;
  const GemmConfig cfg{96, 3, 1};
  check_case(d, &cfg);
}

TEST(GroupedGemmGpuSeeds, SeedShapesSampled) {
  KESTREL_REQUIRE_GPU();
  // ../shared/workloads/seeds.json, grouped_gemm_nvfp4: deep_k and mid.
  check_case({{80, 176, 128, 72, 64, 248, 96, 160}, 4096, 7168, true});
  check_case({{192, 320}, 3072, 4096, false, true, true});
}

TEST(GroupedGemmGpuGolden, MatchesGoldenIncludingAnEmptyGroup) {
  KESTREL_REQUIRE_GPU();
  if (!testing::golden_available()) GTEST_SKIP() << "skipped: golden vectors not found";
  const auto g = testing::GoldenCase::load("grouped");
  const int64_t groups = g.integer("G"), n = g.integer("N"), k = g.integer("K");
  ref::HostNvfp4 a, b;
  a.k = b.k = k;
  b.rows = n;
  b.batches = groups;
  std::vector<int32_t> ends;
  std::vector<double> want;
  for (int64_t i = 0; i < groups; ++i) {
    const std::string s = std::to_string(i);
    const ref::HostNvfp4 ai = testing::golden_nvfp4(g, "a" + s, "sfa" + s);
    const ref::HostNvfp4 bi = testing::golden_nvfp4(g, "b" + s, "sfb" + s);
    a.rows += ai.rows;
    a.values.insert(a.values.end(), ai.values.begin(), ai.values.end());
    a.scales.insert(a.scales.end(), ai.scales.begin(), ai.scales.end());
    b.values.insert(b.values.end(), bi.values.begin(), bi.values.end());
    b.scales.insert(b.scales.end(), bi.scales.begin(), bi.scales.end());
    ends.push_back(int32_t(a.rows));
    const auto ci = g.doubles("c" + s + "_f64");
    want.insert(want.end(), ci.begin(), ci.end());
  }
  DeviceNvfp4 ad(a), bd(b);
  const DeviceBuffer ends_dev = DeviceBuffer::from(ends);
  DeviceBuffer out(size_t(a.rows * n * 2));
  out.poison();
  const Status st =
      grouped_gemm_nvfp4(ad.view, bd.view, {static_cast<const int32_t*>(ends_dev.get()), groups},
                         TensorView::dense(out.get(), DType::kF16, {a.rows, n}), nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  const auto rep = testing::compare_fp16(testing::fp16_to_doubles(out.download<uint16_t>()), want);
  EXPECT_TRUE(rep.pass) << rep.to_string();
}

TEST(GroupedGemmArgs, BadArgumentsNameTheRule) {
  alignas(16) static uint8_t dummy[4096];
  alignas(16) static int32_t ends[4] = {2, 4, 4, 4};
  const Nvfp4View a{TensorView::dense(dummy, DType::kE2M1x2, {4, 32}),
                    TensorView::dense(dummy, DType::kE4M3, {4, 4}), ScaleLayout::kLinear, 1.0f};
  const Nvfp4View b{TensorView::dense(dummy, DType::kE2M1x2, {2, 8, 32}),
                    TensorView::dense(dummy, DType::kE4M3, {2, 8, 4}), ScaleLayout::kLinear, 1.0f};
  const TensorView c = TensorView::dense(dummy, DType::kF16, {4, 8});
  auto message = [&](const Nvfp4View& av, const Nvfp4View& bv, GemmGroups gr, const TensorView& cv,
                     const GemmConfig* cfg = nullptr) {
    return grouped_gemm_nvfp4(av, bv, gr, cv, nullptr, cfg).message();
  };
  EXPECT_NE(message(a, b, {ends, 0}, c).find("groups.count"), std::string::npos);
  EXPECT_NE(message(a, b, {nullptr, 2}, c).find("groups.ends: must not be null"),
            std::string::npos);
  EXPECT_NE(message(a, b, {ends, 3}, c).find("b: needs one weight per group"), std::string::npos);
  const Nvfp4View a3{TensorView::dense(dummy, DType::kE2M1x2, {2, 4, 32}),
                     TensorView::dense(dummy, DType::kE4M3, {2, 4, 4}), ScaleLayout::kLinear, 1.0f};
  EXPECT_NE(message(a3, b, {ends, 2}, c).find("a: a grouped GEMM's activations"),
            std::string::npos);
  EXPECT_NE(
      message(a, b, {ends, 2}, TensorView::dense(dummy, DType::kF16, {2, 4, 8})).find("c: shape"),
      std::string::npos);
  if (testing::cuda_device_present()) {  // (config rules are checked where a GPU runs the call)
    const GemmConfig split{128, 4, 2};
    EXPECT_NE(message(a, b, {ends, 2}, c, &split).find("split_k 1"), std::string::npos);
    // The kernel reads the ends: pageable host memory would fault there.
    EXPECT_NE(
        message(a, b, {ends, 2}, c).find("groups.ends: must point to memory the GPU can read"),
        std::string::npos);
  }
}

}  // namespace
}  // namespace kestrel
