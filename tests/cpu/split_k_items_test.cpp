// The split-K items of the wgmma GEMV (kernels/common/split_k_items.cuh):
// every (batch, row tile, chunk) belongs to exactly one item, items run
// tile-major, and a tile's items are consecutive and numbered by segment
// (the summing CTA reads slots tile * segs + 0 .. segs - 1 in that order).
#include <gtest/gtest.h>

#include <vector>

#include "common/split_k_items.cuh"

namespace kestrel {
namespace {

TEST(SplitKItems, ItemsCoverEveryChunkOnceInTileOrder) {
  for (int tiles_m : {1, 3, 56})
    for (int chunks : {1, 4, 14, 32, 128})
      for (int seg_chunks : {1, 2, 3, 4, 8, 200})
        for (int batches : {1, 3, 8}) {
          const SplitKItems s = SplitKItems::make(tiles_m, chunks, seg_chunks);
          ASSERT_GE(s.segs, 1);
          ASSERT_GE(s.segs * seg_chunks, chunks);
          ASSERT_LT((s.segs - 1) * seg_chunks, chunks);
          std::vector<int> seen(size_t(batches) * tiles_m * chunks, 0);
          for (int i = 0; i < int(s.count(batches)); ++i) {
            const SplitKItems::Item it = s.at(i);
            ASSERT_EQ(it.tile, it.l * tiles_m + it.mt);
            ASSERT_EQ(i, it.tile * s.segs + it.seg);
            ASSERT_LT(it.l, batches);
            ASSERT_LT(it.c_begin, it.c_end);
            ASSERT_LE(it.c_end, chunks);
            for (int c = it.c_begin; c < it.c_end; ++c)
              ++seen[(size_t(it.l) * tiles_m + it.mt) * chunks + c];
          }
          for (size_t u = 0; u < seen.size(); ++u)
            ASSERT_EQ(seen[u], 1) << tiles_m << " " << chunks << " " << seg_chunks << " unit " << u;
        }
}

}  // namespace
}  // namespace kestrel
