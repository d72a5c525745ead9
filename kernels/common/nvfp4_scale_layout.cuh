// Where the e4m3 scale of block `kb` (16 values of K) of row `row` of batch `l`
// lives, in either scale layout, for the kernels (kestrel::blocked_scale_offset
// in include/kestrel/nvfp4.h is the host API's copy; a CPU test ties the two):
// - linear: [L][rows][K/16] with the given batch and row strides (bytes);
// - blocked (cuBLAS / Blackwell): per batch, tiles of 128 rows x 4 blocks, each
//   512 contiguous bytes laid out [row % 32][row % 128 / 32][kb % 4]; tiles are
//   ordered by row tile, then K tile, and padded to whole tiles.
#pragma once
#include "common/host_device.cuh"

namespace kestrel {

KESTREL_HD long long blocked_scale_index(int l, long long row, long long kb, long long rows,
                                          long long kblocks) {
  const long long k_tiles = (kblocks + 3) / 4, row_tiles = (rows + 127) / 128;
  return (l * row_tiles * k_tiles + (row / 128) * k_tiles + kb / 4) * 512 + (row % 32) * 16 +
         ((row % 128) / 32) * 4 + kb % 4;
}

template <bool BLOCKED>
KESTREL_HD long long scale_offset(long long batch_stride, long long row_stride, int l,
                                  long long row, long long kb, long long rows, long long kblocks) {
  if constexpr (BLOCKED) {
    return blocked_scale_index(l, row, kb, rows, kblocks);
  } else {
    return l * batch_stride + row * row_stride + kb;
  }
}

}  // namespace kestrel
