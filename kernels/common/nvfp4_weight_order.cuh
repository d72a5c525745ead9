// The GEMM's optional packed weight order (kernels/nvfp4_weight_pack.cuh):
// the weights of batch l, [N][K/2] bytes row-major, rearranged as
// [w_blocks][k_stages][64 rows][64 bytes] so that one 64-row block's stage
// of 128 K values is 4 KB of contiguous memory (one bulk copy instead of 64
// row pieces), rows past N and bytes past K/2 zero, each byte's bits in
// pack_fp4x8_bits order (common/fp4_decode.cuh). w_blocks is even: a plain
// GEMM tile is two blocks, a dual GEMM tile one block of each weight.
#pragma once
#include "common/host_device.cuh"

namespace kestrel {

constexpr int kPackedRows = 64;        // rows per block
constexpr int kPackedStageBytes = 64;  // bytes of a row per stage (128 values)
constexpr int kPackedBlockStageBytes = kPackedRows * kPackedStageBytes;

KESTREL_HD long long packed_weight_blocks(long long n) { return 2 * ((n + 127) / 128); }
KESTREL_HD long long packed_weight_stages(long long k) { return (k + 127) / 128; }
KESTREL_HD long long packed_weight_batch_bytes(long long n, long long k) {
  return packed_weight_blocks(n) * packed_weight_stages(k) * kPackedBlockStageBytes;
}
// Where byte `kbyte` of row `row` of batch l lands.
KESTREL_HD long long packed_weight_offset(long long n, long long k, long long l, long long row,
                                          long long kbyte) {
  return l * packed_weight_batch_bytes(n, k) +
         ((row / kPackedRows) * packed_weight_stages(k) + kbyte / kPackedStageBytes) *
             kPackedBlockStageBytes +
         (row % kPackedRows) * kPackedStageBytes + kbyte % kPackedStageBytes;
}

}  // namespace kestrel
