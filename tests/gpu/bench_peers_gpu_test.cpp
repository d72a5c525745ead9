// The dual GEMM's peer tail (silu * mul after one GEMM on [B1; B2]) against
// float64: a peer that computed less than the op it stands for would flatter
// Kestrel's speed-ups.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "bench/peers.h"
#include "device_buffer.h"
#include "gpu_test.h"
#include "reference/binary16.h"

namespace kestrel {
namespace {

using ref::bf16_bits;
using ref::bf16_value;
using testing::DeviceBuffer;

// n % 8 == 0 takes the 16-byte path, other n the per-element one.
class SiluMulPeer : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(SiluMulPeer, MatchesFloat64) {
  KESTREL_REQUIRE_GPU();
  const auto [rows, n] = GetParam();
  std::mt19937 rng(uint32_t(rows * 131 + n));
  std::normal_distribution<double> dist(0.0, 3.0);
  std::vector<uint16_t> h(size_t(rows * 2 * n));
  for (auto& v : h) v = bf16_bits(dist(rng));
  DeviceBuffer dh = DeviceBuffer::from(h), dout(size_t(rows * n) * 2);
  dout.poison();
  ASSERT_TRUE(bench::launch_silu_mul(nullptr, dh.get(), dout.get(), rows, n).ok());
  const std::vector<uint16_t> got = dout.download<uint16_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const double g = bf16_value(h[size_t(r * 2 * n + c)]);
      const double u = bf16_value(h[size_t(r * 2 * n + n + c)]);
      const double want = g / (1.0 + std::exp(-g)) * u;
      const double v = bf16_value(got[size_t(r * n + c)]);
      // One bf16 rounding (2^-9 relative) of an fp32 result, __expf included.
      ASSERT_NEAR(v, want, std::abs(want) * 4.0e-3 + 1e-30)
          << "row " << r << " col " << c << " g " << g << " u " << u;
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SiluMulPeer,
                         ::testing::Values(std::make_pair(int64_t(1), int64_t(8)),
                                           std::make_pair(int64_t(3), int64_t(13)),
                                           std::make_pair(int64_t(77), int64_t(4096)),
                                           std::make_pair(int64_t(5), int64_t(1000))));

TEST(SiluMulPeerRules, RefusesEmptyShapes) {
  KESTREL_REQUIRE_GPU();
  EXPECT_FALSE(bench::launch_silu_mul(nullptr, nullptr, nullptr, 0, 8).ok());
}

}  // namespace
}  // namespace kestrel
