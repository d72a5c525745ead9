// NVFP4 weights -> the GEMM's packed weight order (common/nvfp4_weight_order.cuh).
// One thread per 16 bytes of output, in output order: the stores are
// contiguous, and each row's 64 bytes of a stage are read by four
// neighbouring threads. A one-time conversion of a weight matrix, so nothing
// here is tuned beyond 16-byte accesses.
#pragma once
#include <cuda/std/cstdint>

#include "common/fp4_decode.cuh"
#include "common/nvfp4_weight_order.cuh"
#include "common/ptx.cuh"

namespace kestrel {

// w: [L][n][k/2] bytes with 16-byte aligned rows and batches (strides in
// bytes), k a multiple of 32; out: packed_weight_batch_bytes(n, k) * L bytes.
__global__ void __launch_bounds__(256)
    nvfp4_weight_pack_kernel(const uint8_t* __restrict__ w, long long w_batch, long long w_row,
                             long long n, long long k, long long batches,
                             uint8_t* __restrict__ out) {
  constexpr int kChunksPerRow = kPackedStageBytes / 16;
  constexpr int kChunksPerBlockStage = kPackedBlockStageBytes / 16;
  const long long stages = packed_weight_stages(k), blocks = packed_weight_blocks(n);
  const long long chunks = batches * blocks * stages * kChunksPerBlockStage;
  for (long long q = blockIdx.x * 256ll + threadIdx.x; q < chunks; q += 256ll * gridDim.x) {
    const long long block_stage = q / kChunksPerBlockStage;
    const long long kb = block_stage % stages, blk = block_stage / stages % blocks;
    const long long l = block_stage / stages / blocks;
    const long long row = blk * kPackedRows + q % kChunksPerBlockStage / kChunksPerRow;
    const long long kbyte = kb * kPackedStageBytes + (q % kChunksPerRow) * 16;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (row < n && kbyte < k / 2) {
      v = ptx::ld_nc_v4(w + l * w_batch + row * w_row + kbyte);
      v = make_uint4(pack_fp4x8_bits(v.x), pack_fp4x8_bits(v.y), pack_fp4x8_bits(v.z),
                     pack_fp4x8_bits(v.w));
    }
    ptx::st_global_v4(out + q * 16, v);
  }
}

}  // namespace kestrel
