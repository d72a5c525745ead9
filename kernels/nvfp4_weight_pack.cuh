// NVFP4 weights -> the GEMM's packed weight order (common/nvfp4_weight_order.cuh).
// One thread per 16 bytes of output, in output order: the stores are
// contiguous; a stage's value bytes are read by four neighbouring threads
// per row, its scale codes by one thread per two rows. A one-time conversion
// of a weight matrix, so nothing here is tuned beyond 16-byte stores.
#pragma once
#include <cuda/std/cstdint>

#include "common/fp4_decode.cuh"
#include "common/nvfp4_operand.cuh"
#include "common/nvfp4_scale_layout.cuh"
#include "common/nvfp4_weight_order.cuh"
#include "common/ptx.cuh"

namespace kestrel {

struct WeightPackParams {  // mirrored in src/ops/weight_pack.cpp
  Nvfp4Operand w;          // [L][n][k]: 16-byte aligned value rows and batches
  long long n, k, batches;
  uint8_t* out;  // packed_weight_batch_bytes(n, k) * batches bytes
};

template <bool BLOCKED>
__global__ void __launch_bounds__(256) nvfp4_weight_pack_kernel(const WeightPackParams p) {
  constexpr int kValueChunks = kPackedValueBytes / 16;  // 4 per row
  constexpr int kChunks = kPackedBlockStageBytes / 16;  // then 2 rows of scales each
  constexpr int kRowsPerScaleChunk = 16 / kPackedStageBlocks;
  const long long stages = packed_weight_stages(p.k), blocks = packed_weight_blocks(p.n);
  const long long kblocks = p.k / 16;
  const long long chunks = p.batches * blocks * stages * kChunks;
  for (long long q = blockIdx.x * 256ll + threadIdx.x; q < chunks; q += 256ll * gridDim.x) {
    const long long block_stage = q / kChunks;
    const int c = int(q % kChunks);
    const long long kb = block_stage % stages, blk = block_stage / stages % blocks;
    const int l = int(block_stage / stages / blocks);
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (c < kValueChunks) {
      const long long row = blk * kPackedRows + c / (kPackedStageBytes / 16);
      const long long kbyte = kb * kPackedStageBytes + (c % (kPackedStageBytes / 16)) * 16;
      if (row < p.n && kbyte < p.k / 2) {
        v = ptx::ld_nc_v4(p.w.values + l * p.w.values_batch + row * p.w.values_row + kbyte);
        v = make_uint4(pack_fp4x8_bits(v.x), pack_fp4x8_bits(v.y), pack_fp4x8_bits(v.z),
                       pack_fp4x8_bits(v.w));
      }
    } else {
      uint32_t words[4] = {0u, 0u, 0u, 0u};
      for (int i = 0; i < 16; ++i) {
        const long long row =
            blk * kPackedRows + (c - kValueChunks) * kRowsPerScaleChunk + i / kPackedStageBlocks;
        const long long kblock = kb * kPackedStageBlocks + i % kPackedStageBlocks;
        if (row < p.n && kblock < kblocks)
          words[i / 4] |= uint32_t(p.w.scales[scale_offset<BLOCKED>(
                              p.w.scales_batch, p.w.scales_row, l, row, kblock, p.n, kblocks)])
                          << (8 * (i % 4));
      }
      v = make_uint4(words[0], words[1], words[2], words[3]);
    }
    ptx::st_global_v4(p.out + q * 16, v);
  }
}

}  // namespace kestrel
