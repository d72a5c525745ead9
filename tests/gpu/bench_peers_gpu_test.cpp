// The dual GEMM's peer tail (silu * mul after one GEMM on [B1; B2]) against
// float64: a peer that computed less than the op it stands for would flatter
// Kestrel's speed-ups. And the row-wise ops' stream peer: a peer that skipped
// words of its streams would understate the traffic floor.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

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

// (reads, writes, n16): one partial chunk, a chunk and a word, several chunks and a tail.
class StreamPeer : public ::testing::TestWithParam<std::tuple<int, int, int64_t>> {};

TEST_P(StreamPeer, WritesTheXorOfItsInputsToEveryWord) {
  KESTREL_REQUIRE_GPU();
  const auto [reads, writes, n16] = GetParam();
  std::mt19937 rng(uint32_t(reads * 7 + writes * 3 + n16));
  std::vector<uint32_t> in(size_t(reads * n16 * 4));
  for (auto& v : in) v = rng();
  DeviceBuffer din = DeviceBuffer::from(in), dout(size_t(std::max(writes, 1) * n16) * 16);
  dout.poison();
  ASSERT_TRUE(bench::launch_stream_bytes(nullptr, din.get(), dout.get(), n16, reads, writes).ok());
  const std::vector<uint32_t> got = dout.download<uint32_t>();
  for (int w = 0; w < writes; ++w)
    for (int64_t i = 0; i < n16 * 4; ++i) {
      uint32_t want = 0;
      for (int r = 0; r < reads; ++r) want ^= in[size_t(r * n16 * 4 + i)];
      ASSERT_EQ(got[size_t(w * n16 * 4 + i)], want) << "output " << w << " word " << i / 4;
    }
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamPeer,
                         ::testing::Values(std::make_tuple(1, 1, int64_t(1)),
                                           std::make_tuple(1, 1, int64_t(4097)),
                                           std::make_tuple(2, 1, int64_t(3 * 4096 + 5)),
                                           std::make_tuple(2, 2, int64_t(4095)),
                                           std::make_tuple(1, 0, int64_t(100))));

TEST(StreamPeerRules, RefusesBadStreamCounts) {
  KESTREL_REQUIRE_GPU();
  EXPECT_FALSE(bench::launch_stream_bytes(nullptr, nullptr, nullptr, 16, 3, 1).ok());
  EXPECT_FALSE(bench::launch_stream_bytes(nullptr, nullptr, nullptr, 16, 1, -1).ok());
  EXPECT_FALSE(bench::launch_stream_bytes(nullptr, nullptr, nullptr, 0, 1, 1).ok());
  bench::PeerLaunch peer;
  EXPECT_FALSE(bench::make_stream_peer(1024, 0, 1, 1, &peer).ok());
}

}  // namespace
}  // namespace kestrel
