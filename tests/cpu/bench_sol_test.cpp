// The speed-of-light model and the ceilings it divides by.
#include <gtest/gtest.h>

#include "bench/ceilings.h"
#include "bench/sol.h"

namespace kestrel::bench {
namespace {

Ceilings h100_measured() {
  Ceilings c;
  c.gpu = "NVIDIA H100 80GB HBM3";
  c.copy_tbps = {3.0, "measured"};
  c.bf16_tflops = {775, "measured"};
  c.fp8_tflops = {1393, "measured"};
  return c;
}

TEST(BenchSol, MemoryBoundOpIsBytesOverBandwidth) {
  // quantize 8192 x 8192 bf16: 128 MiB read, 32 MiB values + 4 MiB scales written.
  const double n = 8192.0 * 8192.0;
  const Work w{n * 2 + n / 2 + n / 16, 0, MmaPath::kNone};
  EXPECT_NEAR(sol_us(w, h100_measured()), w.bytes / 3.0e12 * 1e6, 1e-9);
  EXPECT_NEAR(sol_us(w, h100_measured()), 57.32, 0.01);
}

TEST(BenchSol, ComputeBoundGemmUsesItsPathsRate) {
  const double n = 8192;
  Work w{3 * n * n, 2 * n * n * n, MmaPath::kBf16};
  EXPECT_NEAR(sol_us(w, h100_measured()), 2 * n * n * n / 775e12 * 1e6, 1e-6);  // ~1418.6 us
  w.path = MmaPath::kFp8;
  EXPECT_NEAR(sol_us(w, h100_measured()), 2 * n * n * n / 1393e12 * 1e6, 1e-6);
  w.path = MmaPath::kNone;  // no tensor-core path: only the bytes count
  EXPECT_NEAR(sol_us(w, h100_measured()), 3 * n * n / 3.0e12 * 1e6, 1e-9);
}

TEST(BenchSol, TheLargerTermWins) {
  // GEMV M7168 K16384: 58.7 MB of NVFP4 weights, 0.23 GFLOP -> memory-bound.
  const double m = 7168, k = 16384;
  const Work w{m * k / 2 + m * k / 16, 2 * m * k, MmaPath::kBf16};
  const double mem = w.bytes / 3.0e12 * 1e6, mma = w.flops / 775e12 * 1e6;
  ASSERT_GT(mem, mma);
  EXPECT_DOUBLE_EQ(sol_us(w, h100_measured()), mem);
}

TEST(BenchSol, UnknownCeilingsDropTheirTerm) {
  Ceilings c = h100_measured();
  c.bf16_tflops = {0, "unknown"};
  const Work w{1e9, 1e15, MmaPath::kBf16};
  EXPECT_NEAR(sol_us(w, c), 1e9 / 3.0e12 * 1e6, 1e-9);
  c.copy_tbps = {0, "unknown"};
  EXPECT_EQ(sol_us(w, c), 0);
}

TEST(BenchSol, Fraction) {
  EXPECT_DOUBLE_EQ(sol_fraction(50, 100), 0.5);
  EXPECT_DOUBLE_EQ(sol_fraction(0, 100), 0);
  EXPECT_DOUBLE_EQ(sol_fraction(50, 0), 0);
}

TEST(BenchCeilings, DatasheetValuesByGpuName) {
  const Ceilings h100 = datasheet_ceilings("NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(h100.copy_tbps.value, 3.35);
  EXPECT_DOUBLE_EQ(h100.bf16_tflops.value, 989);
  EXPECT_DOUBLE_EQ(h100.fp8_tflops.value, 1979);
  EXPECT_EQ(h100.copy_tbps.source, "datasheet");
  const Ceilings h200 = datasheet_ceilings("NVIDIA H200");
  EXPECT_DOUBLE_EQ(h200.copy_tbps.value, 4.8);
  EXPECT_DOUBLE_EQ(h200.bf16_tflops.value, 989);
  EXPECT_DOUBLE_EQ(datasheet_ceilings("NVIDIA H100 PCIe").copy_tbps.value, 2.0);
  const Ceilings other = datasheet_ceilings("NVIDIA GeForce RTX 4090");
  EXPECT_EQ(other.copy_tbps.value, 0);
  EXPECT_EQ(other.fp8_tflops.source, "unknown");
}

TEST(BenchCeilings, JsonRoundTrip) {
  Ceilings c = h100_measured();
  c.measured_at = "2026-11-22T10:00:00Z";
  c.note = "fp8 GEMM not measured: ...";
  c.fp8_tflops = {1979, "datasheet"};
  Ceilings back;
  ASSERT_TRUE(ceilings_from_json(ceilings_to_json(c), &back).ok());
  EXPECT_EQ(back.gpu, c.gpu);
  EXPECT_DOUBLE_EQ(back.copy_tbps.value, 3.0);
  EXPECT_EQ(back.fp8_tflops.source, "datasheet");
  EXPECT_EQ(back.measured_at, c.measured_at);
  EXPECT_EQ(back.note, c.note);
}

TEST(BenchCeilings, MalformedJsonIsRejected) {
  Ceilings out;
  EXPECT_FALSE(ceilings_from_json(nlohmann::json::array(), &out).ok());
  EXPECT_FALSE(ceilings_from_json({{"copy_tbps", {{"value", "fast"}}}}, &out).ok());
}

}  // namespace
}  // namespace kestrel::bench
