// Benchmark support: reads a buffer and nothing else. Two uses:
// - evicting L2 before a timed call by reading a buffer of twice its size. A
//   read (unlike a memset) leaves L2 holding clean lines, so the timed call
//   that follows does not pay for writing back the flush's dirty data;
// - the "read" peer of read-mostly ops (the GEMV): what a kernel that only
//   reads the op's bytes takes, launch included, on the same GPU.
#pragma once
#include <cuda/std/cstdint>

#include "common/ptx.cuh"

namespace kestrel {

// Grid-stride over n16 16-byte words, four loads in flight per thread.
__global__ void __launch_bounds__(512) read_bytes_kernel(const uint4* __restrict__ p,
                                                         unsigned long long n16,
                                                         unsigned* __restrict__ sink) {
  const unsigned long long stride = 512ull * gridDim.x;
  unsigned long long i = blockIdx.x * 512ull + threadIdx.x;
  unsigned acc = 0;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = ptx::ld_stream_v4(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n16; i += stride) {
    const uint4 v = ptx::ld_stream_v4(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // the buffers are zero: never taken, keeps the loads
}

}  // namespace kestrel
