// The stream-K split of the wgmma GEMV (kernels/common/stream_k.cuh): ranges
// tile the work, owner() inverts begin(), and the partial slots a cut tile's
// summing CTA reads are exactly the ones its CTAs wrote (each CTA writing its
// first segment to slot 0 and a later one to slot 1, never one slot twice).
#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "common/stream_k.cuh"

namespace kestrel {
namespace {

TEST(StreamK, RangesTileTheWorkAndOwnerInvertsBegin) {
  for (long long units : {1LL, 7LL, 132LL, 1000LL, 1792LL, 100003LL})
    for (int ctas : {1, 2, 7, 132, 264, 1000}) {
      if (ctas > units) continue;
      const StreamK s{units, ctas};
      ASSERT_EQ(s.begin(0), 0);
      ASSERT_EQ(s.begin(ctas), units);
      for (int c = 0; c < ctas; ++c) {
        const long long n = s.begin(c + 1) - s.begin(c);
        ASSERT_TRUE(n == units / ctas || n == units / ctas + 1) << units << "/" << ctas;
      }
      for (long long u = 0; u < units; u += 1 + units / 5000) {
        const int c = s.owner(u);
        ASSERT_LE(s.begin(c), u);
        ASSERT_LT(u, s.begin(c + 1)) << units << "/" << ctas << " unit " << u;
      }
    }
}

TEST(StreamK, CutTilesReadTheSlotsTheirCtasWrote) {
  for (long long tiles : {1LL, 3LL, 56LL, 256LL})
    for (int chunks : {1, 4, 14, 32})
      for (int ctas : {1, 5, 132, 264}) {
        const long long units = tiles * chunks;
        if (ctas > units) continue;
        const StreamK s{units, ctas};
        // What the CTAs write: per cut (tile) segment, the CTA and its slot.
        std::map<long long, std::vector<std::pair<int, int>>> written;
        for (int c = 0; c < ctas; ++c) {
          int slots_used = 0;
          bool first = true;
          for (long long u = s.begin(c); u < s.begin(c + 1);) {
            const long long tile = u / chunks, end = std::min(s.begin(c + 1), (tile + 1) * chunks);
            const bool whole = u == tile * chunks && end == (tile + 1) * chunks;
            if (!whole) {
              const int slot = first ? 0 : 1;
              ASSERT_FALSE(slots_used & (1 << slot)) << "CTA " << c << " rewrites slot " << slot;
              slots_used |= 1 << slot;
              written[tile].push_back({c, slot});
            }
            first = false;
            u = end;
          }
        }
        // What the last CTA of each cut tile reads.
        for (long long tile = 0; tile < tiles; ++tile) {
          const long long u0 = tile * chunks;
          const int c_first = s.owner(u0), count = s.owner(u0 + chunks - 1) - c_first + 1;
          std::vector<std::pair<int, int>> read;
          if (count > 1)
            for (int i = 0; i < count; ++i)
              read.push_back({c_first + i, i == 0 ? s.slot(c_first, u0) : 0});
          EXPECT_EQ(read, written[tile])
              << tiles << " tiles x " << chunks << " chunks, " << ctas << " CTAs, tile " << tile;
        }
      }
}

}  // namespace
}  // namespace kestrel
