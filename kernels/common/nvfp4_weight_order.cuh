// The GEMM's optional packed weight order (kernels/nvfp4_weight_pack.cuh):
// the weights of batch l, values [N][K/2] bytes row-major and their e4m3
// block scales (either layout), rearranged as
// [w_blocks][k_stages][64 rows x 64 value bytes | 64 rows x 8 scale codes]
// so that one 64-row block's stage of 128 K values, with its scale codes, is
// 4608 contiguous bytes (one bulk copy instead of 64 row pieces and the
// consumers' global scale loads). Rows past N and K past the row are zero;
// each value byte's bits are in pack_fp4x8_bits order (common/fp4_decode.cuh).
// w_blocks is even: a plain GEMM tile is two blocks, a dual GEMM tile one
// block of each weight.
#pragma once
#include "common/host_device.cuh"

namespace kestrel {

constexpr int kPackedRows = 64;        // rows per block
constexpr int kPackedStageBytes = 64;  // value bytes of a row per stage (128 values)
constexpr int kPackedStageBlocks = 8;  // scale codes of a row per stage
constexpr int kPackedValueBytes = kPackedRows * kPackedStageBytes;   // 4096
constexpr int kPackedScaleBytes = kPackedRows * kPackedStageBlocks;  // 512, after the values
constexpr int kPackedBlockStageBytes = kPackedValueBytes + kPackedScaleBytes;

KESTREL_HD long long packed_weight_blocks(long long n) { return 2 * ((n + 127) / 128); }
KESTREL_HD long long packed_weight_stages(long long k) { return (k + 127) / 128; }
KESTREL_HD long long packed_weight_batch_bytes(long long n, long long k) {
  return packed_weight_blocks(n) * packed_weight_stages(k) * kPackedBlockStageBytes;
}
KESTREL_HD long long packed_block_stage(long long n, long long k, long long l, long long row,
                                        long long stage) {
  return l * packed_weight_batch_bytes(n, k) +
         ((row / kPackedRows) * packed_weight_stages(k) + stage) * kPackedBlockStageBytes;
}
// Where value byte `kbyte` of row `row` of batch l lands.
KESTREL_HD long long packed_weight_offset(long long n, long long k, long long l, long long row,
                                          long long kbyte) {
  return packed_block_stage(n, k, l, row, kbyte / kPackedStageBytes) +
         (row % kPackedRows) * kPackedStageBytes + kbyte % kPackedStageBytes;
}
// Where the scale code of 16-value block `kblock` of row `row` lands.
KESTREL_HD long long packed_scale_offset(long long n, long long k, long long l, long long row,
                                         long long kblock) {
  return packed_block_stage(n, k, l, row, kblock / kPackedStageBlocks) + kPackedValueBytes +
         (row % kPackedRows) * kPackedStageBlocks + kblock % kPackedStageBlocks;
}

}  // namespace kestrel
