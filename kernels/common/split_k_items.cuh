// The work of a split-K GEMV as items handed out at run time: row tiles
// (batch-major) times segments of `seg_chunks` consecutive K chunks.
//
// CTAs take items from an atomic counter, so an SM that streams faster takes
// more (a static equal share waits for the slowest SM). The segmentation is
// fixed by the shape, not by which CTA ran what: each item of a cut tile
// leaves its partial sums in its own slot, and whichever CTA finishes the
// tile's last item adds the slots in segment order. Results are therefore
// deterministic.
#pragma once
#include "common/host_device.cuh"

namespace kestrel {

struct SplitKItems {
  int tiles_m;     // row tiles per batch
  int chunks;      // K chunks per row
  int seg_chunks;  // chunks per item (the last segment of a row may be shorter)
  int segs;        // segments per tile: ceil(chunks / seg_chunks)

  struct Item {
    int tile;            // l * tiles_m + mt
    int l, mt;           // batch and row tile
    int seg;             // segment of the tile's K range
    int c_begin, c_end;  // chunks [c_begin, c_end)
  };

  KESTREL_HD static SplitKItems make(int tiles_m, int chunks, int seg_chunks) {
    return SplitKItems{tiles_m, chunks, seg_chunks, (chunks + seg_chunks - 1) / seg_chunks};
  }
  KESTREL_HD long long count(int batches) const { return (long long)batches * tiles_m * segs; }
  KESTREL_HD Item at(int item) const {
    Item it;
    it.tile = item / segs;
    it.seg = item - it.tile * segs;
    it.l = it.tile / tiles_m;
    it.mt = it.tile - it.l * tiles_m;
    it.c_begin = it.seg * seg_chunks;
    it.c_end = it.c_begin + seg_chunks < chunks ? it.c_begin + seg_chunks : chunks;
    return it;
  }
};

}  // namespace kestrel
