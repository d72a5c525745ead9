// Work split of the NVFP4 codec kernels over [rows][K] (shared with the host,
// which sizes the grid from it).
//
// A row is K / 8 chunks of 8 values (16 bytes of a 2-byte input, 4 bytes of
// codes, half a scale block). A warp's lanes take consecutive chunks of one
// row, `steps` times, so every warp load and store is contiguous, the two
// halves of a scale block sit in a lane pair, and the row and batch address
// math happens once per item rather than once per chunk. Rows shorter than a
// warp pack several rows into one item.
#pragma once
#include "common/host_device.cuh"

namespace kestrel {

struct RowSegments {
  int chunks;          // 8-value chunks per row
  int lanes;           // lanes per row: 32, or every chunk of a shorter row
  int rows_per_item;   // rows one warp item covers
  int steps;           // chunks per lane per item
  int items_per_rows;  // items per group of rows_per_item rows
};

KESTREL_HD constexpr RowSegments row_segments(int k) {
  const int chunks = k / 8;
  const int lanes = chunks < 32 ? chunks : 32;
  // 4 chunks per lane keep 64 bytes of input in flight per lane.
  const int steps = chunks <= 32 ? 1 : (chunks < 128 ? (chunks + 31) / 32 : 4);
  return {chunks, lanes, 32 / lanes, steps, (chunks + lanes * steps - 1) / (lanes * steps)};
}

// Row and first chunk of `lane` in warp item `item` (its step s takes chunk
// + s * lanes).
struct RowSegmentPos {
  int row, chunk;
};
KESTREL_HD constexpr RowSegmentPos row_segment_pos(RowSegments seg, unsigned item, int lane) {
  return {int(item / unsigned(seg.items_per_rows)) * seg.rows_per_item + lane / seg.lanes,
          int(item % unsigned(seg.items_per_rows)) * seg.lanes * seg.steps + lane % seg.lanes};
}

// Whether a lane's row / chunk exists; constant true where the split is exact
// (full-warp rows that a whole number of items covers), so that the common
// shapes carry no predicates.
KESTREL_HD constexpr bool row_segment_row_ok(RowSegments seg, int sub_row, int row, int rows) {
  return seg.rows_per_item == 1 && seg.lanes == 32 ? true
                                                   : sub_row < seg.rows_per_item && row < rows;
}
KESTREL_HD constexpr bool row_segment_chunk_ok(RowSegments seg, int chunk) {
  return seg.chunks % (seg.lanes * seg.steps) == 0 ? true : chunk < seg.chunks;
}

// Warp items of one batch of `rows` rows.
KESTREL_HD constexpr long long row_segment_items(int k, long long rows) {
  return (rows + row_segments(k).rows_per_item - 1) / row_segments(k).rows_per_item *
         row_segments(k).items_per_rows;
}

}  // namespace kestrel
