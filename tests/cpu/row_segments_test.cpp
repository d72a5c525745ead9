// The codec kernels' work split (kernels/common/row_segments.cuh), walked on
// the host exactly as the kernels walk it: every chunk of every row is taken
// once, the lanes of a pair hold the two halves of one scale block, and the
// constant-true predicates are only constant where nothing is out of range.
#include "common/row_segments.cuh"

#include <gtest/gtest.h>

#include <vector>

namespace kestrel {
namespace {

void check_split(int k, int rows) {
  const RowSegments seg = row_segments(k);
  ASSERT_EQ(seg.chunks, k / 8);
  std::vector<int> taken(size_t(rows) * size_t(seg.chunks), 0);
  const long long items = row_segment_items(k, rows);
  for (unsigned item = 0; item < items; ++item) {
    for (int lane = 0; lane < 32; ++lane) {
      const RowSegmentPos pos = row_segment_pos(seg, item, lane);
      const RowSegmentPos pair = row_segment_pos(seg, item, lane ^ 1);
      ASSERT_EQ(pos.row, pair.row) << "k " << k << " lane " << lane;
      ASSERT_EQ(pos.chunk / 2, pair.chunk / 2) << "k " << k << " lane " << lane;
      const bool row_ok = row_segment_row_ok(seg, lane / seg.lanes, pos.row, rows);
      ASSERT_EQ(row_ok, row_segment_row_ok(seg, (lane ^ 1) / seg.lanes, pair.row, rows));
      if (!row_ok) continue;
      ASSERT_LT(pos.row, rows) << "k " << k;
      for (int s = 0; s < seg.steps; ++s) {
        const int chunk = pos.chunk + s * seg.lanes;
        if (!row_segment_chunk_ok(seg, chunk)) continue;
        ASSERT_LT(chunk, seg.chunks) << "k " << k;
        ++taken[size_t(pos.row) * size_t(seg.chunks) + size_t(chunk)];
      }
    }
  }
  for (size_t i = 0; i < taken.size(); ++i)
    ASSERT_EQ(taken[i], 1) << "k " << k << " rows " << rows << " chunk " << i;
}

TEST(RowSegments, EveryChunkOnceAndPairsShareABlock) {
  for (int k : {16, 32, 48, 208, 256, 272, 1024, 1040, 4096, 4112, 7168, 8192})
    for (int rows : {1, 3, 77, 130}) check_split(k, rows);
}

}  // namespace
}  // namespace kestrel
