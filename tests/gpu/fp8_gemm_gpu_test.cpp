// FP8 (e4m3) GEMM with a fused bf16 add (fp8_gemm_add) against the float64
// reference (ref::fp8_gemm_add): the golden case, edge shapes (M = 1, the
// smallest K, sizes off the 128 x block_n tile, deep K), with and without R,
// alpha != 1 (negative and tiny too), normal and wide-range e4m3 data, batches
// (rank-3 views), every tile (64 or 128 rows, every width) at the shallowest
// and deepest pipelines and two raster groupings, persistent CTAs taking
// many tiles, an in-place residual (r == d), padded row strides (N off 8, K
// off 16), tail splits meeting through L2, CUDA-graph capture, poisoned
// outputs (every element written, no row padding touched), determinism,
// empty problems, and argument errors. Large products are checked on a sample of
// elements (sample_positions), the rest only for being written.
//
// Pass rule: compare_fp8_gemm_add (compare.h) against the reference's
// d = bf16(bf16(alpha acc) + r): one bf16 step of each rounding plus the
// tensor cores' summation error, relative to acc_abs = |alpha| sum |a b|.
// The report also counts the outputs bit-identical to the reference's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "common/nvfp4_codec.cuh"
#include "compare.h"
#include "device_buffer.h"
#include "golden.h"
#include "golden_test.h"
#include "gpu_test.h"
#include "kestrel/fp8_gemm.h"
#include "random.h"
#include "reference/binary16.h"
#include "reference/reference.h"
#include "runtime/device.h"
#include "sampled_check.h"

namespace kestrel {
namespace {

using testing::DeviceBuffer;

// The poison as bf16: a NaN, which no finite input makes.
constexpr uint16_t kPoison16 = uint16_t(testing::kPoison) * 0x0101;

enum class Data {
  kNormal,  // normal(0, 1) rounded to e4m3 (random_e4m3)
  kWide,    // magnitudes log-uniform over 2^-10 .. 2^9: zeros, subnormals, 448
};

struct Fp8Case {
  int64_t m = 0, n = 0, k = 0, l = 1;
  bool has_r = true;
  float alpha = 0.37f;
  Data data = Data::kNormal;
  bool rank3 = false;     // rank-3 views with L = 1 (always when L > 1)
  bool in_place = false;  // r is d (has_r too): D = bf16(alpha A B^T) + D's old contents
  int64_t a_row_gap = 0;  // extra bytes per row of A
  int64_t b_row_gap = 0;  // extra bytes per row of B
  int64_t d_row_pad = 0;  // extra elements per row of D and R
};

Fp8Case shape(int64_t m, int64_t n, int64_t k, int64_t l = 1) {
  Fp8Case c;
  c.m = m;
  c.n = n;
  c.k = k;
  c.l = l;
  return c;
}

std::string describe(const Fp8Case& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "M%lld N%lld K%lld L%lld %s alpha %g %s%s gapA %lld gapB %lld padD %lld",
                (long long)c.m, (long long)c.n, (long long)c.k, (long long)c.l,
                c.in_place ? "R=D" : (c.has_r ? "R" : "noR"), double(c.alpha),
                c.data == Data::kWide ? "wide" : "normal", c.l > 1 || c.rank3 ? " rank3" : "",
                (long long)c.a_row_gap, (long long)c.b_row_gap, (long long)c.d_row_pad);
  return buf;
}

// Failures name the case rather than its bytes.
void PrintTo(const Fp8Case& c, std::ostream* os) { *os << describe(c); }

uint64_t seed_of(const Fp8Case& c) { return 900 + c.m * 13 + c.n * 7 + c.k * 3 + c.l; }

struct Operands {
  std::vector<uint8_t> a, b;  // [L][M][K], [L][N][K] e4m3 codes, dense
  std::vector<uint16_t> r;    // [L][M][N] bf16 bits, dense; empty without R
};

// e4m3 codes (never the NaN codes 0x7F / 0xFF).
std::vector<uint8_t> e4m3_values(Data kind, int64_t count, uint64_t seed) {
  if (kind == Data::kNormal) return testing::random_e4m3(count, seed);
  testing::Rng rng(seed);
  std::vector<uint8_t> out(static_cast<size_t>(count));
  for (uint8_t& c : out) {
    const unsigned code = e4m3_from_nonneg(std::exp2(-10.0 + 19.0 * rng.uniform()));
    c = uint8_t(rng.below(2) != 0 && code != 0 ? (code | 0x80u) : code);
  }
  return out;
}

double mean_square(const std::vector<uint8_t>& codes) {
  double s = 0;
  for (uint8_t c : codes) {
    const double v = e4m3_to_float(c);
    s += v * v;
  }
  return codes.empty() ? 0.0 : s / double(codes.size());
}

Operands make_operands(const Fp8Case& c, uint64_t seed) {
  Operands o;
  o.a = e4m3_values(c.data, c.l * c.m * c.k, seed);
  o.b = e4m3_values(c.data, c.l * c.n * c.k, seed + 1);
  if (c.has_r) {
    // R of the outputs' typical size: the add rounds, and sometimes cancels.
    const double typical =
        std::fabs(double(c.alpha)) * std::sqrt(double(c.k) * mean_square(o.a) * mean_square(o.b));
    o.r = testing::random_bf16(c.l * c.m * c.n, seed + 2, typical > 0 ? typical : 1.0);
  }
  return o;
}

// rows x cols elements at a row stride of `stride` elements, the gaps poisoned.
template <typename T>
std::vector<T> with_row_stride(const std::vector<T>& dense, int64_t rows, int64_t cols,
                               int64_t stride) {
  std::vector<T> out(static_cast<size_t>(rows * stride));
  if (!out.empty()) std::memset(out.data(), testing::kPoison, out.size() * sizeof(T));
  for (int64_t i = 0; i < rows; ++i)
    std::copy_n(dense.begin() + i * cols, cols, out.begin() + i * stride);
  return out;
}

TensorView view(void* p, DType t, const Fp8Case& c, int64_t rows, int64_t cols, int64_t stride) {
  if (c.l > 1 || c.rank3)
    return TensorView::strided(p, t, {c.l, rows, cols}, {rows * stride, stride, 1});
  return TensorView::strided(p, t, {rows, cols}, {stride, 1});
}

// Runs the GEMM into a poisoned D (in place: D holding R, its row padding
// poisoned); returns D's bits [L][M][N + d_row_pad], padding included.
std::vector<uint16_t> run_fp8(const Fp8Case& c, const Operands& o, const Fp8GemmConfig* cfg,
                              Status* st) {
  const int64_t sa = c.k + c.a_row_gap, sb = c.k + c.b_row_gap, sd = c.n + c.d_row_pad;
  const DeviceBuffer a = DeviceBuffer::from(with_row_stride(o.a, c.l * c.m, c.k, sa));
  const DeviceBuffer b = DeviceBuffer::from(with_row_stride(o.b, c.l * c.n, c.k, sb));
  DeviceBuffer r, d;
  if (c.in_place) {
    d = DeviceBuffer::from(with_row_stride(o.r, c.l * c.m, c.n, sd));
  } else {
    d = DeviceBuffer(size_t(c.l * c.m * sd * 2));
    d.poison();
    if (c.has_r) r = DeviceBuffer::from(with_row_stride(o.r, c.l * c.m, c.n, sd));
  }
  const TensorView av = view(a.get(), DType::kE4M3, c, c.m, c.k, sa);
  const TensorView bv = view(b.get(), DType::kE4M3, c, c.n, c.k, sb);
  const TensorView dv = view(d.get(), DType::kBF16, c, c.m, c.n, sd);
  const TensorView rv = c.in_place ? dv : view(r.get(), DType::kBF16, c, c.m, c.n, sd);
  *st = fp8_gemm_add(av, bv, c.alpha, c.has_r ? &rv : nullptr, dv, nullptr, cfg);
  if (!st->ok()) return {};
  return d.download<uint16_t>();
}

// The reference at the checked positions (flat indices into [L][M][N]).
struct Expected {
  std::vector<int64_t> pos;
  std::vector<double> acc;      // alpha * A B^T in float64
  std::vector<double> acc_abs;  // |alpha| * sum_k |A B|: the scale of a summation's error
  std::vector<uint16_t> d;      // bf16(bf16(acc) + r), r = 0 without R
};

// The reference at the checked positions: every element up to
// sample_positions' limit, else its sample.
Expected expected(const Fp8Case& c, const Operands& o) {
  Expected e;
  const int64_t mn = c.m * c.n;
  const std::vector<uint16_t> r = c.has_r ? o.r : std::vector<uint16_t>(size_t(c.l * mn), 0);
  e.pos = testing::sample_positions(c.l, c.m, c.n, c.k);
  if (int64_t(e.pos.size()) == c.l * mn) {
    for (int64_t b = 0; b < c.l; ++b) {
      const size_t at = size_t(b * c.m * c.k), bt = size_t(b * c.n * c.k), rt = size_t(b * mn);
      const auto res = ref::fp8_gemm_add(&o.a[at], &o.b[bt], &r[rt], c.m, c.n, c.k, c.alpha);
      e.acc.insert(e.acc.end(), res.acc.begin(), res.acc.end());
      e.acc_abs.insert(e.acc_abs.end(), res.acc_abs.begin(), res.acc_abs.end());
      e.d.insert(e.d.end(), res.d_bf16.begin(), res.d_bf16.end());
    }
    return e;
  }
  for (int64_t i : e.pos) {  // one element: a row of A against a row of B
    const size_t at = size_t(i / c.n * c.k), bt = size_t((i / mn * c.n + i % c.n) * c.k);
    const auto res = ref::fp8_gemm_add(&o.a[at], &o.b[bt], &r[size_t(i)], 1, 1, c.k, c.alpha);
    e.acc.push_back(res.acc[0]);
    e.acc_abs.push_back(res.acc_abs[0]);
    e.d.push_back(res.d_bf16[0]);
  }
  return e;
}

void check_output(const Fp8Case& c, const Expected& e, const std::vector<uint16_t>& bits,
                  const std::string& what) {
  const int64_t sd = c.n + c.d_row_pad;
  ASSERT_EQ(int64_t(bits.size()), c.l * c.m * sd) << what;
  std::vector<double> got(e.pos.size()), want(e.pos.size());
  int64_t exact = 0;
  for (size_t j = 0; j < e.pos.size(); ++j) {
    const int64_t i = e.pos[j];
    const uint16_t out = bits[size_t(i / c.n * sd + i % c.n)];
    got[j] = ref::bf16_value(out);
    want[j] = ref::bf16_value(e.d[j]);
    exact += out == e.d[j];
  }
  const auto rep = testing::compare_fp8_gemm_add(got, want, e.acc, e.acc_abs);
  EXPECT_TRUE(rep.pass) << what << ": " << rep.to_string() << " (" << exact << " of "
                        << e.pos.size() << " bit-exact)";
  // Every output written (poison is NaN, no output is) and no row padding.
  int64_t unwritten = 0, padding_written = 0;
  for (int64_t row = 0; row < c.l * c.m; ++row)
    for (int64_t j = 0; j < sd; ++j) {
      const uint16_t v = bits[size_t(row * sd + j)];
      if (j < c.n)
        unwritten += v == kPoison16;
      else
        padding_written += v != kPoison16;
    }
  EXPECT_EQ(unwritten, 0) << what << ": outputs left poisoned";
  EXPECT_EQ(padding_written, 0) << what << ": row padding written";
}

// Runs `cfg` (null: the heuristic's) on c into a poisoned D and checks it
// against e; with `rerun`, runs again and expects the same bits.
void check_run(const Fp8Case& c, const Operands& o, const Expected& e, const Fp8GemmConfig* cfg,
               bool rerun = false) {
  const std::string what = describe(c) + (cfg ? " " + cfg->describe() : " default config");
  Status st;
  const auto bits = run_fp8(c, o, cfg, &st);
  ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
  check_output(c, e, bits, what);
  if (!rerun) return;
  const auto again = run_fp8(c, o, cfg, &st);
  ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
  const auto same = testing::compare_exact(again, bits);
  EXPECT_TRUE(same.pass) << what << ": results differ between runs: " << same.to_string();
}

void check_case(const Fp8Case& c, const Fp8GemmConfig* cfg = nullptr) {
  const Operands o = make_operands(c, seed_of(c));
  check_run(c, o, expected(c, o), cfg);
}

class Fp8GemmGpu : public ::testing::TestWithParam<Fp8Case> {};

TEST_P(Fp8GemmGpu, MatchesReference) {
  KESTREL_REQUIRE_GPU();
  check_case(GetParam());
}

std::vector<Fp8Case> cases() {
  std::vector<Fp8Case> v;
  // M = 1, the smallest dense K (one 16-byte row), N off the tile (200, 264, 136),
  // deep K, M off the 128-row tile (77, 129, 300, 1000), M <= 64 in 64-row
  // tiles (40, 64). Each shape with and without R; the data, alpha and view
  // rank vary along the list.
  const int64_t dims[][3] = {{1, 128, 256},    {1, 8, 16},      {77, 200, 512},   {128, 256, 1024},
                             {129, 264, 4096}, {256, 512, 128}, {300, 136, 8192}, {1000, 1000, 272},
                             {40, 520, 2048},  {64, 136, 272}};
  int i = 0;
  for (const auto& s : dims)
    for (bool has_r : {true, false}) {
      Fp8Case c = shape(s[0], s[1], s[2]);
      c.has_r = has_r;
      c.data = i % 4 == 1 || i % 4 == 2 ? Data::kWide : Data::kNormal;
      c.rank3 = i % 4 == 3;
      if (i == 5) c.alpha = -2.5f;
      if (i == 6) c.alpha = 1.0f;
      if (i == 9) c.alpha = 0x1p-14f;  // wide data: products up to 448^2
      v.push_back(c);
      ++i;
    }
  // Batches: rank-3 views, R per batch; strided A and D across batches.
  Fp8Case c = shape(77, 200, 512, 3);
  v.push_back(c);
  c.has_r = false;
  c.data = Data::kWide;
  v.push_back(c);
  c = shape(130, 72, 256, 2);
  c.a_row_gap = 16;
  c.d_row_pad = 8;
  v.push_back(c);
  // One row of A with no 16-byte multiple (24 bytes): a single row's stride
  // is free (B's rows padded to 32 bytes).
  c = shape(1, 8, 24);
  c.b_row_gap = 8;
  v.push_back(c);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Fp8GemmGpu, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(Fp8GemmGpuGolden, MatchesGoldenCase) {
  KESTREL_REQUIRE_GPU();
  KESTREL_REQUIRE_GOLDEN();
  const auto g = testing::GoldenCase::load("fp8_gemm_add_64x128x256");
  Fp8Case c = shape(g.integer("M"), g.integer("N"), g.integer("K"));
  c.alpha = float(g.scalar("alpha"));
  ASSERT_EQ(double(c.alpha), g.scalar("alpha")) << "alpha is not a float";
  const Operands o{g.bytes("a"), g.bytes("b"), g.bits16("r")};
  ASSERT_EQ(int64_t(o.a.size()), c.m * c.k);
  ASSERT_EQ(int64_t(o.b.size()), c.n * c.k);
  ASSERT_EQ(int64_t(o.r.size()), c.m * c.n);
  const auto acc = g.doubles("acc_f64");  // A B^T, before alpha
  const auto d = g.bits16("d_bf16");
  // The summation's error scale (not in the golden case): the reference's acc_abs.
  const auto acc_abs =
      ref::fp8_gemm_add(o.a.data(), o.b.data(), o.r.data(), c.m, c.n, c.k, c.alpha).acc_abs;
  for (bool has_r : {true, false}) {
    c.has_r = has_r;
    Expected e;
    for (int64_t i = 0; i < c.m * c.n; ++i) {
      e.pos.push_back(i);
      e.acc.push_back(double(c.alpha) * acc[size_t(i)]);
      e.acc_abs.push_back(acc_abs[size_t(i)]);
      e.d.push_back(has_r ? d[size_t(i)] : ref::bf16_bits(e.acc.back()));
    }
    Status st;
    const auto bits = run_fp8(c, o, nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.to_string();
    check_output(c, e, bits, g.name() + (has_r ? " with R" : " without R"));
  }
}

// (consumer_groups, block_n) -> the most stages that fit, over the
// configuration space.
std::map<std::pair<int, int>, int> deepest_stages() {
  std::map<std::pair<int, int>, int> deepest;
  for (const Fp8GemmConfig& cfg : fp8_gemm_config_space()) {
    int& most = deepest[{cfg.consumer_groups, cfg.block_n}];
    most = std::max(most, cfg.stages);
  }
  return deepest;
}

// Every tile of the space (64 or 128 rows, every width) at 2 stages and at
// its deepest ring, raster groups of 1 and 4 row tiles, on tiles off both
// edges (3 x 9 tiles of 128 x 64, 5 x 3 of 64 x 192; 4 stages of K with a
// 16-value tail).
TEST(Fp8GemmGpuConfigs, EveryTileAtBothDepths) {
  KESTREL_REQUIRE_GPU();
  const auto deepest = deepest_stages();
  ASSERT_GE(deepest.size(), 6u);
  const Fp8Case c = shape(300, 520, 400);
  const Operands o = make_operands(c, seed_of(c));
  const Expected e = expected(c, o);
  for (const auto& [tile, most] : deepest)
    for (int stages : {2, most})
      for (int raster : {1, 4}) {
        const Fp8GemmConfig cfg{tile.second, stages, raster, 1, tile.first};
        ASSERT_NO_FATAL_FAILURE(check_run(c, o, e, &cfg));
      }
}

// Persistent CTAs: 8 x 16 x 3 tiles of 128 x 64 (about 3 a CTA on 132 SMs;
// 2 of 128 x 192, 6 of 64 x 64), 3 stages of K a tile against rings of 2
// and deeper, raster groups wider than the 8 row tiles and ones that leave
// a partial group.
TEST(Fp8GemmGpuConfigs, PersistentCtasTakeManyTiles) {
  KESTREL_REQUIRE_GPU();
  Fp8Case c = shape(1000, 1000, 272, 3);
  c.data = Data::kWide;
  const Operands o = make_operands(c, seed_of(c));
  const Expected e = expected(c, o);
  const auto deepest = deepest_stages();
  std::vector<Fp8GemmConfig> cfgs;
  for (int g : {1, 2}) {
    const int most_narrow = deepest.at({g, 64}), most_wide = deepest.at({g, 192});
    cfgs.insert(cfgs.end(), {{64, 2, 1, 1, g},
                             {64, most_narrow, 16, 1, g},
                             {192, 2, 3, 1, g},
                             {192, most_wide, 8, 1, g},
                             {128, std::min(3, deepest.at({g, 128})), 4, 1, g}});
  }
  for (const Fp8GemmConfig& cfg : cfgs) ASSERT_NO_FATAL_FAILURE(check_run(c, o, e, &cfg));
}

// Tail splits: the tiles of a last, partial wave cut into K ranges that meet
// through L2. Shapes sized by this GPU's SM count so that a wave is partial:
// one tile a batch in sms + 5 batches (a whole wave, then 5 tiles of up to
// 8 parts of 1008 / 128 stages), and 9 tiles alone (one partial wave of
// split-K, parts of uneven stage counts); with R, without, in place (every
// part reads R before the last writes D); K of 2 stages caps the parts at 2.
// Each twice: the parts add in part order whichever arrives last, so the
// bits repeat.
TEST(Fp8GemmGpuConfigs, TailSplitsMeetThroughL2) {
  KESTREL_REQUIRE_GPU();
  const rt::DeviceInfo* dev = nullptr;
  ASSERT_TRUE(rt::current_device(&dev).ok());
  struct TailCase {
    Fp8Case c;
    Fp8GemmConfig cfg;
  };
  std::vector<TailCase> cases;
  Fp8Case c = shape(100, 56, 1008, dev->sm_count + 5);
  for (int t : {2, 8}) cases.push_back({c, {64, 3, 4, t}});
  c.has_r = false;
  c.data = Data::kWide;
  cases.push_back({c, {64, 2, 1, 8}});
  c = shape(300, 520, 2000);
  for (int t : {3, 8}) cases.push_back({c, {192, 2, 1, t}});
  c.in_place = true;
  c.d_row_pad = 8;
  cases.push_back({c, {128, 4, 8, 4}});
  c = shape(300, 520, 208);
  cases.push_back({c, {192, 2, 1, 8}});
  // 64-row tiles: the slots and counts of one warpgroup; at M40 its fourth
  // warp holds no rows and moves no slots, at M1 only the first does.
  c = shape(40, 56, 1008, dev->sm_count + 5);
  for (int t : {2, 8}) cases.push_back({c, {64, 3, 4, t, 1}});
  cases.push_back({shape(1, 1024, 4000), {64, 13, 8, 8, 1}});
  c = shape(300, 520, 2000);
  c.in_place = true;
  cases.push_back({c, {128, 4, 8, 4, 1}});
  for (const TailCase& tc : cases) {
    const Operands o = make_operands(tc.c, seed_of(tc.c));
    ASSERT_NO_FATAL_FAILURE(check_run(tc.c, o, expected(tc.c, o), &tc.cfg, true));
  }
}

// The heuristic's pick is a point of the space, for shapes from one tile to
// many waves, on SM counts of H100 SXM / PCIe and smaller parts.
TEST(Fp8GemmGpuConfigs, DefaultConfigIsInTheSpace) {
  const auto space = fp8_gemm_config_space();
  for (int sms : {132, 114, 78})
    for (int64_t m : {1, 128, 1000, 8192})
      for (int64_t n : {8, 200, 4096, 7168})
        for (int64_t l : {1, 3}) {
          const Fp8GemmConfig cfg = fp8_gemm_default_config(m, n, 1024, l, sms);
          const bool found = std::any_of(space.begin(), space.end(), [&](const Fp8GemmConfig& s) {
            return s.describe() == cfg.describe();
          });
          EXPECT_TRUE(found) << cfg.describe() << " for M" << m << " N" << n << " L" << l << " on "
                             << sms << " SMs";
        }
}

// r == d: D = bf16(alpha A B^T) + D's old contents, each element read before
// it is written; dense and batched with padded rows.
TEST(Fp8GemmGpuEdges, InPlaceResidual) {
  KESTREL_REQUIRE_GPU();
  Fp8Case c = shape(200, 264, 512);
  c.in_place = true;
  check_case(c);
  c = shape(77, 200, 256, 2);
  c.in_place = true;
  c.d_row_pad = 8;
  c.data = Data::kWide;
  check_case(c);
  const Fp8GemmConfig cfg{64, 2, 1};
  check_case(c, &cfg);
}

// Rows wider than their elements: A and B rows with gaps (poisoned with NaN
// codes the kernel must not read), D and R rows of N = 100 (200 bytes, off
// 16) at a stride of 104. K off 16 (40, 1) through padded rows of A and B.
TEST(Fp8GemmGpuEdges, PaddedRowStrides) {
  KESTREL_REQUIRE_GPU();
  // D and R rows of 104 columns in strides of 112 and 120: the padding
  // stays poisoned. (N must be a multiple of 8: TMA stores clip in 16-byte
  // units, so N = 100 would write its row's next 4 elements.)
  Fp8Case c = shape(150, 104, 48);
  c.a_row_gap = 16;
  c.b_row_gap = 32;
  c.d_row_pad = 8;
  check_case(c);
  c.has_r = false;
  check_case(c);
  c = shape(77, 104, 48, 2);
  c.a_row_gap = 16;
  c.b_row_gap = 16;
  c.d_row_pad = 16;
  check_case(c);
  for (auto [k, gap] : {std::pair<int64_t, int64_t>{40, 8}, {1, 15}}) {
    c = shape(150, 104, k);
    c.a_row_gap = gap;
    c.b_row_gap = gap + 16;
    c.d_row_pad = 8;
    check_case(c);
  }
}

// Two runs give the same bits: 8 x 16 tiles of bn128 and more of bn64
// (several waves of persistent CTAs), sampled against the reference.
TEST(Fp8GemmGpuEdges, RunsAreBitIdentical) {
  KESTREL_REQUIRE_GPU();
  const Fp8Case c = shape(1024, 2048, 1024);
  const Operands o = make_operands(c, seed_of(c));
  const Expected e = expected(c, o);
  const Fp8GemmConfig narrow{64, 2, 1};
  for (const Fp8GemmConfig* cfg : {static_cast<const Fp8GemmConfig*>(nullptr), &narrow})
    ASSERT_NO_FATAL_FAILURE(check_run(c, o, e, cfg, true));
}

// CUDA-graph capture, as a serving loop uses it: once a call on the stream
// has sized its workspace (the tail split's counts and slots), a captured
// call replays with the direct call's bits, twice (the counts are left zero
// between replays). On a stream with no workspace yet the captured call
// returns Unsupported, naming the fix, instead of allocating.
TEST(Fp8GemmGpuEdges, GraphCaptureReplays) {
  KESTREL_REQUIRE_GPU();
  const rt::DeviceInfo* dev = nullptr;
  ASSERT_TRUE(rt::current_device(&dev).ok());
  const Fp8Case c = shape(100, 56, 1008, dev->sm_count + 5);
  const Fp8GemmConfig cfg{64, 3, 4, 8};  // 5 tail tiles in 8 parts
  const Operands o = make_operands(c, seed_of(c));
  const DeviceBuffer a = DeviceBuffer::from(o.a), b = DeviceBuffer::from(o.b),
                     r = DeviceBuffer::from(o.r);
  DeviceBuffer d(size_t(c.l * c.m * c.n * 2)), replayed(d.bytes());
  const TensorView av = view(a.get(), DType::kE4M3, c, c.m, c.k, c.k);
  const TensorView bv = view(b.get(), DType::kE4M3, c, c.n, c.k, c.k);
  const TensorView rv = view(r.get(), DType::kBF16, c, c.m, c.n, c.n);
  const TensorView dv = view(d.get(), DType::kBF16, c, c.m, c.n, c.n);
  const TensorView replayed_v = view(replayed.get(), DType::kBF16, c, c.m, c.n, c.n);
  cudaStream_t stream = nullptr, fresh = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&fresh, cudaStreamNonBlocking), cudaSuccess);
  d.poison();
  replayed.poison();
  ASSERT_TRUE(fp8_gemm_add(av, bv, c.alpha, &rv, dv, stream, &cfg).ok());
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const auto want = d.download<uint16_t>();
  check_output(c, expected(c, o), want, describe(c) + " " + cfg.describe() + " direct");

  auto capture = [&](cudaStream_t s, Status* st) {
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    *st = fp8_gemm_add(av, bv, c.alpha, &rv, replayed_v, s, &cfg);
    EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    return graph;
  };
  Status st;
  cudaGraph_t graph = capture(stream, &st);
  ASSERT_TRUE(st.ok()) << st.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto same = testing::compare_exact(replayed.download<uint16_t>(), want);
    EXPECT_TRUE(same.pass) << "replay " << replay << ": " << same.to_string();
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  graph = capture(fresh, &st);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
  EXPECT_NE(st.message().find("before capturing"), std::string::npos) << st.message();
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  cudaStreamDestroy(fresh);
  cudaStreamDestroy(stream);
}

// Scales in device memory: the same bits as a host alpha of their fp32
// product, either scale alone, with a tail split and with 64-row tiles; a
// captured call replays with the values the scales hold at replay.
TEST(Fp8GemmGpuEdges, DeviceScalesMatchTheHostAlpha) {
  KESTREL_REQUIRE_GPU();
  const rt::DeviceInfo* dev = nullptr;
  ASSERT_TRUE(rt::current_device(&dev).ok());
  for (const Fp8Case& base : {shape(300, 520, 400), shape(40, 56, 1008, dev->sm_count + 5)}) {
    const Operands o = make_operands(base, seed_of(base));
    const DeviceBuffer a = DeviceBuffer::from(o.a), b = DeviceBuffer::from(o.b),
                       r = DeviceBuffer::from(o.r);
    DeviceBuffer d(size_t(base.l * base.m * base.n * 2));
    const TensorView av = view(a.get(), DType::kE4M3, base, base.m, base.k, base.k);
    const TensorView bv = view(b.get(), DType::kE4M3, base, base.n, base.k, base.k);
    const TensorView rv = view(r.get(), DType::kBF16, base, base.m, base.n, base.n);
    const TensorView dv = view(d.get(), DType::kBF16, base, base.m, base.n, base.n);
    DeviceBuffer scales = DeviceBuffer::from(std::vector<float>{0.8125f, -2.75f});
    const float* sa = static_cast<const float*>(scales.get());
    const Fp8GemmConfig split{64, 3, 4, 8, 1};  // (the second shape: 5 tail tiles in 8 parts)
    const Fp8GemmConfig* cfg = base.l > 1 ? &split : nullptr;
    // Host alpha -> D, checked against the reference at that alpha.
    auto host_run = [&](float alpha) {
      Fp8Case c = base;
      c.alpha = alpha;
      d.poison();
      EXPECT_TRUE(fp8_gemm_add(av, bv, alpha, &rv, dv, nullptr, cfg).ok());
      auto bits = d.download<uint16_t>();
      check_output(c, expected(c, o), bits, describe(c) + " host alpha");
      return bits;
    };
    auto device_run = [&](const Fp8DeviceScales& sc) {
      d.poison();
      const Status st = fp8_gemm_add(av, bv, sc, &rv, dv, nullptr, cfg);
      EXPECT_TRUE(st.ok()) << st.to_string();
      return d.download<uint16_t>();
    };
    const float product = 0.8125f * -2.75f;
    auto same = testing::compare_exact(device_run({sa, sa + 1}), host_run(product));
    EXPECT_TRUE(same.pass) << describe(base) << " both scales: " << same.to_string();
    same = testing::compare_exact(device_run({nullptr, sa + 1}), host_run(-2.75f));
    EXPECT_TRUE(same.pass) << describe(base) << " scale b alone: " << same.to_string();
    same = testing::compare_exact(device_run({sa, nullptr}), host_run(0.8125f));
    EXPECT_TRUE(same.pass) << describe(base) << " scale a alone: " << same.to_string();

    // Captured once (after a call that sizes the stream's workspaces),
    // replayed after the scales change.
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_TRUE(fp8_gemm_add(av, bv, Fp8DeviceScales{sa, sa + 1}, &rv, dv, stream, cfg).ok());
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    const Status st = fp8_gemm_add(av, bv, Fp8DeviceScales{sa, sa + 1}, &rv, dv, stream, cfg);
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    ASSERT_TRUE(st.ok()) << st.to_string();
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    const std::vector<float> changed{-0.3125f, 1.5f};
    ASSERT_EQ(cudaMemcpy(scales.get(), changed.data(), 8, cudaMemcpyHostToDevice), cudaSuccess);
    d.poison();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto replayed = d.download<uint16_t>();
    same = testing::compare_exact(replayed, host_run(-0.3125f * 1.5f));
    EXPECT_TRUE(same.pass) << describe(base) << " replay: " << same.to_string();
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  }
}

// M = 0, N = 0 or L = 0: Ok, and D (poisoned) untouched, with and without R
// and a configuration.
TEST(Fp8GemmGpuEdges, EmptyProblemsWriteNothing) {
  KESTREL_REQUIRE_GPU();
  DeviceBuffer a(4096), b(4096), r(4096), d(4096);
  d.poison();
  auto e4m3 = [](const DeviceBuffer& buf, std::initializer_list<int64_t> s) {
    return TensorView::dense(buf.get(), DType::kE4M3, s);
  };
  auto bf16 = [](const DeviceBuffer& buf, std::initializer_list<int64_t> s) {
    return TensorView::dense(buf.get(), DType::kBF16, s);
  };
  struct Empty {
    const char* what;
    TensorView a, b, r, d;
  };
  const Empty cases[] = {
      {"M = 0", e4m3(a, {0, 32}), e4m3(b, {8, 32}), bf16(r, {0, 8}), bf16(d, {0, 8})},
      {"N = 0", e4m3(a, {8, 32}), e4m3(b, {0, 32}), bf16(r, {8, 0}), bf16(d, {8, 0})},
      {"L = 0", e4m3(a, {0, 8, 32}), e4m3(b, {0, 8, 32}), bf16(r, {0, 8, 8}), bf16(d, {0, 8, 8})},
  };
  const Fp8GemmConfig cfg{64, 2, 1};
  for (const Empty& x : cases)
    for (bool with_r : {false, true})
      for (const Fp8GemmConfig* pc : {static_cast<const Fp8GemmConfig*>(nullptr), &cfg}) {
        const Status st = fp8_gemm_add(x.a, x.b, 0.5f, with_r ? &x.r : nullptr, x.d, nullptr, pc);
        EXPECT_TRUE(st.ok()) << x.what << (with_r ? " with R" : "") << ": " << st.to_string();
      }
  const auto bytes = d.download<uint8_t>();
  EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](uint8_t v) {
    return v == testing::kPoison;
  })) << "an empty problem wrote to d";
}

TEST(Fp8GemmArgs, BadArgumentsNameTheRule) {
  alignas(16) uint8_t dummy[4096];
  const auto a = TensorView::dense(dummy, DType::kE4M3, {4, 32});
  const auto b = TensorView::dense(dummy, DType::kE4M3, {8, 32});
  const auto d = TensorView::dense(dummy, DType::kBF16, {4, 8});
  auto expect_rule = [](const Status& st, const char* rule) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
    EXPECT_NE(st.message().find(rule), std::string::npos) << st.message();
  };
  expect_rule(
      fp8_gemm_add(TensorView::dense(dummy, DType::kBF16, {4, 32}), b, 1.0f, nullptr, d, nullptr),
      "a: dtype");
  expect_rule(
      fp8_gemm_add(a, TensorView::dense(dummy, DType::kE2M1x2, {8, 32}), 1.0f, nullptr, d, nullptr),
      "b: dtype");
  expect_rule(
      fp8_gemm_add(a, b, 1.0f, nullptr, TensorView::dense(dummy, DType::kF16, {4, 8}), nullptr),
      "d: dtype");
  expect_rule(
      fp8_gemm_add(TensorView::dense(dummy, DType::kE4M3, {128}), b, 1.0f, nullptr, d, nullptr),
      "a: rank");
  expect_rule(
      fp8_gemm_add(TensorView::dense(nullptr, DType::kE4M3, {4, 32}), b, 1.0f, nullptr, d, nullptr),
      "a: data is null");
  // K mismatch, batch mismatch, D's and R's shapes.
  expect_rule(
      fp8_gemm_add(a, TensorView::dense(dummy, DType::kE4M3, {8, 48}), 1.0f, nullptr, d, nullptr),
      "b: K");
  expect_rule(fp8_gemm_add(TensorView::dense(dummy, DType::kE4M3, {2, 4, 32}),
                           TensorView::dense(dummy, DType::kE4M3, {3, 8, 32}), 1.0f, nullptr,
                           TensorView::dense(dummy, DType::kBF16, {2, 4, 8}), nullptr),
              "batch count");
  expect_rule(
      fp8_gemm_add(a, b, 1.0f, nullptr, TensorView::dense(dummy, DType::kBF16, {4, 16}), nullptr),
      "d: shape");
  expect_rule(
      fp8_gemm_add(a, b, 1.0f, nullptr, TensorView::dense(dummy, DType::kBF16, {8, 8}), nullptr),
      "d: shape");
  const auto r_wide = TensorView::dense(dummy, DType::kBF16, {4, 16});
  expect_rule(fp8_gemm_add(a, b, 1.0f, &r_wide, d, nullptr), "r: shape");
  const auto r_f32 = TensorView::dense(dummy, DType::kF32, {4, 8});
  expect_rule(fp8_gemm_add(a, b, 1.0f, &r_f32, d, nullptr), "r: dtype");
  // Rows off 16 bytes: dense K = 24 (24-byte rows), D rows of 12 bf16 (24
  // bytes), R likewise, and a base off 16.
  expect_rule(
      fp8_gemm_add(TensorView::dense(dummy, DType::kE4M3, {4, 24}),
                   TensorView::dense(dummy, DType::kE4M3, {8, 24}), 1.0f, nullptr, d, nullptr),
      "a: stride of dim 0 must be a multiple of 16 bytes");
  expect_rule(fp8_gemm_add(a, TensorView::strided(dummy, DType::kE4M3, {8, 24}, {24, 1}), 1.0f,
                           nullptr, d, nullptr),
              "b: stride of dim 0 must be a multiple of 16 bytes");
  expect_rule(fp8_gemm_add(a, b, 1.0f, nullptr,
                           TensorView::strided(dummy, DType::kBF16, {4, 8}, {12, 1}), nullptr),
              "d: stride of dim 0 must be a multiple of 16 bytes");
  const auto r_odd = TensorView::strided(dummy, DType::kBF16, {4, 8}, {12, 1});
  expect_rule(fp8_gemm_add(a, b, 1.0f, &r_odd, d, nullptr),
              "r: stride of dim 0 must be a multiple of 16 bytes");
  // N off 8 (with 16-byte aligned padded rows): TMA stores would write past it.
  expect_rule(fp8_gemm_add(a, TensorView::dense(dummy, DType::kE4M3, {6, 32}), 1.0f, nullptr,
                           TensorView::strided(dummy, DType::kBF16, {4, 6}, {8, 1}), nullptr),
              "b: N (rows) must be a multiple of 8");
  // R over part of D (one row on): it would read rows another tile has written.
  const auto r_shifted =
      TensorView::dense(static_cast<uint8_t*>(d.data) + 16, DType::kBF16, {4, 8});
  expect_rule(fp8_gemm_add(a, b, 1.0f, &r_shifted, d, nullptr), "r: must be d itself");
  expect_rule(fp8_gemm_add(TensorView::dense(dummy + 8, DType::kE4M3, {4, 32}), b, 1.0f, nullptr, d,
                           nullptr),
              "a: data must be 16-byte aligned");
  const auto* odd = reinterpret_cast<const float*>(dummy + 2);
  expect_rule(fp8_gemm_add(a, b, Fp8DeviceScales{odd, nullptr}, nullptr, d, nullptr),
              "scales.a: must be 4-byte aligned");
  if (testing::cuda_device_present()) {
    // Configurations are checked against the device; on device memory, so
    // that a configuration wrongly accepted runs harmlessly.
    DeviceBuffer buf(4096);
    const auto da = TensorView::dense(buf.get(), DType::kE4M3, {4, 32});
    const auto db = TensorView::dense(buf.get(), DType::kE4M3, {8, 32});
    DeviceBuffer out(4096);
    const auto dd = TensorView::dense(out.get(), DType::kBF16, {4, 8});
    Fp8GemmConfig cfg{96, 2, 1};
    expect_rule(fp8_gemm_add(da, db, 1.0f, nullptr, dd, nullptr, &cfg), "config: block_n");
    cfg = Fp8GemmConfig{192, 20, 1};
    expect_rule(fp8_gemm_add(da, db, 1.0f, nullptr, dd, nullptr, &cfg), "shared memory");
    cfg = Fp8GemmConfig{128, 1, 1};
    expect_rule(fp8_gemm_add(da, db, 1.0f, nullptr, dd, nullptr, &cfg), "config: stages");
    cfg = Fp8GemmConfig{128, 2, 0};
    expect_rule(fp8_gemm_add(da, db, 1.0f, nullptr, dd, nullptr, &cfg), "config: raster_rows");
    cfg = Fp8GemmConfig{128, 2, 1, 1, 3};
    expect_rule(fp8_gemm_add(da, db, 1.0f, nullptr, dd, nullptr, &cfg), "config: consumer_groups");
    cfg = Fp8GemmConfig{64, 14, 1, 1, 1};  // one stage past 64-row tiles' deepest ring
    expect_rule(fp8_gemm_add(da, db, 1.0f, nullptr, dd, nullptr, &cfg), "shared memory");
    // Device scales in pageable host memory would fault in the kernel.
    static const float host_scale = 2.0f;
    expect_rule(fp8_gemm_add(da, db, Fp8DeviceScales{nullptr, &host_scale}, nullptr, dd, nullptr),
                "scales.b: must point to memory the GPU can read");
  }
}

}  // namespace
}  // namespace kestrel
